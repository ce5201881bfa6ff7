/*
 * 45-dml-guard.sql: what the guard of plain DML (extension/src/
 * dml_guard.c) puts into a statement; a part of the install script
 * tierdb--0.1.sql.
 *
 * With transparent reads on, every new tier-key value a plain INSERT,
 * UPDATE, ON CONFLICT DO UPDATE or MERGE writes into a registered tiered
 * table is passed through tierdb.tier_key_check(table, value), which
 * returns it when it is at or above the cut-line T the statement runs
 * with and otherwise refuses the row, naming tierdb_upsert: rows below T
 * live in the lake, which plain DML does not write.
 */
CREATE FUNCTION tierdb.tier_key_check(tbl regclass, tier_key anyelement) RETURNS anyelement
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'tierdb_tier_key_check';

COMMENT ON FUNCTION tierdb.tier_key_check(regclass, anyelement) IS
    'the tier key of a row plain DML writes into a tiered table, if at or above its cut-line; an error otherwise';
