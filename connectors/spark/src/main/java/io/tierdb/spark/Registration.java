/*
 * Registration: one TierDB table as the catalog describes it (SPEC §4):
 * its identity in Postgres, its merge key, tier key and mode, and the
 * cut-line state the read or write at hand works against.  Loaded by
 * Catalog; read by the seam read and the routed writes.
 */
package io.tierdb.spark;

import java.util.List;

final class Registration {
    /** tierdb.tables.table_id, the table's oid. */
    final long tableId;
    /** schema.table, each part quoted as SQL needs it. */
    final String qualifiedName;
    final List<String> pkCols;
    final String tierKeyCol;
    /** 'bigint', 'timestamptz', 'timestamp' or 'date' (SPEC §2). */
    final String tierKeyType;
    final String mode;
    final boolean keepHeap;
    /**
     * A mirrored table with --heap-retention: its heap keeps a window and
     * T rises as old partitions leave it, so it reads and writes as a
     * tiered table (docs/mirrored.md).
     */
    final boolean heapWindow;
    /** The cut-line T, canonical; null when the table has none yet. */
    final Long cutline;
    /** The retention line R, canonical; null when nothing was expired. */
    final Long retentionLine;

    Registration(long tableId, String qualifiedName, List<String> pkCols, String tierKeyCol, String tierKeyType,
                 String mode, boolean keepHeap, boolean heapWindow, Long cutline, Long retentionLine) {
        this.tableId = tableId;
        this.qualifiedName = qualifiedName;
        this.pkCols = List.copyOf(pkCols);
        this.tierKeyCol = tierKeyCol;
        this.tierKeyType = tierKeyType;
        this.mode = mode;
        this.keepHeap = keepHeap;
        this.heapWindow = heapWindow;
        this.cutline = cutline;
        this.retentionLine = retentionLine;
    }

    /** The pk columns and the tier key, without repeating a tier key that is part of the pk. */
    List<String> keyColumns() {
        if (pkCols.contains(tierKeyCol)) {
            return pkCols;
        }
        List<String> cols = new java.util.ArrayList<>(pkCols);
        cols.add(tierKeyCol);
        return cols;
    }

    /**
     * Every mode is served.  A direct table reads like a tiered one (the
     * lake at S is every row below T, its delta is empty) and its cold
     * writes go to the lake (DirectWrite, RoutedWrite); a mirrored table
     * has no cut-line, so it reads as its heap, which holds every row, and
     * every write is a heap append (SPEC §3), unless it keeps a heap window
     * (heapWindow): then it is served as a tiered table.
     */
    /** A mirrored table whose heap holds every row: hybrid reads split it; otherwise it reads as its heap. */
    boolean mirroredWholeHeap() {
        return "mirrored".equals(mode) && !heapWindow;
    }

    void requireServed(String operation) {
        if (!"tiered".equals(mode) && !"direct".equals(mode) && !"mirrored".equals(mode)) {
            throw new UnsupportedOperationException(String.format(
                    "tierdb-spark cannot %s %s: it is registered in mode '%s', which this library does not know",
                    operation, qualifiedName, mode));
        }
    }
}
