/*
 * 20-lake-scan.sql: tierdb.lake_scan(), the cold branch of a read as a
 * set-returning function (extension/src/lake_scan.c); a part of the install
 * script tierdb--0.1.sql.
 *
 *     SELECT * FROM tierdb.lake_scan(NULL::public.events, 123);
 *
 * returns the lake rows of the registered table whose row type the first
 * argument has, at lake snapshot 123, with Iceberg's position and equality
 * deletes applied.  It does not merge tierdb.delta (SPEC §5 step 4): that is
 * SQL the read protocol adds around it.  A null snapshot (a table with no
 * lake snapshot yet, tierdb.cutline.lake_snapshot_id IS NULL) gives no rows.
 *
 * Security: the lake location comes only from tierdb.tables, never from the
 * caller, and the caller needs SELECT on the table itself (not on the
 * catalog), as for reading its heap rows.
 */

CREATE FUNCTION tierdb.lake_scan(rowtype anyelement, snapshot_id bigint)
RETURNS SETOF anyelement
LANGUAGE C STABLE
AS 'MODULE_PATHNAME', 'tierdb_lake_scan';

COMMENT ON FUNCTION tierdb.lake_scan(anyelement, bigint) IS
    'the lake rows of a registered table at a lake snapshot, Iceberg deletes applied (no delta merge)';
