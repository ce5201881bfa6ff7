/*
 * Compare: asserts that a dataframe holds exactly the rows of the
 * extension's transparent read of the same table (SPEC §7), read through
 * Spark's JDBC source so both sides have the same column types: the same
 * count, the same order-independent checksum over every column, and no row
 * in one that is not in the other (as multisets).
 */
package io.tierdb.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.xxhash64;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import java.util.Properties;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

final class Compare {
    private Compare() {
    }

    /** The extension's transparent read of the table, through Spark's JDBC source. */
    static Dataset<Row> transparentRead(TestEnv.Db db, String table) {
        Properties p = new Properties();
        p.setProperty("sessionInitStatement", "SET tierdb.transparent_reads = on");
        return db.env.spark.read().jdbc(db.jdbcUrl, table, p);
    }

    /** count(*) and sum(xxhash64(all columns)) of a dataframe. */
    static Row fingerprint(Dataset<Row> df) {
        Column[] all = Arrays.stream(df.columns()).map(c -> col(c)).toArray(Column[]::new);
        return df.agg(count(lit(1)), sum(xxhash64(all).cast("decimal(38,0)"))).first();
    }

    static void assertSameRows(Dataset<Row> expected, Dataset<Row> actual, String what) {
        assertEquals(Arrays.asList(expected.schema().fieldNames()), Arrays.asList(actual.schema().fieldNames()),
                what + ": column order");
        for (int i = 0; i < expected.schema().size(); i++) {
            assertEquals(expected.schema().fields()[i].dataType(), actual.schema().fields()[i].dataType(),
                    what + ": type of " + expected.schema().fields()[i].name());
        }
        Row e = fingerprint(expected);
        Row a = fingerprint(actual);
        assertEquals(e.getLong(0), a.getLong(0), what + ": row count");
        long missing = expected.exceptAll(actual).count();
        long extra = actual.exceptAll(expected).count();
        assertEquals(0, missing, what + ": rows of the transparent read missing from the dataframe, e.g. "
                + expected.exceptAll(actual).limit(3).collectAsList());
        assertEquals(0, extra, what + ": rows of the dataframe not in the transparent read, e.g. "
                + actual.exceptAll(expected).limit(3).collectAsList());
        assertEquals(e.get(1), a.get(1), what + ": checksum over all columns");
    }

    static void assertMatchesTransparentRead(TestEnv.Db db, String table, Dataset<Row> actual) {
        assertSameRows(transparentRead(db, table), actual, table);
    }
}
