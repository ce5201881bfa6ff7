/*
 * TierDBSpark: the library's entry points.  read() opens a pinned seam
 * read (SeamRead, SeamPlan); write() and delete() route a batch of rows or
 * keys to the heap or the delta (RoutedWrite), or on a direct table to the
 * heap and, as lake files the executors write, straight to the lake
 * (DirectWrite).  A mirrored table has no cut-line: it reads as its heap,
 * and writes append to it; with hybrid(true) the read splits at a point the
 * extension's capture chooses (tierdb.hybrid_read_begin): the mirror's
 * lake snapshot below it, the heap above.
 */
package io.tierdb.spark;

import java.sql.Connection;
import java.sql.SQLException;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/** Seam reads, routed writes and routed deletes of TierDB tables from Spark. */
public final class TierDBSpark {
    private TierDBSpark() {
    }

    /**
     * Pins the table's cut-line and lake snapshot and returns the read over
     * them.  Close it after the last action on its dataframe.
     */
    public static SeamRead read(SparkSession spark, SeamOptions options) {
        try (Connection conn = Catalog.connect(options)) {
            Registration reg = Catalog.registration(conn, options, false);
            reg.requireServed("read");
            Catalog.Pin pin = Catalog.beginRead(conn, reg, options.pinTtl());
            conn.commit();  // the pin must be visible to the daemon before anything is scanned
            // a table keeping a heap window reads two-tier at its stored cut-line: hybrid is ignored (the seed)
            if (options.hybrid() && reg.mirroredWholeHeap()) {
                // the pin above keeps the snapshot from expiry: it is at or above the pinned one
                pin = Catalog.beginHybrid(conn, reg, pin, options.hybridLag(), options.mirrorWait());
                conn.commit();
            }
            try {
                SeamRead read = new SeamRead(options, pin, new SeamPlan(spark, options, reg, pin).build(conn));
                conn.commit();
                return read;
            } catch (Exception e) {
                // also Spark's AnalysisException, which Scala throws unchecked:
                // release the pin of a read that never started
                conn.rollback();
                Catalog.endRead(conn, pin.pinId);
                conn.commit();
                throw e;
            }
        } catch (SQLException e) {
            throw Catalog.explain(e, options);
        }
    }

    /**
     * Writes the batch's rows where their tier keys say they live: at or above
     * the cut-line into the heap, below it as op = 0 delta upserts (on a
     * direct table: as one lake commit of files the executors write).  The
     * batch is checked first and written in one Postgres transaction from the
     * driver, so nothing is written if anything is wrong.
     */
    public static void write(Dataset<Row> batch, SeamOptions options) {
        RoutedWrite.write(batch, options);
    }

    /**
     * Deletes the rows of the given keys (the primary-key columns plus the
     * tier-key column): hot keys from the heap, cold keys as op = 1 delta
     * tombstones, in one Postgres transaction.
     */
    public static void delete(Dataset<Row> keys, SeamOptions options) {
        RoutedWrite.delete(keys, options);
    }
}
