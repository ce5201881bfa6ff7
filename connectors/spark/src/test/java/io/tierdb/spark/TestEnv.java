/*
 * TestEnv: what every test of the library runs against, started once per
 * test JVM: a private PostgreSQL 15 cluster with the tierdb extension
 * preloaded (scripts/pg-cluster.sh, as the end-to-end tests start theirs),
 * one local SparkSession with a Hadoop Iceberg catalog, and per test a fresh
 * database with CREATE EXTENSION tierdb and its own lake directory, tiered
 * by the real daemon (the binary named by -Dtierdb.bin).  Everything is
 * stopped and removed when the JVM exits.
 */
package io.tierdb.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.SparkSession;

final class TestEnv {
    private static final Path REPO = Paths.get(System.getProperty("user.dir")).resolve("../..").normalize();
    private static final Path PG_CLUSTER = REPO.resolve("scripts/pg-cluster.sh");
    private static TestEnv instance;

    final Path root;
    final int port;
    final Path tierdbBin;
    final SparkSession spark;

    private TestEnv(Path root, int port, Path tierdbBin, SparkSession spark) {
        this.root = root;
        this.port = port;
        this.tierdbBin = tierdbBin;
        this.spark = spark;
    }

    static synchronized TestEnv get() {
        if (instance == null) {
            instance = start();
        }
        return instance;
    }

    private static TestEnv start() {
        String bin = System.getProperty("tierdb.bin", "");
        if (bin.isEmpty() || !Files.isExecutable(Paths.get(bin))) {
            fail("-Dtierdb.bin must name the built tierdb binary (make test-spark passes build/tierdb), got '" + bin + "'");
        }
        try {
            Path root = Files.createTempDirectory("tierdb-spark-test-",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
            int port = startCluster(root.resolve("cluster"));
            Runtime.getRuntime().addShutdownHook(new Thread(() -> stop(root)));
            SparkSession spark = SparkSession.builder()
                    .master("local[2]")
                    .appName("tierdb-spark-tests")
                    .config("spark.ui.enabled", "false")
                    .config("spark.driver.host", "127.0.0.1")
                    .config("spark.driver.bindAddress", "127.0.0.1")
                    .config("spark.sql.shuffle.partitions", "2")
                    .config("spark.sql.session.timeZone", "UTC")
                    .config("spark.local.dir", root.resolve("spark-local").toString())
                    .getOrCreate();
            spark.sparkContext().setLogLevel("WARN");
            // set at runtime, not on the builder, so spark.newSession() has no
            // Iceberg catalog: the test of the missing-catalog error uses one
            spark.conf().set("spark.sql.catalog.default_iceberg", "org.apache.iceberg.spark.SparkCatalog");
            spark.conf().set("spark.sql.catalog.default_iceberg.type", "hadoop");
            spark.conf().set("spark.sql.catalog.default_iceberg.warehouse", root.resolve("warehouse").toString());
            return new TestEnv(root, port, Paths.get(bin), spark);
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException("could not start the test environment: " + e, e);
        }
    }

    private static int startCluster(Path dir) throws IOException, InterruptedException {
        List<String> failures = new ArrayList<>();
        for (int attempt = 0; attempt < 3; attempt++) {
            int port = freePort();
            ProcessResult r = run(List.of(PG_CLUSTER.toString(), "start", dir.toString(), String.valueOf(port),
                    "-c", "shared_preload_libraries=tierdb"), Map.of());
            if (r.exitCode == 0) {
                return port;
            }
            failures.add("port " + port + ": " + r.stderr);
        }
        throw new IllegalStateException("could not start the test cluster (is the extension installed? run "
                + "`make install-extension`):\n" + String.join("\n", failures));
    }

    private static void stop(Path root) {
        try {
            run(List.of(PG_CLUSTER.toString(), "stop", root.resolve("cluster").toString()), Map.of());
        } catch (IOException | InterruptedException e) {
            System.err.println("tierdb-spark tests: stopping the cluster failed: " + e);
        }
        try {
            // rm, not a walk: Spark's own shutdown hook empties spark-local at the same time
            ProcessResult r = run(List.of("rm", "-rf", root.toString()), Map.of());
            if (r.exitCode != 0) {
                System.err.println("tierdb-spark tests: could not remove " + root + ": " + r.stderr);
            }
        } catch (IOException | InterruptedException e) {
            System.err.println("tierdb-spark tests: could not remove " + root + ": " + e);
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    String jdbcUrl(String db) {
        return "jdbc:postgresql://127.0.0.1:" + port + "/" + db + "?user=postgres";
    }

    /** A fresh database with the extension, and its own lake directory. */
    Db newDatabase() {
        String name = "t_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        try (Connection c = DriverManager.getConnection(jdbcUrl("postgres")); Statement st = c.createStatement()) {
            st.execute("CREATE DATABASE " + name);
            Path lake = Files.createTempDirectory(root, "lake-",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
            Db db = new Db(this, name, lake);
            db.exec("CREATE EXTENSION tierdb");
            return db;
        } catch (SQLException | IOException e) {
            throw new IllegalStateException("could not create a test database: " + e, e);
        }
    }

    static final class ProcessResult {
        final int exitCode;
        final String stdout;
        final String stderr;

        ProcessResult(int exitCode, String stdout, String stderr) {
            this.exitCode = exitCode;
            this.stdout = stdout;
            this.stderr = stderr;
        }
    }

    static ProcessResult run(List<String> command, Map<String, String> env) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(command);
        Map<String, String> e = pb.environment();
        for (String foreign : List.of("TIERDB_PG_URL", "PGSERVICE", "PGPASSWORD", "PGOPTIONS", "PGHOSTADDR")) {
            e.remove(foreign);
        }
        e.putAll(env);
        Path out = Files.createTempFile("tierdb-proc", ".out");
        Path err = Files.createTempFile("tierdb-proc", ".err");
        try {
            pb.redirectOutput(out.toFile()).redirectError(err.toFile()).redirectInput(ProcessBuilder.Redirect.PIPE);
            Process p = pb.start();
            p.getOutputStream().close();
            if (!p.waitFor(300, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(command + " did not finish in 300 s");
            }
            return new ProcessResult(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
                    Files.readString(err, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    /** One test database: SQL over JDBC and the tierdb command against it. */
    static final class Db {
        final TestEnv env;
        final String name;
        final Path lake;
        final String jdbcUrl;

        Db(TestEnv env, String name, Path lake) {
            this.env = env;
            this.name = name;
            this.lake = lake;
            this.jdbcUrl = env.jdbcUrl(name);
        }

        private static final String HEAP_ALONE = "SET TimeZone = 'UTC'; SET tierdb.transparent_reads = off";

        Connection connect() throws SQLException {
            return DriverManager.getConnection(jdbcUrl);
        }

        /**
         * Runs SQL on the tables as stored: the heap alone, as the daemon and tests that set tables up see them
         * (the cluster runs with production defaults, transparent reads on; transparentValue reads through them).
         */
        void exec(String sql) {
            try (Connection c = connect(); Statement st = c.createStatement()) {
                st.execute(HEAP_ALONE);
                st.execute(sql);
            } catch (SQLException e) {
                throw new IllegalStateException("SQL failed: " + e.getMessage() + "\n" + sql, e);
            }
        }

        /** The rows of a query of the tables as stored (see exec), values in their Postgres text form. */
        List<List<String>> query(String sql) {
            try (Connection c = connect(); Statement st = c.createStatement()) {
                st.execute(HEAP_ALONE);
                List<List<String>> rows = new ArrayList<>();
                int last = sql.lastIndexOf("; ");
                if (last >= 0) {
                    st.execute(sql.substring(0, last));
                    sql = sql.substring(last + 2);
                }
                try (ResultSet rs = st.executeQuery(sql)) {
                    int n = rs.getMetaData().getColumnCount();
                    while (rs.next()) {
                        List<String> row = new ArrayList<>();
                        for (int i = 1; i <= n; i++) {
                            row.add(rs.getString(i));
                        }
                        rows.add(row);
                    }
                }
                return rows;
            } catch (SQLException e) {
                throw new IllegalStateException("SQL failed: " + e.getMessage() + "\n" + sql, e);
            }
        }

        /** The one value of a one-row, one-column query read through the extension's transparent reads. */
        String transparentValue(String sql) {
            return value("SET tierdb.transparent_reads = on; " + sql);
        }

        /** The one value of a one-row, one-column query. */
        String value(String sql) {
            List<List<String>> rows = query(sql);
            assertEquals(1, rows.size(), "rows of " + sql);
            return rows.get(0).get(0);
        }

        ProcessResult tierdb(Map<String, String> extraEnv, String... args) {
            List<String> command = new ArrayList<>();
            command.add(env.tierdbBin.toString());
            command.addAll(List.of(args));
            Map<String, String> e = new HashMap<>();
            e.put("PGHOST", "127.0.0.1");
            e.put("PGPORT", String.valueOf(env.port));
            e.put("PGUSER", "postgres");
            e.put("PGDATABASE", name);
            e.put("TIERDB_WAREHOUSE", lake.toString());
            e.putAll(extraEnv);
            try {
                return run(command, e);
            } catch (IOException | InterruptedException ex) {
                throw new IllegalStateException("could not run " + command + ": " + ex, ex);
            }
        }

        void register(String table, String pk, String tierKey) {
            ProcessResult r = tierdb(Map.of(), "register", "--table", table, "--pk", pk, "--tier-key", tierKey);
            assertEquals(0, r.exitCode, "tierdb register failed: " + r.stderr);
        }

        /** One daemon cycle with the given tiering lag; returns its log (stderr). */
        String runOnce(String lag) {
            ProcessResult r = tierdb(Map.of("TIERDB_TIERING_LAG", lag), "run", "--once");
            assertEquals(0, r.exitCode, "tierdb run --once failed: " + r.stderr);
            return r.stderr;
        }

        SeamOptions.Builder options(String table) {
            return SeamOptions.builder().jdbcUrl(jdbcUrl).table(table);
        }
    }
}
