/*
 * 48-keep-heap.sql: plain DML on the tiered partitions of a table
 * registered with --keep-heap (SPEC §3, §7); a part of the install script
 * tierdb--0.1.sql, which extension/Makefile assembles from sql/0.1/.
 *
 * A keep-heap table keeps every row in its heap: tiering copies a partition
 * to the lake and, once T covers it, keeps it, replacing its seal with the
 * trigger tierdb_mirror (cli/tiering.c).  Reads split at T as for any
 * tiered table (the lake and the delta below T), so every change plain DML
 * makes to a tiered partition must reach the delta too: the trigger
 * (tierdb.mirror_route, src/spill.c) writes it there as tierdb_upsert and
 * tierdb_delete would, and the fold takes it into the lake.  tierdb verify
 * compares each kept partition with the lake and the delta, row by row.
 */

/* The trigger on a keep-heap table's tiered partitions (src/spill.c). */
CREATE FUNCTION tierdb.mirror_route()
RETURNS trigger
LANGUAGE c
AS 'MODULE_PATHNAME', 'tierdb_mirror_route';

REVOKE EXECUTE ON FUNCTION tierdb.mirror_route() FROM PUBLIC;

/*
 * The definer's half of one row change on a kept partition, under the
 * pks' locks: the old pk (NULL for an INSERT) gets a tombstone unless the
 * new row keeps it; the new row (NULL for a DELETE) becomes its pk's
 * upsert, naming where the lake holds the pk (tierdb.lake_copy_at) when that
 * is elsewhere.  No duplicate probe: the heap holds every row, so its own
 * constraints decide, as on any table.
 */
CREATE FUNCTION tierdb.mirror_change_impl(tbl regclass, st jsonb, old_pk text, old_tier_key bigint,
                                          new_pk text, new_tier_key bigint, new_payload jsonb)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    lake_at bigint;
    version bigint;
BEGIN
    IF old_pk IS NOT NULL THEN
        PERFORM tierdb.lock_pk(st, old_pk);
    END IF;
    IF new_pk IS NOT NULL AND new_pk IS DISTINCT FROM old_pk THEN
        PERFORM tierdb.lock_pk(st, new_pk);
    END IF;
    IF old_pk IS NOT NULL AND old_pk IS DISTINCT FROM new_pk THEN
        version := tierdb.write_delta(tbl, old_pk, 1::smallint, tierdb.lake_copy_at(tbl, old_pk, old_tier_key),
                                      NULL, NULL);
        PERFORM tierdb.explain_route(format('%s: a kept partition lost pk %s: tombstone written to tierdb.delta as version %s',
                                            tbl, old_pk, version));
    END IF;
    IF new_pk IS NOT NULL THEN
        lake_at := tierdb.lake_copy_at(tbl, new_pk, CASE WHEN new_pk = old_pk THEN old_tier_key END);
        version := tierdb.write_delta(tbl, new_pk, 0::smallint, new_tier_key,
                                      CASE WHEN lake_at IS DISTINCT FROM new_tier_key THEN lake_at END, new_payload);
        PERFORM tierdb.explain_route(format('%s: a kept partition''s row of pk %s changed: written to tierdb.delta as version %s',
                                            tbl, new_pk, version));
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION tierdb.mirror_change_impl(regclass, jsonb, text, bigint, text, bigint, jsonb) FROM PUBLIC;
