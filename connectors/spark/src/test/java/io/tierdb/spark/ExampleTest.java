/*
 * ExampleTest: the example job under connectors/spark/examples compiles
 * against the library and runs against a tiered table, printing the
 * pinned state and the same row count as the extension's transparent read,
 * so the documented example cannot rot.
 */
package io.tierdb.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import org.junit.jupiter.api.Test;

class ExampleTest {
    private final TestEnv env = TestEnv.get();

    @Test
    void theExampleRunsAgainstATieredTable() throws Exception {
        TestEnv.Db db = env.newDatabase();
        Tables.createTiered(db, Tables.COMPOSITE);
        Tables.correct(db, Tables.COMPOSITE);

        Path out = Files.createTempDirectory(env.root, "example-");
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        int rc = javac.run(null, null, null, "-d", out.toString(), "-cp", System.getProperty("java.class.path"),
                Paths.get("examples/SeamExample.java").toString());
        assertEquals(0, rc, "javac of examples/SeamExample.java");

        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        PrintStream stdout = System.out;
        try (URLClassLoader loader = new URLClassLoader(new URL[] {out.toUri().toURL()}, getClass().getClassLoader())) {
            Method main = loader.loadClass("SeamExample").getMethod("main", String[].class);
            System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
            main.invoke(null, (Object) new String[] {db.jdbcUrl, "public.mk", db.lake.toString()});
        } finally {
            System.setOut(stdout);
        }
        String text = printed.toString(StandardCharsets.UTF_8);
        String count = db.transparentValue("SELECT count(*) FROM mk");
        String small = db.transparentValue("SELECT count(*) FROM mk WHERE id < 100");
        assertTrue(text.contains("pinned T=OptionalLong[" + db.value("SELECT tier_key_hi FROM tierdb.cutline") + "]"), text);
        assertTrue(text.contains("rows: " + count + "\n"), text);
        assertTrue(text.contains("rows with id < 100: " + small + "\n"), text);
        assertEquals("0", db.value("SELECT count(*) FROM tierdb.read_pins"));
    }
}
