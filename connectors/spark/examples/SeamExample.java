/*
 * SeamExample: a small Spark job over a TierDB table.  It opens a pinned
 * seam read, prints what it pinned, counts the rows, shows a few of them
 * and the rows per tier-key value below and above the cut-line, then closes
 * the read.  Run it as connectors/spark/README.md says:
 *
 *   java <Spark's --add-opens flags> -cp <classpath> examples/SeamExample.java \
 *        jdbc:postgresql://127.0.0.1:5432/app?user=app public.events /path/to/warehouse
 */

import static org.apache.spark.sql.functions.col;

import io.tierdb.spark.SeamOptions;
import io.tierdb.spark.SeamRead;
import io.tierdb.spark.TierDBSpark;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

public class SeamExample {
    public static void main(String[] args) {
        if (args.length != 3) {
            System.err.println("usage: SeamExample <jdbc:postgresql://... URL> <schema.table> <lake warehouse>");
            System.exit(2);
        }
        SparkSession spark = SparkSession.builder()
                .master("local[2]")
                .appName("tierdb-spark example")
                .config("spark.ui.enabled", "false")
                .config("spark.sql.session.timeZone", "UTC")
                // the Iceberg runtime needs a catalog on the session even for the lake's path-based table
                .config("spark.sql.catalog.default_iceberg", "org.apache.iceberg.spark.SparkCatalog")
                .config("spark.sql.catalog.default_iceberg.type", "hadoop")
                .config("spark.sql.catalog.default_iceberg.warehouse", args[2])
                .getOrCreate();

        SeamOptions options = SeamOptions.builder()
                .jdbcUrl(args[0])
                .table(args[1])
                .build();

        // close only after the last action: Spark runs the scans lazily, under the pin
        try (SeamRead read = TierDBSpark.read(spark, options)) {
            System.out.printf("pinned T=%s S=%s (pin %d, expires %s)%n", read.cutline(), read.snapshotId(),
                    read.pinId(), read.expiresAt());
            Dataset<Row> rows = read.dataframe();
            System.out.println("rows: " + rows.count());
            rows.show(5, false);
            String firstColumn = rows.columns()[0];
            System.out.println("rows with " + firstColumn + " < 100: " + rows.filter(col(firstColumn).lt(100)).count());
        }
    }
}
