/* ------------------------------------------------------------ hybrid reads of mirrored tables */

/*
 * The pump's record of a published batch (cli/mirror.c, in the transaction
 * that publishes it) and the pruning of what no reader needs any more:
 * batches older than `history_seconds`, and their keys; never the newest
 * batch, nor the copy's row until a later batch is exact (the rows after
 * it are exact only once F has passed the copy's end).
 *
 * The stream names transactions by 32-bit ids; they are widened here to
 * full ids against the current one (they are recent: at most one epoch
 * behind), so hybrid readers compare them without wraparound.
 */
CREATE FUNCTION tierdb.mirror_record_batch(tbl_id bigint, op uuid, snapshot_id bigint, lsn bigint,
                                           xid_lo32 bigint, xid_hi32 bigint, tier_key_max bigint,
                                           truncated boolean, history_seconds integer)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    next_xid bigint := pg_snapshot_xmax(pg_current_snapshot())::text::bigint;
    lo bigint := next_xid - ((next_xid - xid_lo32) & 4294967295);
    hi bigint := next_xid - ((next_xid - xid_hi32) & 4294967295);
    prev_running bigint;
    prev_tier_key_max bigint;
    copy_end bigint;
BEGIN
    SELECT b.xid_hi_running, b.tier_key_max INTO prev_running, prev_tier_key_max
      FROM tierdb.mirror_batches b WHERE b.table_id = tbl_id ORDER BY b.seq DESC LIMIT 1;
    SELECT max(b.replicated_lsn) INTO copy_end
      FROM tierdb.mirror_batches b WHERE b.table_id = tbl_id AND b.xid_lo IS NULL AND NOT b.exact;
    INSERT INTO tierdb.mirror_batches (table_id, op_id, lake_snapshot_id, replicated_lsn, xid_lo, xid_hi,
                                       xid_hi_running, tier_key_max, exact, truncated)
    VALUES (tbl_id, op, snapshot_id, lsn, lo, hi,
            coalesce(greatest(hi, prev_running), next_xid - 1),
            greatest(tier_key_max, prev_tier_key_max),
            lsn >= coalesce(copy_end, 0), truncated);
    WITH gone AS (
        DELETE FROM tierdb.mirror_batches b
         WHERE b.table_id = tbl_id
           AND b.published_at < now() - make_interval(secs => history_seconds)
           AND b.seq < (SELECT max(l.seq) FROM tierdb.mirror_batches l WHERE l.table_id = tbl_id)
           AND (b.xid_lo IS NOT NULL
                OR EXISTS (SELECT FROM tierdb.mirror_batches l
                            WHERE l.table_id = tbl_id AND l.exact AND l.seq > b.seq))
        RETURNING b.op_id)
    DELETE FROM tierdb.mirror_keys k USING gone WHERE k.table_id = tbl_id AND k.op_id = gone.op_id;
END;
$$;

/*
 * The initial copy's row: not exact (each chunk was read at its own
 * snapshot); its replicated_lsn is the WAL position now, past every
 * chunk's snapshot, which the pump must pass before its batches are exact;
 * every transaction a chunk saw has an id below the next one now.
 */
CREATE FUNCTION tierdb.mirror_record_copy(tbl_id bigint, op uuid, snapshot_id bigint,
                                          schema_name text, table_name text, tier_key_col text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tier_key_max bigint;
BEGIN
    EXECUTE format('SELECT tierdb.canonical_tier_key((SELECT max(%I) FROM %I.%I))',
                   tier_key_col, schema_name, table_name)
       INTO tier_key_max;
    INSERT INTO tierdb.mirror_batches (table_id, op_id, lake_snapshot_id, replicated_lsn, xid_hi_running,
                                       tier_key_max, exact)
    VALUES (tbl_id, op, snapshot_id, (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint,
            pg_snapshot_xmax(pg_current_snapshot())::text::bigint - 1, tier_key_max, false);
END;
$$;

REVOKE ALL ON FUNCTION tierdb.mirror_record_batch(bigint, uuid, bigint, bigint, bigint, bigint, bigint, boolean, integer),
                       tierdb.mirror_record_copy(bigint, uuid, bigint, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tierdb.mirror_record_batch(bigint, uuid, bigint, bigint, bigint, bigint, bigint, boolean, integer),
                          tierdb.mirror_record_copy(bigint, uuid, bigint, text, text, text) TO tierdb_worker;

/*
 * tierdb-spark's hybrid capture (src/hybrid.c says what it waits for and
 * returns): the split, and the lake snapshot below it; all NULL when the
 * read takes the heap alone.
 */
CREATE FUNCTION tierdb.hybrid_read_begin(tbl regclass, lag bigint, wait_ms integer,
                                         OUT split bigint, OUT lake_snapshot_id bigint,
                                         OUT metadata_location text)
LANGUAGE c STRICT VOLATILE
AS 'MODULE_PATHNAME', 'tierdb_hybrid_read_begin';
