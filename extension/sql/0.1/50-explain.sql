/*
 * 50-explain.sql: tierdb_explain(text) (SPEC §7), where a statement's rows
 * come from or go to, without running it; a part of the install script
 * tierdb--0.1.sql, which extension/Makefile assembles from sql/0.1/.
 *
 * The statement's reads are explained in C (src/explain.c): it plans the
 * statement as a real execution would and asks each cold scan what it
 * would read.  The routes of tierdb_upsert and tierdb_delete calls are
 * explained here, by the routing rules of 30-routing.sql applied to the
 * current cut-line, without taking its lock and without writing: at or
 * above T (or with --keep-heap) the heap, below T the delta, below the
 * retention line R refused.
 */

/*
 * tierdb_explain(statement) RETURNS SETOF text: one line per fact.  Unlike
 * the other tierdb_* functions it pins no search_path: the statement must
 * resolve its names as the caller's own session would run it.  (It looks
 * up its helpers schema-qualified, by name and argument types.)
 */
CREATE FUNCTION tierdb_explain(statement text)
RETURNS SETOF text
LANGUAGE c STRICT
AS 'MODULE_PATHNAME', 'tierdb_explain';

/*
 * The line for one routed write of `what` (e.g. 'pk 42') with canonical
 * tier key `tier_key`, from the routing state st (tierdb.routing_state).
 */
CREATE FUNCTION tierdb.explain_route_line(tbl regclass, st jsonb, call text, what text, tier_key bigint)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    key_type text := st ->> 'tier_key_type';
    r bigint := (st ->> 'R')::bigint;
    cold_target text := CASE call WHEN 'tierdb_delete' THEN 'the delta (a tombstone in tierdb.delta)'
                                  ELSE 'the delta (tierdb.delta)' END;
BEGIN
    IF (st ->> 'keep_heap')::boolean THEN
        RETURN format('%s: %s of %s routes to the heap: the table keeps its heap (--keep-heap)', tbl, call, what);
    END IF;
    IF tierdb.routes_hot(st, tier_key) THEN
        RETURN format('%s: %s of %s routes to the heap: %s', tbl, call, what, tierdb.route_reason(st, tier_key));
    END IF;
    IF r IS NOT NULL AND tier_key < r THEN
        RETURN format('%s: %s of %s is refused: tier key %s is below the retention line %s; nothing would be written',
                      tbl, call, what, tierdb.tier_key_text(tier_key, key_type), tierdb.tier_key_text(r, key_type));
    END IF;
    RETURN format('%s: %s of %s routes to %s: %s%s', tbl, call, what, cold_target,
                  tierdb.route_reason(st, tier_key),
                  CASE WHEN r IS NULL THEN ''
                       ELSE format(' and at or above the retention line %s', tierdb.tier_key_text(r, key_type)) END);
END;
$$;

/* Where tierdb_upsert(tbl, row_image) would write; its checks of the row image fail alike. */
CREATE FUNCTION tierdb.explain_upsert(tbl regclass, row_image jsonb)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    st jsonb := tierdb.routing_state(tbl, false);
    n record;
BEGIN
    PERFORM tierdb.check_routable(tbl, st);
    SELECT * INTO n FROM tierdb.normalize_row(tbl, st, row_image);
    RETURN tierdb.explain_route_line(tbl, st, 'tierdb_upsert', format('pk %s', n.pk), n.tier_key);
END;
$$;

/*
 * Where tierdb_delete(tbl, key, tier key) would delete; tier_key is
 * canonical, given as a value of the family `given`.
 */
CREATE FUNCTION tierdb.explain_delete(tbl regclass, key jsonb, tier_key bigint, given text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    st jsonb := tierdb.routing_state(tbl, false);
BEGIN
    PERFORM tierdb.check_routable(tbl, st);
    IF st ->> 'tier_key_type' <> given THEN
        RAISE EXCEPTION 'tierdb_delete on % would fail: its tier key % is a %, and the call passes a %',
                        tbl, quote_ident(st ->> 'tier_key_col'), st ->> 'tier_key_type', given
            USING ERRCODE = 'datatype_mismatch',
                  HINT = format('Pass the tier key as a %s.', st ->> 'tier_key_type');
    END IF;
    RETURN tierdb.explain_route_line(tbl, st, 'tierdb_delete', format('key %s', key), tier_key);
END;
$$;
