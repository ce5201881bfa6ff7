/*
 * 30-routing.sql: routed corrections, the explicit read protocol and
 * tierdb_version() (SPEC §5, §7); a part of the install script
 * tierdb--0.1.sql, which extension/Makefile assembles from sql/0.1/.
 *
 * User-facing functions are named tierdb_* and created unqualified, so they
 * land in the extension's schema pg_catalog and need no search_path;
 * helpers live in schema tierdb.  Every function pins its search_path and
 * builds dynamic SQL with format('%I' / '%L' / '%s' of a regclass).
 *
 * Privileges.  The routing functions run as their caller (SECURITY
 * INVOKER): every statement on the user's table is checked, row-secured
 * and triggered as the caller's own would be.  The documented functions
 * that write the catalog (tierdb_upsert, tierdb_delete's delete_routed,
 * tierdb_read_begin's read_begin, tierdb_read_end) are entry points in C
 * (src/routing.c): they open a routing window on their table and run their
 * body tierdb.<name>_body, which nobody may execute from SQL.  Catalog
 * access goes through the bridge functions tierdb.<op>(...) of routing.c:
 * those that write work only inside a window on their table (locking the
 * cut-line with routing_state takes SELECT and a write privilege), and every bridge checks the caller's privileges on that
 * table (SELECT for reads, INSERT and UPDATE for an upsert, UPDATE or
 * DELETE for a tombstone) before it calls tierdb.<op>_impl, a SECURITY
 * DEFINER function that touches only that table's catalog rows and runs no
 * user code.  The _impl functions cannot be executed from SQL.  So a role
 * may write cold rows of exactly the tables it may write hot rows of, only
 * through the documented calls, and nothing else of the catalog; where
 * row-level security applies to it, only hot rows (a delta row is out of
 * the policies' reach).  The helpers left executable by PUBLIC run as the
 * caller and hold no privilege of their own (codecs, statement builders,
 * checks).  The caller needs USAGE on schema tierdb (granted to PUBLIC
 * below: the catalog's tables themselves stay ungranted).
 *
 * Rows.  A routed row must pass every check a plain INSERT of it would
 * (normalize_row, routing.c tierdb_checked_row), and a row bound for the
 * lake must hold only values the lake can store, so nothing that could
 * never fold enters the delta.
 *
 * The heap.  Whether a pk is in the heap is always asked of the heap at
 * or above T (heap_scope), never of the table as a transparent read sees
 * it: a lake row taken for a heap row would route a cold move as a move
 * out of the heap, with no old_tier_key.
 *
 * Where a row lives (SPEC §5): at or above T in the heap, below it in the
 * lake at S merged with tierdb.delta.  A primary key lives in exactly one
 * place, so an upsert that changes a row's tier key across T moves the row:
 * a cold row going hot is tombstoned (op 1) in the delta; a hot row going
 * cold is deleted from the heap.
 *
 * old_tier_key.  The fold places a delta row's equality delete in the lake
 * partition of coalesce(old_tier_key, tier_key) (cli/fold.c, capture_rows),
 * so a correction must say where the pk's lake copy lives when that differs
 * from its new tier key.  It is found, cheapest first:
 *   - the tier key is part of the pk: the copy, if any, is at the same tier
 *     key (a different tier key is a different pk), no lookup;
 *   - the pk has a delta row: its lake copy is where that row's own fold
 *     would delete it, coalesce(old_tier_key, tier_key);
 *   - the pk is in the heap: it has no lake copy;
 *   - otherwise: the lake at S is read for that pk (tierdb.lake_location:
 *     the cold scan with the key's conditions, which reads only the lake
 *     files whose partitions and statistics may hold the key).  It is the
 *     only way to be right, because a wrong guess would leave the old copy
 *     in the lake after the fold.
 *
 * Concurrency with the daemon.  The routing functions lock the table's
 * tierdb.cutline row FOR SHARE before they read T, and keep it until
 * commit.  Every daemon publication (tiering's T advance, the fold's S
 * advance, cli/lakestep.c tdb_cutline_publish) is an UPDATE of that row, so
 * it waits for the routed write to commit, and a routed write started after
 * it sees the new (T, S):
 *   - a cold write decides with the T and S it will commit under, so the
 *     location it computes from lake@S and the delta is the one readers and
 *     the next fold see;
 *   - a hot write goes into the heap partition of its tier key.  If tiering
 *     sealed that partition (between its seal and its T advance), the
 *     partition's guard refuses the write and tierdb_upsert/tierdb_delete
 *     fail with SQLSTATE 40001 (retry): routing to the delta instead would
 *     be wrong, as readers below the old T would not see the row until T
 *     advanced, and an aborted tiering run would leave a delta row above T.
 *     If the write came first, the seal waits for it, and the copy takes it.
 * Routed writes of one pk are serialised by a transaction-scoped advisory
 * lock on (table, pk) (tierdb.lock_pk), so two of them never put the pk in
 * both the heap and the delta.  Plain DML on the table does not take it.
 */

-- the caller reaches the bridges and helpers; the catalog tables stay private
GRANT USAGE ON SCHEMA tierdb TO PUBLIC;

/* ------------------------------------------------------------ value codecs */

/*
 * The canonical pk text (SPEC §4): one column's text is the value itself;
 * composite keys join the parts with chr(31), each part's backslashes and
 * chr(31) escaped with a backslash.  cli/fold.c reads it back.
 */
CREATE FUNCTION tierdb.canonical_pk(VARIADIC parts text[])
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF parts IS NULL OR cardinality(parts) = 0 THEN
        RETURN NULL;
    END IF;
    IF array_position(parts, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'a primary-key part is NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = format('part %s of %s is NULL; every primary-key column needs a value.',
                                  array_position(parts, NULL), cardinality(parts));
    END IF;
    IF cardinality(parts) = 1 THEN
        RETURN parts[1];
    END IF;
    RETURN (SELECT string_agg(replace(replace(p, '\', '\\'), chr(31), '\' || chr(31)), chr(31) ORDER BY n)
              FROM unnest(parts) WITH ORDINALITY AS u(p, n));
END;
$$;

/* A tier-key value as its canonical bigint (SPEC §2), one per key family. */
CREATE FUNCTION tierdb.canonical_tier_key(v bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp
RETURN v;

CREATE FUNCTION tierdb.canonical_tier_key(v timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp
RETURN (extract(epoch FROM v) * 1000000)::bigint;

CREATE FUNCTION tierdb.canonical_tier_key(v timestamp) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp
RETURN (extract(epoch FROM v) * 1000000)::bigint;

CREATE FUNCTION tierdb.canonical_tier_key(v date) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp
RETURN (v - date '1970-01-01')::bigint;

/*
 * The text of a canonical tier key in its family's type, independent of
 * the session's TimeZone and DateStyle: timestamptz in UTC with '+00'.
 */
CREATE FUNCTION tierdb.tier_key_text(v bigint, key_type text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp
RETURN CASE key_type
    WHEN 'bigint' THEN v::text
    WHEN 'date' THEN to_char(date '1970-01-01' + v::int, 'YYYY-MM-DD')
    -- seconds and microseconds apart: interval * number goes through float8
    ELSE to_char(timestamp '1970-01-01' + (v / 1000000) * interval '1 second'
                                        + (v % 1000000) * interval '1 microsecond',
                 CASE WHEN v % 1000000 = 0 THEN 'YYYY-MM-DD HH24:MI:SS' ELSE 'YYYY-MM-DD HH24:MI:SS.US' END)
         || CASE key_type WHEN 'timestamptz' THEN '+00' ELSE '' END
END;

/* A canonical tier key as an SQL literal of the key's own type. */
CREATE FUNCTION tierdb.tier_key_literal(v bigint, key_type text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp
RETURN CASE key_type
    WHEN 'bigint' THEN v::text
    ELSE format('%L::%s', tierdb.tier_key_text(v, key_type), key_type)
END;

/* ------------------------------------------------------------ catalog operations */

/*
 * Each operation is an _impl (SECURITY DEFINER, not executable from SQL)
 * and its bridge of the same name (LANGUAGE C, src/routing.c), which checks
 * the caller's privileges on the table in its first argument and then calls
 * the _impl.  An _impl touches nothing but the catalog rows of that table.
 */

/*
 * The registration and cut-line of a table as jsonb, NULL if it is not
 * registered; with `lock`, the cutline row is locked FOR SHARE until
 * commit, which holds off every daemon publication (see the file comment).
 */
CREATE FUNCTION tierdb.routing_state_impl(tbl regclass, lock boolean)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result jsonb;
BEGIN
    -- (a direct table's writers publish S themselves when they commit: they must not wait on each other)
    IF lock AND NOT EXISTS (SELECT FROM tierdb.tables WHERE table_id = tbl::oid::bigint AND mode = 'direct') THEN
        PERFORM FROM tierdb.cutline WHERE table_id = tbl::oid::bigint FOR SHARE;
    END IF;
    SELECT jsonb_build_object(
               'table_id', t.table_id,
               'pk_cols', to_jsonb(t.primary_key_cols),
               'tier_key_col', t.tier_key_col,
               'tier_key_type', t.tier_key_type,
               'mode', t.mode,
               'keep_heap', t.keep_heap,
               'heap_retention_lag', t.heap_retention_lag,
               'T', c.tier_key_hi,
               'S', c.lake_snapshot_id,
               'R', c.retention_line,
               'metadata_location', c.lake_props ->> 'metadata_location')
      INTO result
      FROM tierdb.tables t
      LEFT JOIN tierdb.cutline c USING (table_id)
     WHERE t.table_id = tbl::oid::bigint;
    RETURN result;
END;
$$;

CREATE FUNCTION tierdb.routing_state(tbl regclass, lock boolean) RETURNS jsonb
LANGUAGE c AS 'MODULE_PATHNAME', 'tierdb_bridge_routing_state';

/* The pk's delta row: {op, tier_key, old_tier_key, version}, or NULL. */
CREATE FUNCTION tierdb.delta_entry_impl(tbl regclass, pk text)
RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT jsonb_build_object('op', d.op, 'tier_key', d.tier_key,
                              'old_tier_key', d.old_tier_key, 'version', d.version)
      FROM tierdb.delta d
     WHERE d.table_id = tbl::oid::bigint AND d.pk = delta_entry_impl.pk
$$;

CREATE FUNCTION tierdb.delta_entry(tbl regclass, pk text) RETURNS jsonb
LANGUAGE c AS 'MODULE_PATHNAME', 'tierdb_bridge_select';

/*
 * Writes the pk's delta row (one per pk: a newer write replaces it) with a
 * fresh version, and returns the version.  Called only by the _impls below.
 */
CREATE FUNCTION tierdb.write_delta(tbl regclass, pk text, op smallint, tier_key bigint,
                                   old_tier_key bigint, payload jsonb)
RETURNS bigint
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO tierdb.delta AS d (table_id, pk, op, tier_key, old_tier_key, version, payload)
    VALUES (tbl::oid::bigint, pk, op, tier_key, old_tier_key, nextval('tierdb.delta_version'), payload)
    ON CONFLICT (table_id, pk) DO UPDATE
       SET op = EXCLUDED.op, tier_key = EXCLUDED.tier_key, old_tier_key = EXCLUDED.old_tier_key,
           version = EXCLUDED.version, payload = EXCLUDED.payload, updated_at = now()
    RETURNING d.version
$$;

REVOKE EXECUTE ON FUNCTION tierdb.write_delta(regclass, text, smallint, bigint, bigint, jsonb) FROM PUBLIC;

CREATE FUNCTION tierdb.delta_put_impl(tbl regclass, pk text, tier_key bigint, old_tier_key bigint, payload jsonb)
RETURNS bigint
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT tierdb.write_delta(tbl, pk, 0::smallint, tier_key, old_tier_key, payload) $$;

CREATE FUNCTION tierdb.delta_put(tbl regclass, pk text, tier_key bigint, old_tier_key bigint, payload jsonb)
RETURNS bigint
LANGUAGE c AS 'MODULE_PATHNAME', 'tierdb_bridge_insert_update';

CREATE FUNCTION tierdb.delta_tombstone_impl(tbl regclass, pk text, tier_key bigint, old_tier_key bigint)
RETURNS bigint
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT tierdb.write_delta(tbl, pk, 1::smallint, tier_key, old_tier_key, NULL) $$;

CREATE FUNCTION tierdb.delta_tombstone(tbl regclass, pk text, tier_key bigint, old_tier_key bigint)
RETURNS bigint
LANGUAGE c AS 'MODULE_PATHNAME', 'tierdb_bridge_update_delete';

/*
 * Who took a pin (the role tierdb_read_begin ran as): only that role or a
 * superuser may end it (routing.c).  NULL for pins other writers insert.
 */
ALTER TABLE tierdb.read_pins ADD COLUMN owner_role oid;

/*
 * SPEC §5 step 1 in one statement: a read_pins row from the cutline row,
 * owned by `owner`, returned with the metadata location, as jsonb; NULL if
 * not registered.  The bridge (routing.c) caps the ttl by
 * tierdb.max_pin_ttl and passes the caller as `owner`.
 */
CREATE FUNCTION tierdb.pin_insert_impl(tbl regclass, ttl interval, owner oid)
RETURNS jsonb
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH c AS (
        SELECT table_id, lake_snapshot_id, tier_key_hi, lake_props ->> 'metadata_location' AS metadata_location
          FROM tierdb.cutline WHERE table_id = tbl::oid::bigint
    ), p AS (
        INSERT INTO tierdb.read_pins (table_id, pinned_lake_snapshot_id, pinned_tier_key_hi, expires_at, owner_role)
        SELECT table_id, lake_snapshot_id, tier_key_hi, now() + ttl, owner FROM c
        RETURNING pin_id, pinned_tier_key_hi, pinned_lake_snapshot_id, expires_at
    )
    SELECT jsonb_build_object('pin_id', p.pin_id, 'tier_key_hi', p.pinned_tier_key_hi,
                              'lake_snapshot_id', p.pinned_lake_snapshot_id,
                              'metadata_location', c.metadata_location, 'expires_at', p.expires_at)
      FROM p, c
$$;

CREATE FUNCTION tierdb.pin_insert(tbl regclass, ttl interval) RETURNS jsonb
LANGUAGE c AS 'MODULE_PATHNAME', 'tierdb_bridge_pin_begin';

/*
 * Deletes the pin if `caller` owns it or `is_superuser`: true when it did,
 * false when there is no such pin, NULL when it is another role's.
 */
CREATE FUNCTION tierdb.pin_delete_impl(pin bigint, caller oid, is_superuser boolean)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner oid;
BEGIN
    SELECT owner_role INTO owner FROM tierdb.read_pins WHERE pin_id = pin FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF NOT is_superuser AND owner IS DISTINCT FROM caller THEN
        RETURN NULL;
    END IF;
    DELETE FROM tierdb.read_pins WHERE pin_id = pin;
    RETURN true;
END;
$$;

CREATE FUNCTION tierdb.pin_delete(pin bigint) RETURNS boolean
LANGUAGE c AS 'MODULE_PATHNAME', 'tierdb_bridge_pin_end';

/*
 * What tierdb_rewrite_scan needs: the routing state, with T and S from the
 * pin when one is given (an error if it is not a live pin of the table).
 */
CREATE FUNCTION tierdb.scan_state_impl(tbl regclass, pin bigint)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    st jsonb := tierdb.routing_state_impl(tbl, false);
    p record;
BEGIN
    IF st IS NULL OR pin IS NULL THEN
        RETURN st;
    END IF;
    SELECT * INTO p FROM tierdb.read_pins WHERE pin_id = pin AND table_id = tbl::oid::bigint;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'read pin % of table % does not exist', pin, tbl
            USING ERRCODE = 'undefined_object',
                  HINT = 'Take a pin with tierdb_read_begin() on this table; tierdb_read_end() and the daemon''s sweep of expired pins remove them.';
    END IF;
    IF p.expires_at <= now() THEN
        RAISE EXCEPTION 'read pin % of table % expired at %', pin, tbl, p.expires_at
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'The daemon may already have folded or expired what the pin held.',
                  HINT = 'Start the read again with tierdb_read_begin(), with a longer ttl if it needs one.';
    END IF;
    RETURN st || jsonb_build_object('T', p.pinned_tier_key_hi, 'S', p.pinned_lake_snapshot_id);
END;
$$;

CREATE FUNCTION tierdb.scan_state(tbl regclass, pin bigint) RETURNS jsonb
LANGUAGE c AS 'MODULE_PATHNAME', 'tierdb_bridge_select';

REVOKE EXECUTE ON FUNCTION tierdb.routing_state_impl(regclass, boolean),
                           tierdb.delta_entry_impl(regclass, text),
                           tierdb.delta_put_impl(regclass, text, bigint, bigint, jsonb),
                           tierdb.delta_tombstone_impl(regclass, text, bigint, bigint),
                           tierdb.pin_insert_impl(regclass, interval, oid),
                           tierdb.pin_delete_impl(bigint, oid, boolean),
                           tierdb.scan_state_impl(regclass, bigint)
       FROM PUBLIC;

/* ------------------------------------------------------------ routing helpers */

/*
 * Raises the "not registered" error when st is NULL; refuses modes routing
 * does not serve.  A direct table's routed writes are committed to the lake
 * when their transaction commits (src/direct.c).
 */
CREATE FUNCTION tierdb.check_routable(tbl regclass, st jsonb)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF st IS NULL THEN
        RAISE EXCEPTION 'table % is not registered with TierDB', tbl
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = format('Register it first: tierdb register --table %s --pk <column>[,<column>] --tier-key <column>', tbl);
    END IF;
    -- a mirrored table keeping a heap window routes below T as a tiered table does (docs/mirrored.md)
    IF st ->> 'mode' = 'mirrored' AND st -> 'heap_retention_lag' = 'null'::jsonb THEN
        RAISE EXCEPTION 'routed writes do not serve mirrored tables, and % is one', tbl
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'The heap of a mirrored table holds every row: write it with plain INSERT, UPDATE and DELETE.';
    END IF;
END;
$$;

/* Checks a privilege of the caller on the table as Postgres would, before anything is read. */
CREATE FUNCTION tierdb.require_privileges(tbl regclass, privileges text[])
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p text;
BEGIN
    FOREACH p IN ARRAY privileges LOOP
        IF NOT has_table_privilege(tbl, p) THEN
            -- worded as Postgres' own check (and routing.c's) words it
            RAISE EXCEPTION 'permission denied for table %', (SELECT relname FROM pg_class WHERE oid = tbl)
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = format('This routed call needs %s on the table; role %s lacks %s.',
                                      array_to_string(privileges, ', '), current_user, p);
        END IF;
    END LOOP;
END;
$$;

/* The table's live columns in order (name, type), for building statements. */
CREATE FUNCTION tierdb.table_columns(tbl regclass)
RETURNS TABLE(name text, type text, generated boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), a.attgenerated <> ''
      FROM pg_attribute a
     WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY a.attnum
$$;

/* SQL text: "l.a = r.a AND l.b = r.b" over the pk columns. */
CREATE FUNCTION tierdb.pk_match(st jsonb, l text, r text)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT string_agg(format('%I.%I = %I.%I', l, c, r, c), ' AND ')
      FROM jsonb_array_elements_text(st -> 'pk_cols') c
$$;

/*
 * SQL text rendering the value `expr` of type `type` as one part of a
 * canonical pk.  A part is the value's text form as the daemon's sessions
 * print it (cli/pgtypes.h pins DateStyle ISO and TimeZone UTC), whatever
 * the current session's settings: the delta keeps one row per pk text, so
 * two sessions must write the same text for the same key (readers parse it
 * back under the same settings, extension/src/delta_keys.c).  So the
 * temporal types, whose text follows DateStyle and TimeZone, are spelled
 * out as their output functions print them in ISO and UTC (the fraction
 * without trailing zeros); other types' text does not follow those
 * settings (floats are exact with the default extra_float_digits).
 */
CREATE FUNCTION tierdb.pk_part_sql(expr text, type regtype)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE type
        WHEN 'timestamptz'::regtype THEN
            format($f$(regexp_replace(to_char((%s) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), '\.?0+$', '') || '+00')$f$,
                   expr)
        WHEN 'timestamp'::regtype THEN
            format($f$regexp_replace(to_char(%s, 'YYYY-MM-DD HH24:MI:SS.US'), '\.?0+$', '')$f$, expr)
        WHEN 'date'::regtype THEN format($f$to_char(%s, 'YYYY-MM-DD')$f$, expr)
        ELSE format('(%s)::text', expr)
    END
$$;

/*
 * SQL text giving the canonical pk of a row r of the table: its one part
 * for a one-column key (no function call per row of a scan), else
 * "tierdb.canonical_pk(<part>, <part>, ...)".  tierdb.pk_expr is the same,
 * cached per backend (src/pk_expr.c).
 */
CREATE FUNCTION tierdb.pk_expr(tbl regclass, st jsonb, r text)
RETURNS text
LANGUAGE c STABLE STRICT
AS 'MODULE_PATHNAME', 'tierdb_pk_expr';

CREATE FUNCTION tierdb.pk_expr_sql(tbl regclass, st jsonb, r text)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN count(*) = 1 THEN min(part)
                ELSE format('tierdb.canonical_pk(%s)', string_agg(part, ', ' ORDER BY n)) END
      FROM jsonb_array_elements_text(st -> 'pk_cols') WITH ORDINALITY AS c(col, n)
      JOIN pg_attribute a ON a.attrelid = tbl AND a.attname = c.col
      JOIN pg_type t ON t.oid = a.atttypid,
           -- a domain's text is its base type's
           LATERAL tierdb.pk_part_sql(format('%I.%I', r, c.col),
                                      coalesce(nullif(t.typbasetype, 0), a.atttypid)::regtype) AS part
$$;

/* NOTICE `message` when tierdb.explain is on. */
CREATE FUNCTION tierdb.explain_route(message text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF coalesce(current_setting('tierdb.explain', true), 'off') IN ('on', 'true', '1', 'yes') THEN
        RAISE NOTICE 'tierdb: %', message;
    END IF;
END;
$$;

/*
 * A row image checked and normalised against the table: the payload
 * to_jsonb(jsonb_populate_record(NULL::table, image)), the canonical pk,
 * the canonical tier key, and the key (the pk columns) as jsonb.  Errors
 * name the column: unknown columns, missing or NULL key columns, values
 * that do not convert.  jsonb_populate_record applies the columns' typmods
 * and domain constraints; with `full_row` (an upsert's image, not a
 * delete's key) the row must also pass what a plain INSERT of it checks
 * (tierdb.checked_row: generated columns computed, NOT NULL, CHECK).
 * `from_row`: the image is to_jsonb() of a row of the table (a trigger's),
 * whose keys are the table's columns: they are not looked up.
 */
CREATE FUNCTION tierdb.normalize_row(tbl regclass, st jsonb, image jsonb, full_row boolean DEFAULT true,
                                     from_row boolean DEFAULT false,
                                     OUT payload jsonb, OUT pk text, OUT tier_key bigint, OUT key jsonb)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
-- floats in the payload exact whatever the session says (the fold reads them back)
SET extra_float_digits = 3
AS $$
DECLARE
    unknown text;
    needed text;
    col text;
    problem text;
    problem_code text;
BEGIN
    IF jsonb_typeof(image) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'a row image of % must be a JSON object, not %', tbl, coalesce(jsonb_typeof(image), 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass the full row as {"column": value, ...}, e.g. to_jsonb(a row of the table).';
    END IF;
    -- (to_jsonb of a row of the table, from_row, has the table's columns and no other)
    IF NOT from_row THEN
        SELECT string_agg(format('%I', k), ', ' ORDER BY k) INTO unknown
          FROM jsonb_object_keys(image) k
         WHERE k NOT IN (SELECT c.name FROM tierdb.table_columns(tbl) c);
    END IF;
    IF unknown IS NOT NULL THEN
        RAISE EXCEPTION 'table % has no column %', tbl, unknown
            USING ERRCODE = 'undefined_column',
                  HINT = 'The row image''s keys must be column names of the table, spelled as the catalog has them.';
    END IF;
    FOR col, needed IN
        SELECT c, 'primary-key column' FROM jsonb_array_elements_text(st -> 'pk_cols') c
        UNION ALL SELECT st ->> 'tier_key_col', 'tier key'
    LOOP
        IF coalesce(jsonb_typeof(image -> col), 'null') = 'null' THEN
            RAISE EXCEPTION 'the row image of % lacks its % %', tbl, needed, quote_ident(col)
                USING ERRCODE = 'not_null_violation',
                      DETAIL = 'A routed row needs every primary-key column and the tier key: they say which row it is and where it lives.';
        END IF;
    END LOOP;

    BEGIN
        -- r.*, not r: a column of the table named r would be taken for the row
        EXECUTE format('SELECT to_jsonb(r.*), %s, tierdb.canonical_tier_key(r.%I) FROM jsonb_populate_record(NULL::%s, $1) r',
                       tierdb.pk_expr(tbl, st, 'r'), st ->> 'tier_key_col', tbl)
           INTO payload, pk, tier_key USING image;
    EXCEPTION WHEN data_exception OR integrity_constraint_violation THEN
        -- find the column whose value does not convert, to name it
        FOR col IN SELECT k FROM jsonb_object_keys(image) k ORDER BY k LOOP
            BEGIN
                EXECUTE format('SELECT (jsonb_populate_record(NULL::%s, jsonb_build_object(%L, $1 -> %L))).%I',
                               tbl, col, col, col) USING image;
            EXCEPTION WHEN OTHERS THEN
                -- Postgres' own error (a domain's check, a typmod's overflow) is the detail, its code kept
                GET STACKED DIAGNOSTICS problem = MESSAGE_TEXT, problem_code = RETURNED_SQLSTATE;
                RAISE EXCEPTION 'column % of % cannot take the value %', quote_ident(col), tbl, image -> col
                    USING ERRCODE = problem_code,
                          DETAIL = problem,
                          HINT = 'Give the value as the column''s type reads it (the JSON that to_jsonb() makes of a row of the table).';
            END;
        END LOOP;
        RAISE;
    END;
    IF full_row THEN
        payload := tierdb.check_row(tbl, payload, false);
    END IF;
    SELECT jsonb_object_agg(c, payload -> c) INTO key FROM jsonb_array_elements_text(st -> 'pk_cols') c;
END;
$$;

/*
 * The row of the table in `payload` (a normalised row image) with its
 * generated columns computed, refused with Postgres' own error unless it
 * obeys every constraint a plain INSERT of it would; `for_lake` also
 * refuses values the lake cannot hold (routing.c, tierdb_checked_row).
 */
CREATE FUNCTION tierdb.checked_row(row_ anyelement, for_lake boolean)
RETURNS anyelement
LANGUAGE c STRICT
AS 'MODULE_PATHNAME', 'tierdb_checked_row';

CREATE FUNCTION tierdb.check_row(tbl regclass, payload jsonb, for_lake boolean)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET extra_float_digits = 3
AS $$
DECLARE
    checked jsonb;
BEGIN
    EXECUTE format('SELECT to_jsonb(tierdb.checked_row(jsonb_populate_record(NULL::%s, $1), $2))', tbl)
       INTO checked USING payload, for_lake;
    RETURN checked;
END;
$$;

/* True when the tier key is one of the pk columns: a row's lake copy then has the row's own tier key. */
CREATE FUNCTION tierdb.tier_key_in_pk(st jsonb)
RETURNS boolean
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT (st -> 'pk_cols') ? (st ->> 'tier_key_col') $$;

/*
 * SQL text: "<r>.a = (<param> ->> 'a')::<base type of a> AND ...", the pk
 * columns of r against the key object in parameter <param>, compared
 * through the columns' base types so that no domain check (user code)
 * runs.  Each condition compares a column with an expression of a
 * parameter, so the cold scan takes it into the lake (cold_scan.c) and
 * reads only the partitions, files and row groups that may hold the key.
 */
CREATE FUNCTION tierdb.key_match(tbl regclass, st jsonb, r text, param text)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT string_agg(format('%I.%I = (%s ->> %L)::%s', r, c.col, param, c.col,
                             format_type(coalesce(nullif(t.typbasetype, 0), a.atttypid), NULL)), ' AND ' ORDER BY n)
      FROM jsonb_array_elements_text(st -> 'pk_cols') WITH ORDINALITY AS c(col, n)
      JOIN pg_attribute a ON a.attrelid = tbl AND a.attname = c.col
      JOIN pg_type t ON t.oid = a.atttypid
$$;

/*
 * Where the lake at S holds the row of `key` (its canonical tier key), or
 * NULL when it holds none.  Reads the lake: see the file comment.
 */
CREATE FUNCTION tierdb.lake_location(tbl regclass, st jsonb, key jsonb)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    loc bigint;
BEGIN
    IF st -> 'S' IS NULL OR st -> 'S' = 'null' THEN
        RETURN NULL;  -- nothing has reached the lake yet
    END IF;
    -- The cold rows at the statement's pin, whose S is st's (routed writes hold the cut-line FOR SHARE
    -- from the moment they read st): the lake at S merged with the delta, which the caller found holds
    -- no row of this pk.  Unlike tierdb.lake_scan, the cold scan takes the key's conditions, so the
    -- lookup reads only the lake files that may hold the key, not the whole lake.
    EXECUTE format('SELECT tierdb.canonical_tier_key(l.%I) FROM tierdb.cold_rows(NULL::%s) l WHERE %s LIMIT 1',
                   st ->> 'tier_key_col', tbl, tierdb.key_match(tbl, st, 'l', '$1'))
       INTO loc USING key;
    RETURN loc;
END;
$$;

/*
 * Where the pk's cold copies are: `lives` (the merged cold view, lake@S ⊕
 * delta, holds the row) and `lake_at` (the tier key of its lake copy, as
 * the fold must target it), from the delta row if there is one, else from
 * the lake.  `heap_had` says the pk was in the heap, so the lake has no
 * copy of it.
 */
CREATE FUNCTION tierdb.cold_location(tbl regclass, st jsonb, pk text, key jsonb, tier_key bigint, heap_had boolean,
                                     OUT lives boolean, OUT lake_at bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    e jsonb := tierdb.delta_entry(tbl, pk);
BEGIN
    IF e IS NOT NULL THEN
        lives := (e ->> 'op')::int = 0;
        lake_at := coalesce((e ->> 'old_tier_key')::bigint, (e ->> 'tier_key')::bigint);
    ELSIF heap_had THEN
        lives := false;
    ELSIF tierdb.tier_key_in_pk(st) THEN
        -- the copy, if any, is at this very tier key: no need to look
        lives := NULL;
        lake_at := tier_key;
    ELSE
        lake_at := tierdb.lake_location(tbl, st, key);
        lives := lake_at IS NOT NULL;
    END IF;
END;
$$;

/*
 * Serialises routed writes of one pk until commit.  A pk need not be a
 * declared constraint, so nothing else stops two sessions from routing the
 * same pk at once, one into the heap and one into the delta, leaving it in
 * both; the second now waits and then sees where the first put it.
 */
CREATE FUNCTION tierdb.lock_pk(st jsonb, pk text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(format('tierdb_pk_%s_%s', st ->> 'table_id', pk), 0));
    -- A direct table's S moves whenever one of its writers commits (src/direct.c), and the routed write
    -- places the pk's lake copy by the S it read: one that another commit moved meanwhile is retried.
    -- (SECURITY DEFINER for this read of the catalog; anyone may take an advisory lock anyway.)
    IF st ->> 'mode' = 'direct' AND EXISTS (
           SELECT FROM tierdb.cutline WHERE table_id = (st ->> 'table_id')::bigint
              AND lake_snapshot_id IS DISTINCT FROM (st ->> 'S')::bigint) THEN
        RAISE EXCEPTION 'could not serialize access due to a concurrent lake commit of direct table %',
                        (st ->> 'table_id')::bigint::oid::regclass
            USING ERRCODE = 'serialization_failure',
                  HINT = 'Retry the statement.';
    END IF;
END;
$$;

/* Refuses a cold tier key below the retention line R. */
CREATE FUNCTION tierdb.check_retention(tbl regclass, st jsonb, tier_key bigint)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r bigint := (st ->> 'R')::bigint;
BEGIN
    IF r IS NOT NULL AND tier_key < r THEN
        RAISE EXCEPTION 'tier key % of % is below the retention line %',
                        tierdb.tier_key_text(tier_key, st ->> 'tier_key_type'), tbl,
                        tierdb.tier_key_text(r, st ->> 'tier_key_type')
            USING ERRCODE = 'check_violation',
                  DETAIL = 'The lake expired rows below the retention line on purpose; nothing was written.',
                  HINT = 'Only rows at or above the retention line can be written.';
    END IF;
END;
$$;

/*
 * True when the row with tier key `tier_key` belongs to the heap: at or
 * above T, or everywhere with --keep-heap (whose trigger mirrors heap
 * writes into the delta).
 */
CREATE FUNCTION tierdb.routes_hot(st jsonb, tier_key bigint)
RETURNS boolean
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT (st ->> 'keep_heap')::boolean OR st -> 'T' IS NULL OR st -> 'T' = 'null'
           OR tier_key >= (st ->> 'T')::bigint
$$;

/* "tier key X is at or above T Y" / "below T Y", for notices. */
CREATE FUNCTION tierdb.route_reason(st jsonb, tier_key bigint)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT format('tier key %s is %s T %s', tierdb.tier_key_text(tier_key, st ->> 'tier_key_type'),
                  CASE WHEN tierdb.routes_hot(st, tier_key) THEN 'at or above' ELSE 'below' END,
                  coalesce(tierdb.tier_key_text((st ->> 'T')::bigint, st ->> 'tier_key_type'), '(none)'))
$$;

/*
 * Runs a heap statement of a routed write.  A partition that tiering has
 * sealed refuses it (tierdb.sealed_partition_guard); that becomes a
 * retryable error here, see the file comment.  Returns the row count.
 */
CREATE FUNCTION tierdb.heap_exec(tbl regclass, st jsonb, tier_key bigint, statement text, arg jsonb)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n bigint;
    problem text;
BEGIN
    EXECUTE statement USING arg;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
EXCEPTION WHEN object_not_in_prerequisite_state THEN
    GET STACKED DIAGNOSTICS problem = MESSAGE_TEXT;
    IF problem NOT LIKE '%is being moved to the lake' THEN
        RAISE;
    END IF;
    RAISE EXCEPTION 'cannot write this row of % now: its heap partition is being moved to the lake', tbl
        USING ERRCODE = 'serialization_failure',
              DETAIL = format('%s, so the row belongs to the heap, but %s.', tierdb.route_reason(st, tier_key), problem),
              HINT = 'Retry the call once the tiering run has finished (tierdb status shows it); the row then routes to the delta.';
END;
$$;

/* ------------------------------------------------------------ the heap side */

/*
 * SQL text " AND r.<tier key> >= <T>": what the heap holds for routing.
 * Rows below T are the lake's, also while the partitions that held them
 * wait to be dropped after tiering; with --keep-heap (or before the first
 * T) the heap holds every row.  The condition also makes the statements
 * below read the heap only when transparent reads are on: their union's
 * cold branch holds rows below T alone, so it adds nothing (and a
 * constant bound at or above T plans the table heap-only, transparent.c).
 */
CREATE FUNCTION tierdb.heap_scope(st jsonb, r text)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN tierdb.routes_hot(st, NULL) THEN ''
                ELSE format(' AND %I.%I >= %s', r, st ->> 'tier_key_col',
                            tierdb.tier_key_literal((st ->> 'T')::bigint, st ->> 'tier_key_type')) END
$$;

/* Whether the heap holds the pk of `key` (at or above T, see heap_scope). */
CREATE FUNCTION tierdb.heap_has(tbl regclass, st jsonb, key jsonb)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    found boolean;
BEGIN
    EXECUTE format('SELECT EXISTS (SELECT FROM %s t, jsonb_populate_record(NULL::%s, $1) k WHERE %s%s)',
                   tbl, tbl, tierdb.pk_match(st, 't', 'k'), tierdb.heap_scope(st, 't'))
       INTO found USING key;
    RETURN found;
END;
$$;

/* Deletes the heap rows of the pk of `key` (see heap_scope); returns how many. */
CREATE FUNCTION tierdb.heap_delete(tbl regclass, st jsonb, tier_key bigint, key jsonb)
RETURNS bigint
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT tierdb.heap_exec(tbl, st, tier_key,
                            format('DELETE FROM %s t USING jsonb_populate_record(NULL::%s, $1) k WHERE %s%s',
                                   tbl, tbl, tierdb.pk_match(st, 't', 'k'), tierdb.heap_scope(st, 't')),
                            key)
$$;

/*
 * Upserts the row into the heap: UPDATE of the pk's row (which moves it to
 * another partition if its tier key changed), else INSERT.  The pk need not
 * be a declared constraint (SPEC §8), so no ON CONFLICT.  Returns true when
 * it inserted.
 */
CREATE FUNCTION tierdb.heap_upsert(tbl regclass, st jsonb, tier_key bigint, payload jsonb)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    cols text;
    values_ text;
BEGIN
    SELECT string_agg(format('%I', c.name), ', '), string_agg(format('r.%I', c.name), ', ')
      INTO cols, values_
      FROM tierdb.table_columns(tbl) c WHERE NOT c.generated;
    IF tierdb.heap_exec(tbl, st, tier_key,
                        format('UPDATE %s AS t SET (%s) = ROW(%s) FROM jsonb_populate_record(NULL::%s, $1) r WHERE %s%s',
                               tbl, cols, values_, tbl, tierdb.pk_match(st, 't', 'r'), tierdb.heap_scope(st, 't')),
                        payload) > 0 THEN
        RETURN false;
    END IF;
    PERFORM tierdb.heap_exec(tbl, st, tier_key,
                             format('INSERT INTO %s (%s) SELECT %s FROM jsonb_populate_record(NULL::%s, $1) r',
                                    tbl, cols, values_, tbl),
                             payload);
    RETURN true;
END;
$$;

/* ------------------------------------------------------------ routed writes */

/*
 * Entry points (routing.c, tierdb_routing_entry): each documented function
 * that writes the catalog is a C function that opens the routing window on
 * its table and runs its body tierdb.<name>_body as the caller.  Only
 * inside that window do the catalog bridges write; the bodies cannot be
 * executed from SQL (revoked below).
 */

/*
 * tierdb_upsert(table, row image): writes one full row where its tier key
 * says it lives (SPEC §7).  Columns missing from the image are NULL;
 * generated columns are computed (a value given for one must be the one it
 * computes).  The row must pass every check a plain INSERT of it would
 * (typmods, domains, NOT NULL, CHECK), and a row bound for the lake must
 * hold only values the lake can (no NaN in a decimal).  Returns 'heap' or
 * 'delta'.  Needs SELECT, INSERT and UPDATE on the table (as INSERT ... ON
 * CONFLICT DO UPDATE does), and DELETE when the write moves a heap row
 * below T.
 */
CREATE FUNCTION tierdb_upsert(tbl regclass, row_image jsonb) RETURNS text
LANGUAGE c AS 'MODULE_PATHNAME', 'tierdb_routing_entry';

CREATE FUNCTION tierdb.tierdb_upsert_body(tbl regclass, row_image jsonb)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    st jsonb;
    n record;
    cold record;
    heap_had boolean;
    moved boolean;
    version bigint;
    old_tier_key bigint;
BEGIN
    IF tbl IS NULL OR row_image IS NULL THEN
        RAISE EXCEPTION 'tierdb_upsert needs a table and a row image, not NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM tierdb.require_privileges(tbl, ARRAY['SELECT', 'INSERT', 'UPDATE']);
    st := tierdb.routing_state(tbl, true);
    PERFORM tierdb.check_routable(tbl, st);
    SELECT * INTO n FROM tierdb.normalize_row(tbl, st, row_image);
    PERFORM tierdb.lock_pk(st, n.pk);

    IF tierdb.routes_hot(st, n.tier_key) THEN
        IF NOT tierdb.heap_upsert(tbl, st, n.tier_key, n.payload) THEN
            PERFORM tierdb.explain_route(format('%s: hot, updated the row of pk %s in %s',
                                                tierdb.route_reason(st, n.tier_key), n.pk, tbl));
            RETURN 'heap';
        END IF;
        -- a new heap row: if the pk lived cold, this write moved it here
        -- (with --keep-heap nothing lives only cold)
        IF NOT (st ->> 'keep_heap')::boolean THEN
            SELECT * INTO cold FROM tierdb.cold_location(tbl, st, n.pk, n.key, n.tier_key, false);
            moved := cold.lives;
        END IF;
        IF moved THEN
            version := tierdb.delta_tombstone(tbl, n.pk, cold.lake_at, NULL);
            PERFORM tierdb.explain_route(format('%s: hot, inserted pk %s into %s and moved it out of the lake'
                                                ' (tombstone at %s, delta version %s)',
                                                tierdb.route_reason(st, n.tier_key), n.pk, tbl,
                                                tierdb.tier_key_text(cold.lake_at, st ->> 'tier_key_type'), version));
        ELSE
            PERFORM tierdb.explain_route(format('%s: hot, inserted pk %s into %s',
                                                tierdb.route_reason(st, n.tier_key), n.pk, tbl));
        END IF;
        RETURN 'heap';
    END IF;

    PERFORM tierdb.check_retention(tbl, st, n.tier_key);
    PERFORM tierdb.check_row(tbl, n.payload, true);
    -- a heap row of this pk moves below T: it leaves the heap
    heap_had := tierdb.heap_has(tbl, st, n.key);
    IF heap_had THEN
        PERFORM tierdb.heap_delete(tbl, st, n.tier_key, n.key);
    END IF;
    SELECT * INTO cold FROM tierdb.cold_location(tbl, st, n.pk, n.key, n.tier_key, heap_had);
    IF cold.lake_at IS DISTINCT FROM n.tier_key THEN
        old_tier_key := cold.lake_at;
    END IF;
    version := tierdb.delta_put(tbl, n.pk, n.tier_key, old_tier_key, n.payload);
    PERFORM tierdb.explain_route(format('%s: cold, pk %s written to tierdb.delta as version %s%s',
                                        tierdb.route_reason(st, n.tier_key), n.pk, version,
                                        CASE WHEN heap_had THEN format(' (moved out of the heap of %s)', tbl)
                                             WHEN old_tier_key IS NOT NULL
                                             THEN format(' (its lake copy at %s is replaced)',
                                                         tierdb.tier_key_text(old_tier_key, st ->> 'tier_key_type'))
                                             ELSE '' END));
    RETURN 'delta';
END;
$$;

/*
 * The routed delete behind the tierdb_delete overloads: `key` is a bare
 * JSON value for a one-column pk or an object of the pk columns;
 * `tier_key` is canonical, given as a value of the family `given`.
 * Returns 'heap', 'delta', or 'none' when the routed tier has no such row.
 */
CREATE FUNCTION tierdb.delete_routed(tbl regclass, key jsonb, tier_key bigint, given text) RETURNS text
LANGUAGE c AS 'MODULE_PATHNAME', 'tierdb_routing_entry';

CREATE FUNCTION tierdb.delete_routed_body(tbl regclass, key jsonb, tier_key bigint, given text)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    st jsonb;
    pk_cols text[];
    image jsonb;
    n record;
    cold record;
    version bigint;
BEGIN
    IF tbl IS NULL OR key IS NULL OR tier_key IS NULL THEN
        RAISE EXCEPTION 'tierdb_delete needs a table, a key and a tier key, not NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM tierdb.require_privileges(tbl, ARRAY['SELECT', 'DELETE']);
    st := tierdb.routing_state(tbl, true);
    PERFORM tierdb.check_routable(tbl, st);
    IF st ->> 'tier_key_type' <> given THEN
        RAISE EXCEPTION 'the tier key % of % is a %, not a %', quote_ident(st ->> 'tier_key_col'), tbl,
                        st ->> 'tier_key_type', given
            USING ERRCODE = 'datatype_mismatch',
                  HINT = format('Pass the tier key as a %s, e.g. tierdb_delete(%L, key, <value>::%s).',
                                st ->> 'tier_key_type', tbl::text, st ->> 'tier_key_type');
    END IF;
    SELECT array_agg(c) INTO pk_cols FROM jsonb_array_elements_text(st -> 'pk_cols') c;
    IF jsonb_typeof(key) = 'object' THEN
        IF NOT (key ?& pk_cols AND (SELECT count(*) FROM jsonb_object_keys(key)) = cardinality(pk_cols)) THEN
            RAISE EXCEPTION 'the key % does not name exactly the primary-key columns of %', key, tbl
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = format('Pass {%s}.', (SELECT string_agg(format('"%s": <value>', c), ', ') FROM unnest(pk_cols) c));
        END IF;
        image := key;
    ELSIF cardinality(pk_cols) = 1 THEN
        image := jsonb_build_object(pk_cols[1], key);
    ELSE
        RAISE EXCEPTION 'the primary key of % has % columns: pass the key as an object', tbl, cardinality(pk_cols)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = format('Pass {%s}.', (SELECT string_agg(format('"%s": <value>', c), ', ') FROM unnest(pk_cols) c));
    END IF;
    -- the key's values are checked and made canonical like an upsert's row image
    SELECT * INTO n
      FROM tierdb.normalize_row(tbl, st, image || jsonb_build_object(st ->> 'tier_key_col',
                                                                   CASE given WHEN 'bigint' THEN to_jsonb(tier_key)
                                                                   ELSE to_jsonb(tierdb.tier_key_text(tier_key, given)) END),
                             false);
    PERFORM tierdb.lock_pk(st, n.pk);

    IF tierdb.routes_hot(st, tier_key) THEN
        IF tierdb.heap_delete(tbl, st, tier_key, n.key) = 0 THEN
            PERFORM tierdb.explain_route(format('%s: hot, but %s holds no row of pk %s: nothing deleted',
                                                tierdb.route_reason(st, tier_key), tbl, n.pk));
            RETURN 'none';
        END IF;
        PERFORM tierdb.explain_route(format('%s: hot, deleted pk %s from %s', tierdb.route_reason(st, tier_key), n.pk, tbl));
        RETURN 'heap';
    END IF;

    PERFORM tierdb.check_retention(tbl, st, tier_key);
    SELECT * INTO cold FROM tierdb.cold_location(tbl, st, n.pk, n.key, tier_key, false);
    IF cold.lives IS NOT DISTINCT FROM false THEN
        PERFORM tierdb.explain_route(format('%s: cold, but the lake and the delta hold no row of pk %s: nothing deleted',
                                            tierdb.route_reason(st, tier_key), n.pk));
        RETURN 'none';
    END IF;
    version := tierdb.delta_tombstone(tbl, n.pk, cold.lake_at, NULL);
    PERFORM tierdb.explain_route(format('%s: cold, tombstone for pk %s written to tierdb.delta as version %s',
                                        tierdb.route_reason(st, tier_key), n.pk, version));
    RETURN 'delta';
END;
$$;

/*
 * tierdb_delete(table, key, tier key): deletes one row where its tier key
 * says it lives (SPEC §7), one overload per tier-key family.  Needs SELECT
 * and DELETE on the table.
 */
CREATE FUNCTION tierdb_delete(tbl regclass, key jsonb, tier_key bigint) RETURNS text
LANGUAGE sql SET search_path = pg_catalog, pg_temp
RETURN tierdb.delete_routed(tbl, key, tierdb.canonical_tier_key(tier_key), 'bigint');

CREATE FUNCTION tierdb_delete(tbl regclass, key jsonb, tier_key timestamptz) RETURNS text
LANGUAGE sql SET search_path = pg_catalog, pg_temp
RETURN tierdb.delete_routed(tbl, key, tierdb.canonical_tier_key(tier_key), 'timestamptz');

CREATE FUNCTION tierdb_delete(tbl regclass, key jsonb, tier_key timestamp) RETURNS text
LANGUAGE sql SET search_path = pg_catalog, pg_temp
RETURN tierdb.delete_routed(tbl, key, tierdb.canonical_tier_key(tier_key), 'timestamp');

CREATE FUNCTION tierdb_delete(tbl regclass, key jsonb, tier_key date) RETURNS text
LANGUAGE sql SET search_path = pg_catalog, pg_temp
RETURN tierdb.delete_routed(tbl, key, tierdb.canonical_tier_key(tier_key), 'date');

/* ------------------------------------------------------------ the explicit read protocol */

/*
 * SPEC §5 step 1: pins the table's (T, S) for `ttl` and returns the pin.
 * Needs SELECT on the table; the ttl may not exceed tierdb.max_pin_ttl
 * (1 day unless a superuser says otherwise).  The caller owns the pin: end
 * it with tierdb_read_end(pin_id) as the same role.
 */
CREATE FUNCTION tierdb.read_begin(tbl regclass, ttl interval) RETURNS jsonb
LANGUAGE c AS 'MODULE_PATHNAME', 'tierdb_routing_entry';

CREATE FUNCTION tierdb.read_begin_body(tbl regclass, ttl interval)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    pin jsonb;
BEGIN
    IF tbl IS NULL THEN
        RAISE EXCEPTION 'tierdb_read_begin needs a table, not NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF ttl IS NULL OR ttl <= interval '0' THEN
        RAISE EXCEPTION 'a read pin needs a positive ttl, not %', coalesce(ttl::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    pin := tierdb.pin_insert(tbl, ttl);
    IF pin IS NULL THEN
        PERFORM tierdb.check_routable(tbl, tierdb.routing_state(tbl, false));
    END IF;
    RETURN pin;
END;
$$;

CREATE FUNCTION tierdb_read_begin(tbl regclass, ttl interval DEFAULT '15 minutes')
RETURNS TABLE(pin_id bigint, tier_key_hi bigint, lake_snapshot_id bigint, metadata_location text,
              expires_at timestamptz)
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT (p ->> 'pin_id')::bigint, (p ->> 'tier_key_hi')::bigint, (p ->> 'lake_snapshot_id')::bigint,
           p ->> 'metadata_location', (p ->> 'expires_at')::timestamptz
      FROM tierdb.read_begin(tbl, ttl) AS p
$$;

/*
 * SPEC §5 step 6: deletes the pin; false if there was none.  Only the role
 * that took the pin, or a superuser, may end it.
 */
CREATE FUNCTION tierdb_read_end(pin_id bigint) RETURNS boolean
LANGUAGE c AS 'MODULE_PATHNAME', 'tierdb_routing_entry';

CREATE FUNCTION tierdb.tierdb_read_end_body(pin_id bigint)
RETURNS boolean
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$ SELECT tierdb.pin_delete(pin_id) $$;

REVOKE EXECUTE ON FUNCTION tierdb.tierdb_upsert_body(regclass, jsonb),
                           tierdb.delete_routed_body(regclass, jsonb, bigint, text),
                           tierdb.read_begin_body(regclass, interval),
                           tierdb.tierdb_read_end_body(bigint)
       FROM PUBLIC;

/*
 * The exact union SQL of a seam read (SPEC §5 steps 2-5), to run as it is:
 * the heap at or above T, and tierdb.cold_rows() at (S, T): the lake at S
 * below T merged with the delta (cold_scan.c).  T and S come from the pin
 * when one is given, else from the current cut-line.  Needs SELECT on the
 * table, and so does the SQL: no privilege on the catalog.
 */
CREATE FUNCTION tierdb_rewrite_scan(tbl regclass, pin_id bigint DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    st jsonb;
    t_literal text;
    cols text;
BEGIN
    IF tbl IS NULL THEN
        RAISE EXCEPTION 'tierdb_rewrite_scan needs a table, not NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    st := tierdb.scan_state(tbl, pin_id);
    PERFORM tierdb.check_routable(tbl, st);
    t_literal := tierdb.tier_key_literal((st ->> 'T')::bigint, st ->> 'tier_key_type');
    IF t_literal IS NULL THEN
        RAISE EXCEPTION 'table % has no cut-line yet', tbl
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Its registration sets one: check tierdb status.';
    END IF;
    SELECT string_agg(format('%I', c.name), ', ') INTO cols FROM tierdb.table_columns(tbl) c;
    RETURN format(
        'SELECT %1$s FROM %2$s WHERE %3$I >= %4$s'
        || E'\nUNION ALL\n'
        || 'SELECT %1$s FROM tierdb.cold_rows(NULL::%2$s, %5$s, %6$s)',
        cols, tbl, st ->> 'tier_key_col', t_literal,
        coalesce(st ->> 'S', 'NULL'), (st ->> 'T')::bigint);
END;
$$;

/* ------------------------------------------------------------ version */

/* 'tierdb <extension version> (catalog <schema_meta.version>)'. */
CREATE FUNCTION tierdb_version()
RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT format('tierdb %s (catalog %s)',
                  (SELECT extversion FROM pg_extension WHERE extname = 'tierdb'),
                  (SELECT version FROM tierdb.schema_meta))
$$;
