/*
 * TestEnv: what every test of the library runs against, started once per
 * test JVM: a private PostgreSQL 15 cluster with the tierdb extension
 * preloaded (scripts/pg-cluster.sh, as the end-to-end tests start theirs),
 * one local SparkSession with a Hadoop Iceberg catalog, and per test a fresh
 * database with CREATE EXTENSION tierdb and its own lake directory, tiered
 * by the real daemon (the binary named by -Dtierdb.bin).  Everything is
 * stopped and removed when the JVM exits.
 *
 * For lakes on S3 it also starts S3Proxy (scripts/s3-server.sh, the jar
 * scripts/install-deps.sh fetches), puts the server's TIERDB_S3_* variables
 * in the cluster's and every daemon's environment, and configures the
 * session's S3A filesystem for s3:// paths the way docs/s3.md tells users to
 * (s3aSettings); newS3Database() gives a database whose lake is an s3://
 * prefix in the server's bucket.  If S3Proxy cannot start, only the tests
 * that ask for an S3 lake fail, with the reason.
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
    private static final Path S3_SERVER = REPO.resolve("scripts/s3-server.sh");
    private static TestEnv instance;

    final Path root;
    final int port;
    final Path tierdbBin;
    final SparkSession spark;
    /** The S3 server's TIERDB_S3_* variables (and TIERDB_S3_TEST_BUCKET); empty if it did not start. */
    final Map<String, String> s3Env;
    /** Why the S3 server did not start, or null. */
    final String s3Error;

    private TestEnv(Path root, int port, Path tierdbBin, SparkSession spark, Map<String, String> s3Env,
            String s3Error) {
        this.root = root;
        this.port = port;
        this.tierdbBin = tierdbBin;
        this.spark = spark;
        this.s3Env = s3Env;
        this.s3Error = s3Error;
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
            Runtime.getRuntime().addShutdownHook(new Thread(() -> stop(root)));
            Map<String, String> s3Env = Map.of();
            String s3Error = null;
            try {
                s3Env = startS3(root.resolve("s3"));
            } catch (IOException | IllegalStateException e) {
                s3Error = e.getMessage();
            }
            int port = startCluster(root.resolve("cluster"), s3Env);
            SparkSession.Builder builder = SparkSession.builder()
                    .master("local[2]")
                    .appName("tierdb-spark-tests")
                    .config("spark.ui.enabled", "false")
                    .config("spark.driver.host", "127.0.0.1")
                    .config("spark.driver.bindAddress", "127.0.0.1")
                    .config("spark.sql.shuffle.partitions", "2")
                    .config("spark.sql.session.timeZone", "UTC")
                    .config("spark.local.dir", root.resolve("spark-local").toString());
            if (!s3Env.isEmpty()) {
                for (Map.Entry<String, String> e : s3aSettings(s3Env).entrySet()) {
                    builder = builder.config(e.getKey(), e.getValue());
                }
            }
            SparkSession spark = builder.getOrCreate();
            spark.sparkContext().setLogLevel("WARN");
            // set at runtime, not on the builder, so spark.newSession() has no
            // Iceberg catalog: the test of the missing-catalog error uses one
            spark.conf().set("spark.sql.catalog.default_iceberg", "org.apache.iceberg.spark.SparkCatalog");
            spark.conf().set("spark.sql.catalog.default_iceberg.type", "hadoop");
            spark.conf().set("spark.sql.catalog.default_iceberg.warehouse", root.resolve("warehouse").toString());
            return new TestEnv(root, port, Paths.get(bin), spark, s3Env, s3Error);
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException("could not start the test environment: " + e, e);
        }
    }

    /**
     * The session settings that make s3:// (the daemon's lake locations) and s3a:// paths go through Hadoop's S3A
     * filesystem to one S3-compatible server with path-style addressing: what docs/s3.md gives users.
     */
    static Map<String, String> s3aSettings(Map<String, String> s3) {
        String endpoint = s3.get("TIERDB_S3_ENDPOINT");
        Map<String, String> m = new HashMap<>();
        m.put("spark.hadoop.fs.s3.impl", "org.apache.hadoop.fs.s3a.S3AFileSystem");
        m.put("spark.hadoop.fs.s3a.endpoint", endpoint.replaceFirst("^https?://", ""));
        m.put("spark.hadoop.fs.s3a.endpoint.region", s3.getOrDefault("TIERDB_S3_REGION", "us-east-1"));
        m.put("spark.hadoop.fs.s3a.path.style.access", "true");
        m.put("spark.hadoop.fs.s3a.connection.ssl.enabled", String.valueOf(endpoint.startsWith("https://")));
        m.put("spark.hadoop.fs.s3a.aws.credentials.provider", "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider");
        m.put("spark.hadoop.fs.s3a.access.key", s3.get("TIERDB_S3_ACCESS_KEY"));
        m.put("spark.hadoop.fs.s3a.secret.key", s3.get("TIERDB_S3_SECRET_KEY"));
        return m;
    }

    /** Starts S3Proxy in dir; its variables from dir/env. */
    private static Map<String, String> startS3(Path dir) throws IOException {
        ProcessResult r;
        try {
            r = run(List.of(S3_SERVER.toString(), "start", dir.toString()), Map.of());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting S3Proxy", e);
        }
        if (r.exitCode != 0) {
            throw new IllegalStateException("could not start S3Proxy (" + S3_SERVER + " start " + dir
                    + "; is its jar fetched? run scripts/install-deps.sh):\n" + r.stderr);
        }
        Map<String, String> env = new HashMap<>();
        for (String line : Files.readAllLines(dir.resolve("env"), StandardCharsets.UTF_8)) {
            String assignment = line.replaceFirst("^export ", "");
            int eq = assignment.indexOf('=');
            if (eq > 0) {
                env.put(assignment.substring(0, eq), assignment.substring(eq + 1));
            }
        }
        return Map.copyOf(env);
    }

    private static int startCluster(Path dir, Map<String, String> env) throws IOException, InterruptedException {
        List<String> failures = new ArrayList<>();
        for (int attempt = 0; attempt < 3; attempt++) {
            int port = freePort();
            ProcessResult r = run(List.of(PG_CLUSTER.toString(), "start", dir.toString(), String.valueOf(port),
                    "-c", "shared_preload_libraries=tierdb"), env);
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
        if (Files.exists(root.resolve("s3").resolve("env"))) {
            try {
                run(List.of(S3_SERVER.toString(), "stop", root.resolve("s3").toString()), Map.of());
            } catch (IOException | InterruptedException e) {
                System.err.println("tierdb-spark tests: stopping S3Proxy failed: " + e);
            }
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
            Db db = new Db(this, name, lake, lake.toString());
            db.exec("CREATE EXTENSION tierdb");
            return db;
        } catch (SQLException | IOException e) {
            throw new IllegalStateException("could not create a test database: " + e, e);
        }
    }

    /** A fresh database with the extension whose lake is a fresh s3:// prefix in the S3 server's bucket. */
    Db newS3Database() {
        if (s3Error != null) {
            fail(s3Error);
        }
        String name = "t_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        String lake = "s3://" + s3Env.get("TIERDB_S3_TEST_BUCKET") + "/lake-" + name;
        try (Connection c = DriverManager.getConnection(jdbcUrl("postgres")); Statement st = c.createStatement()) {
            st.execute("CREATE DATABASE " + name);
            Db db = new Db(this, name, null, lake);
            db.exec("CREATE EXTENSION tierdb");
            return db;
        } catch (SQLException e) {
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
        /** The lake directory; null when the lake is on S3. */
        final Path lake;
        /** TIERDB_WAREHOUSE: the lake directory or an s3:// prefix. */
        final String warehouse;
        final String jdbcUrl;

        Db(TestEnv env, String name, Path lake, String warehouse) {
            this.env = env;
            this.name = name;
            this.lake = lake;
            this.warehouse = warehouse;
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
            e.putAll(env.s3Env);
            e.put("TIERDB_WAREHOUSE", warehouse);
            e.putAll(extraEnv);
            try {
                return run(command, e);
            } catch (IOException | InterruptedException ex) {
                throw new IllegalStateException("could not run " + command + ": " + ex, ex);
            }
        }

        void register(String table, String pk, String tierKey, String... options) {
            List<String> args = new java.util.ArrayList<>(List.of("register", "--table", table, "--pk", pk,
                    "--tier-key", tierKey));
            args.addAll(List.of(options));
            ProcessResult r = tierdb(Map.of(), args.toArray(new String[0]));
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
