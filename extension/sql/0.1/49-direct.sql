/* ------------------------------------------------------------ direct tables */

/*
 * A direct table's writes below the cut-line take the tiered paths into
 * tierdb.delta, and are committed to the lake as one snapshot when their
 * transaction commits (src/direct.c, docs/direct.md): this trigger notes
 * the direct tables a transaction wrote delta rows of.
 */
CREATE FUNCTION tierdb.direct_note()
RETURNS trigger
LANGUAGE c
AS 'MODULE_PATHNAME', 'tierdb_direct_note';

CREATE TRIGGER tierdb_direct_pending
    AFTER INSERT OR UPDATE ON tierdb.delta
    FOR EACH ROW EXECUTE FUNCTION tierdb.direct_note();

/*
 * The parts of canonical pk text `pk` of an n-column key (SPEC §4): one
 * column's text is the value itself; a composite key joins the parts with
 * chr(31), each part's backslashes and chr(31) escaped with a backslash.
 */
CREATE FUNCTION tierdb.pk_parts(pk text, n int)
RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN n = 1 THEN ARRAY[pk] ELSE
        (SELECT array_agg(regexp_replace(p.m[1], '\\(.)', '\1', 'g') ORDER BY p.i)
           FROM regexp_matches(pk, '((?:[^\\' || chr(31) || ']|\\.)*)(' || chr(31) || '|$)', 'g')
                WITH ORDINALITY AS p(m, i)
          WHERE p.i <= n)
    END
$$;

/*
 * tierdb-spark's parallel writes (src/direct.c, "commits made by
 * tierdb-spark"; docs/direct.md): the driver brackets its own lake commit
 * with these, in one Postgres transaction.
 */
CREATE FUNCTION tierdb.direct_lake_begin(tbl regclass, privileges text[])
RETURNS jsonb
LANGUAGE c STRICT
AS 'MODULE_PATHNAME', 'tierdb_direct_lake_begin';

CREATE FUNCTION tierdb.direct_lake_publish(tbl regclass, privileges text[], op_id uuid, base bigint,
                                           snapshot bigint, rows bigint)
RETURNS void
LANGUAGE c
AS 'MODULE_PATHNAME', 'tierdb_direct_lake_publish';

/*
 * Why the rows of a write to direct table tbl cannot be written as lake
 * files outside Postgres (by tierdb-spark's executors), or NULL when they
 * can.  Files skip what a plain INSERT runs, so only a table where nothing
 * but the column types and NOT NULL judges a row qualifies, and its
 * columns must be of the types tierdb-spark converts exactly as Postgres
 * would.  The merge key must hold the tier key: then a key's rows all live
 * at one tier key, its lake copy in the partition the new row goes to and
 * never in the heap, so equality deletes of the batch's keys in their own
 * partitions replace them, with no lookup.  Otherwise the write goes
 * through Postgres (the routed path), which decides each row there.
 */
CREATE FUNCTION tierdb.direct_files_refusal(tbl regclass)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    st jsonb := tierdb.routing_state(tbl, false);
    what text;
BEGIN
    IF st ->> 'mode' IS DISTINCT FROM 'direct' THEN
        RETURN format('%s is not a direct table', tbl);
    ELSIF NOT tierdb.tier_key_in_pk(st) THEN
        RETURN format('its merge key %s does not hold the tier key %s', st -> 'pk_cols', st ->> 'tier_key_col');
    ELSIF row_security_active(tbl) THEN
        RETURN 'row-level security applies to the writing role';
    END IF;
    SELECT format('it has the trigger %I', tgname) INTO what FROM pg_trigger
     WHERE tgrelid = tbl AND NOT tgisinternal AND tgenabled <> 'D' AND tgname NOT LIKE 'tierdb%' LIMIT 1;
    IF what IS NULL THEN
        SELECT format('it has the %s constraint %I', CASE contype WHEN 'c' THEN 'CHECK' WHEN 'f' THEN 'FOREIGN KEY'
                                                                  ELSE 'EXCLUDE' END, conname)
          INTO what FROM pg_constraint WHERE conrelid = tbl AND contype IN ('c', 'f', 'x') LIMIT 1;
    END IF;
    IF what IS NULL THEN
        SELECT format('its column %I is %s', a.attname, CASE WHEN a.attgenerated <> '' THEN 'generated'
                                                            ELSE format('of type %s', format_type(a.atttypid, a.atttypmod))
                                                       END)
          INTO what
          FROM pg_attribute a
         WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped
           AND (a.attgenerated <> ''
                OR NOT (a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype, 'float4'::regtype,
                                       'float8'::regtype, 'text'::regtype, 'varchar'::regtype, 'bool'::regtype,
                                       'date'::regtype, 'timestamp'::regtype, 'timestamptz'::regtype,
                                       'bytea'::regtype, 'uuid'::regtype)
                        OR (a.atttypid = 'numeric'::regtype AND a.atttypmod >= 4
                            AND ((a.atttypmod - 4) >> 16) BETWEEN 1 AND 38
                            AND ((a.atttypmod - 4) & 65535) <= ((a.atttypmod - 4) >> 16))))
         ORDER BY a.attnum LIMIT 1;
    END IF;
    RETURN what;
END;
$$;
