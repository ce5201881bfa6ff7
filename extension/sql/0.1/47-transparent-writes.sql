/*
 * 47-transparent-writes.sql: plain INSERT and COPY of rows below the
 * cut-line (SPEC §7, "Transparent writes"); a part of the install script
 * tierdb--0.1.sql, which extension/Makefile assembles from sql/0.1/.
 *
 * The spill partition.  A tiered table with transparent writes has a
 * DEFAULT partition, <table>_tierdb_spill, carrying the AFTER INSERT row
 * trigger tierdb_spill (tierdb.spill_route, src/spill.c).  Partitions
 * below T are gone (tiering dropped them), so Postgres routes a new row
 * below T there: the row is inserted as into any partition, so the
 * statement's privilege check, RLS WITH CHECK policies, constraints, the
 * table's own row triggers, RETURNING and the row count all treat it as a
 * plain table would.  At the end of the statement the trigger writes the
 * row into tierdb.delta as an upsert (op 0) and deletes it from the spill
 * partition, which is therefore empty whenever anyone else can look at it
 * (a DEFAULT partition is scanned by every CREATE/ATTACH PARTITION, and
 * reads of the heap above T must never see a row below it).
 *
 * The per-table switch is that partition itself: a table has transparent
 * writes exactly when it has the spill partition (tierdb.spill_partition).
 * tierdb.tables has no column for it because SPEC §4's catalog names are
 * protocol, and a separate flag could disagree with the partition that does
 * the work.  tierdb register creates it for new tables; tierdb_enable_
 * transparent_writes / tierdb_disable_transparent_writes create and drop it.
 * The setting tierdb.transparent_writes (on) turns the routing off per
 * session: plain INSERT and COPY of rows below T are then refused, naming
 * tierdb_upsert, as before.
 *
 * Semantics of a routed row are those of a plain INSERT into a table whose
 * primary key is the merge key: a row whose pk already lives in the heap
 * (at or above T), in the lake or in the delta raises unique_violation,
 * probed exactly (the heap by its key, the delta row, the lake at S), so a
 * plain INSERT never silently replaces a row.  INSERT ... ON CONFLICT
 * sees a cold row as a conflict when the table's merge key is a unique
 * index: the BEFORE INSERT trigger tierdb_spill_keys brings the cold row
 * of a new row's key into the spill partition first (src/cold_dml.h).
 * Without such an index it is refused when it reaches rows below T
 * (src/dml_guard.c), naming tierdb_upsert: the spill row would be counted
 * and returned before the conflict could be known.
 *
 * Privileges: the inserting role needs INSERT on the table only, as a
 * plain INSERT does.  spill_prepare runs as that role (so domain checks and
 * CHECK constraints run with its rights); spill_put_impl is SECURITY DEFINER
 * and not executable from SQL: spill.c calls it directly, only from the
 * trigger firing on the spill partition of a registered table, for a row
 * the executor has just inserted there.  It runs no user code: keys are
 * compared through their base types, never through domains.
 */

/* The trigger on the spill partition (src/spill.c). */
CREATE FUNCTION tierdb.spill_route()
RETURNS trigger
LANGUAGE c
AS 'MODULE_PATHNAME', 'tierdb_spill_route';

/* The spill partition of `tbl` (its DEFAULT partition with the tierdb_spill trigger), or NULL. */
CREATE FUNCTION tierdb.spill_partition(tbl regclass)
RETURNS regclass
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT p.partdefid::regclass
      FROM pg_partitioned_table p
     WHERE p.partrelid = tbl AND p.partdefid <> 0
       AND EXISTS (SELECT FROM pg_trigger g
                    WHERE g.tgrelid = p.partdefid AND g.tgname = 'tierdb_spill'
                      AND g.tgfoid = 'tierdb.spill_route()'::regprocedure)
$$;

/*
 * The caller's half of routing one spilled row: the row as the normalised
 * payload, its canonical pk and tier key, and its key columns, checked for
 * what the lake cannot hold and against the retention line.  `hot` says
 * the row belongs at or above T (it reached the spill partition because no
 * heap partition holds its range yet).  The row is anyelement, not record:
 * PL/pgSQL then compiles the function per table row type (src/spill.c,
 * set_prepare_row_type).
 */
CREATE FUNCTION tierdb.spill_prepare(tbl regclass, st jsonb, row_ anyelement,
                                     OUT payload jsonb, OUT pk text, OUT tier_key bigint, OUT key jsonb,
                                     OUT hot boolean)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- floats in the payload exact whatever the session says (the fold reads them back)
SET extra_float_digits = 3
AS $$
DECLARE
    n record;
BEGIN
    PERFORM tierdb.check_routable(tbl, st);
    -- the executor checked the row's constraints as it inserted it
    SELECT * INTO n FROM tierdb.normalize_row(tbl, st, to_jsonb(row_), false, true);
    payload := n.payload;
    pk := n.pk;
    tier_key := n.tier_key;
    key := n.key;
    hot := tierdb.routes_hot(st, n.tier_key);
    IF NOT hot THEN
        PERFORM tierdb.check_retention(tbl, st, n.tier_key);
        PERFORM tierdb.check_row(tbl, n.payload, true);
    END IF;
END;
$$;

/*
 * The definer's half: under the pk's lock, refuses a pk that already lives
 * (returns 'heap' or 'cold' for spill.c to raise unique_violation as the
 * caller), else writes the delta upsert and returns 'delta'.  The lake
 * copy's location follows tierdb_upsert's rule (30-routing.sql,
 * "old_tier_key"): after a tombstone the lake copy may still sit elsewhere.
 */
CREATE FUNCTION tierdb.spill_put_impl(tbl regclass, st jsonb, pk text, tier_key bigint, key jsonb, payload jsonb)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    found boolean;
    e jsonb;
    lake_at bigint;
    old_tier_key bigint;
    version bigint;
BEGIN
    PERFORM tierdb.lock_pk(st, pk);
    EXECUTE format('SELECT EXISTS (SELECT FROM %s t WHERE %s%s)', tbl, tierdb.key_match(tbl, st, 't', '$1'),
                   tierdb.heap_scope(st, 't'))
       INTO found USING key;
    IF found THEN
        RETURN 'heap';
    END IF;
    SELECT jsonb_build_object('op', d.op, 'tier_key', d.tier_key, 'old_tier_key', d.old_tier_key)
      INTO e
      FROM tierdb.delta d
     WHERE d.table_id = tbl::oid::bigint AND d.pk = spill_put_impl.pk;
    IF e IS NOT NULL THEN
        IF (e ->> 'op')::int = 0 THEN
            RETURN 'cold';
        END IF;
        lake_at := coalesce((e ->> 'old_tier_key')::bigint, (e ->> 'tier_key')::bigint);
    ELSIF st -> 'S' IS NOT NULL AND st -> 'S' <> 'null' THEN
        -- The cold rows at the statement's pin: the lake at S (the cut-line is held FOR SHARE since st was
        -- read, so the pin's S is st's), merged with a delta that has no row for this pk.  Unlike
        -- tierdb.lake_scan, the cold scan takes the key's conditions: partitions, files and row groups that
        -- cannot hold the key are never read, so a probe costs a lookup, not a scan of the whole lake.
        EXECUTE format('SELECT tierdb.canonical_tier_key(l.%I) FROM tierdb.cold_rows(NULL::%s) l WHERE %s LIMIT 1',
                       st ->> 'tier_key_col', tbl, tierdb.key_match(tbl, st, 'l', '$1'))
           INTO lake_at USING key;
        IF lake_at IS NOT NULL THEN
            RETURN 'cold';
        END IF;
    END IF;
    IF lake_at IS DISTINCT FROM tier_key THEN
        old_tier_key := lake_at;
    END IF;
    version := tierdb.write_delta(tbl, pk, 0::smallint, tier_key, old_tier_key, payload);
    PERFORM tierdb.explain_route(format('%s: plain INSERT of pk %s below T: written to tierdb.delta as version %s',
                                        tbl, pk, version));
    RETURN 'delta';
END;
$$;

/*
 * Where the lake holds pk, as a new delta row of it must name it: the pk's
 * delta row says (its old_tier_key when the row moved, else its tier key),
 * else `fallback` (the tier key the row was read or written with).
 */
CREATE FUNCTION tierdb.lake_copy_at(tbl regclass, pk text, fallback bigint)
RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce((SELECT coalesce(d.old_tier_key, d.tier_key) FROM tierdb.delta d
                      WHERE d.table_id = tbl::oid::bigint AND d.pk = lake_copy_at.pk), fallback)
$$;

REVOKE EXECUTE ON FUNCTION tierdb.lake_copy_at(regclass, text, bigint) FROM PUBLIC;

/* The BEFORE INSERT trigger tierdb_spill_keys of INSERT ... ON CONFLICT (src/spill.c). */
CREATE FUNCTION tierdb.spill_bring_in()
RETURNS trigger
LANGUAGE c
AS 'MODULE_PATHNAME', 'tierdb_spill_bring_in';

/*
 * The cold row of `key` (the pk columns as jsonb), as to_jsonb of a row of
 * the table, or NULL: the lake at the statement's pin merged with the
 * delta (tierdb.cold_rows, pruned by the key's conditions).  Only spill.c
 * calls it, for the conflict check of an INSERT ... ON CONFLICT.
 */
CREATE FUNCTION tierdb.cold_row_impl(tbl regclass, st jsonb, key jsonb)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET extra_float_digits = 3
AS $$
DECLARE
    found_row record;
BEGIN
    -- the row's columns: a whole-row reference would be served by the set-returning function, which
    -- reads the whole lake, instead of the cold scan, which reads only the files that may hold the key
    EXECUTE format('SELECT l.* FROM tierdb.cold_rows(NULL::%s) l WHERE %s LIMIT 1',
                   tbl, tierdb.key_match(tbl, st, 'l', '$1'))
       INTO found_row USING key;
    IF found_row IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN to_jsonb(found_row);
END;
$$;

REVOKE EXECUTE ON FUNCTION tierdb.cold_row_impl(regclass, jsonb, jsonb) FROM PUBLIC;

/*
 * The definer's half of a cold row that a plain UPDATE or DELETE changed
 * (src/cold_dml.c brought it into the spill partition; src/spill.c calls
 * this under the pk's lock, after checking that no other transaction wrote
 * the pk since the statement read the row).  `new_pk` NULL: the row was
 * deleted, or moved into a heap partition by an UPDATE of its tier key:
 * the old pk gets a tombstone.  Otherwise the new version is the pk's
 * upsert; a new pk tombstones the old one and is probed like an INSERT's
 * (returns 'heap' or 'cold' when it already lives, for spill.c to raise
 * unique_violation).  The lake copy's location follows tierdb_upsert's rule:
 * the pk's delta row says where it is, else the row came from the lake at
 * its own tier key.
 */
CREATE FUNCTION tierdb.spill_change_impl(tbl regclass, st jsonb, old_pk text, old_tier_key bigint,
                                         new_pk text, new_tier_key bigint, new_key jsonb, new_payload jsonb)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    lake_at bigint := tierdb.lake_copy_at(tbl, old_pk, old_tier_key);
    version bigint;
BEGIN
    IF new_pk IS DISTINCT FROM old_pk THEN
        version := tierdb.write_delta(tbl, old_pk, 1::smallint, lake_at, NULL, NULL);
        PERFORM tierdb.explain_route(format('%s: plain %s of pk %s below T: tombstone written to tierdb.delta as version %s',
                                            tbl, CASE WHEN new_pk IS NULL THEN 'DELETE (or UPDATE moving it above T)'
                                                      ELSE 'UPDATE changing its key' END, old_pk, version));
    END IF;
    IF new_pk IS NULL THEN
        RETURN 'delta';
    END IF;
    IF new_pk <> old_pk THEN
        RETURN tierdb.spill_put_impl(tbl, st, new_pk, new_tier_key, new_key, new_payload);
    END IF;
    version := tierdb.write_delta(tbl, old_pk, 0::smallint, new_tier_key,
                                  CASE WHEN lake_at IS DISTINCT FROM new_tier_key THEN lake_at END, new_payload);
    PERFORM tierdb.explain_route(format('%s: plain UPDATE of pk %s below T: written to tierdb.delta as version %s',
                                        tbl, old_pk, version));
    RETURN 'delta';
END;
$$;

REVOKE EXECUTE ON FUNCTION tierdb.spill_prepare(regclass, jsonb, anyelement),
                           tierdb.spill_put_impl(regclass, jsonb, text, bigint, jsonb, jsonb),
                           tierdb.spill_change_impl(regclass, jsonb, text, bigint, text, bigint, jsonb, jsonb)
       FROM PUBLIC;

/* Creates the spill partition `spill` (qualified, quoted) of tbl with its trigger (src/spill.c). */
CREATE FUNCTION tierdb.spill_create(tbl regclass, spill text)
RETURNS void
LANGUAGE c STRICT
AS 'MODULE_PATHNAME', 'tierdb_spill_create';

/*
 * tierdb_enable_transparent_writes(table): creates the spill partition of
 * a registered tiered table (no-op when it has one).  Runs as the caller,
 * who must own the table, as CREATE TABLE ... PARTITION OF needs.  Refuses a
 * table that already has a DEFAULT partition of its own.
 */
CREATE FUNCTION tierdb_enable_transparent_writes(tbl regclass)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    st jsonb := tierdb.routing_state(tbl, false);
    other regclass;
    spill text;
BEGIN
    PERFORM tierdb.check_routable(tbl, st);
    IF (st ->> 'keep_heap')::boolean THEN
        RAISE EXCEPTION 'transparent writes of % need no spill partition: the table keeps its heap', tbl
            USING ERRCODE = 'feature_not_supported';
    END IF;
    IF tierdb.spill_partition(tbl) IS NOT NULL THEN
        RETURN;
    END IF;
    SELECT partdefid::regclass INTO other FROM pg_partitioned_table WHERE partrelid = tbl AND partdefid <> 0;
    IF other IS NOT NULL THEN
        RAISE EXCEPTION 'table % already has a DEFAULT partition, %', tbl, other
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'Transparent writes route rows below the cut-line through a DEFAULT partition of their own.',
                  HINT = format('Move its rows into range partitions and detach it (ALTER TABLE %s DETACH PARTITION %s) first.',
                                tbl, other);
    END IF;
    SELECT format('%I.%I', n.nspname, left(c.relname, 50) || '_tierdb_spill') INTO spill
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl;
    PERFORM tierdb.spill_create(tbl, spill);
END;
$$;

/* tierdb_disable_transparent_writes(table): drops the spill partition (no-op without one). */
CREATE FUNCTION tierdb_disable_transparent_writes(tbl regclass)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    spill regclass := tierdb.spill_partition(tbl);
BEGIN
    IF spill IS NOT NULL THEN
        EXECUTE format('DROP TABLE %s', spill);
    END IF;
END;
$$;
