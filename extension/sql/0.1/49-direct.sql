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
