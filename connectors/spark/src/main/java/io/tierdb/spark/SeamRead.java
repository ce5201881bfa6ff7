/*
 * SeamRead: one pinned read of a TierDB table.  Opening it committed a
 * tierdb.read_pins row with the captured (T, S) (SPEC §5 step 1), so the
 * daemon keeps the heap partitions and the lake snapshot the dataframe
 * scans until close() deletes the pin (step 6) or the pin expires.  Spark
 * is lazy: close only after the last action on the dataframe.
 */
package io.tierdb.spark;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.OptionalLong;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/** A pinned seam read; {@link #close()} releases the pin (idempotent). */
public final class SeamRead implements AutoCloseable {
    private final SeamOptions options;
    private final Catalog.Pin pin;
    private final Dataset<Row> dataframe;
    private boolean closed;

    SeamRead(SeamOptions options, Catalog.Pin pin, Dataset<Row> dataframe) {
        this.options = options;
        this.pin = pin;
        this.dataframe = dataframe;
    }

    /** The table's rows, columns in the table's order with the heap's types. */
    public Dataset<Row> dataframe() {
        return dataframe;
    }

    /** The pinned cut-line T in its canonical bigint form (SPEC §2); empty before the table has one. */
    public OptionalLong cutline() {
        return pin.cutline == null ? OptionalLong.empty() : OptionalLong.of(pin.cutline);
    }

    /** The pinned lake snapshot S; empty while nothing has reached the lake. */
    public OptionalLong snapshotId() {
        return pin.snapshotId == null ? OptionalLong.empty() : OptionalLong.of(pin.snapshotId);
    }

    /** The tierdb.read_pins row of this read. */
    public long pinId() {
        return pin.pinId;
    }

    /** The metadata file of snapshot S, as the cut-line stored it. */
    public String metadataLocation() {
        return pin.metadataLocation;
    }

    /** When the pin expires if the read is never closed. */
    public Instant expiresAt() {
        return pin.expiresAt.toInstant();
    }

    /** Deletes the pin; a second call, or one after the pin expired and was swept, does nothing. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        try (Connection conn = Catalog.connect(options)) {
            Catalog.endRead(conn, pin.pinId);
            conn.commit();
            closed = true;
        } catch (SQLException e) {
            throw Catalog.explain(e, options);
        }
    }
}
