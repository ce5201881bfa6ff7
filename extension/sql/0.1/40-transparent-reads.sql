/*
 * 40-transparent-reads.sql: what transparent reads (extension/src/
 * transparent.c) put into a query; a part of the install script
 * tierdb--0.1.sql.
 *
 * A query on a registered tiered table reads
 *
 *     SELECT ... FROM t WHERE tier_key >= (SELECT tierdb.seam_t_<type>('t'::regclass::oid))
 *     UNION ALL
 *     SELECT ... FROM tierdb.cold_rows(NULL::t)
 *
 * Both read with the statement's pin (seam.c): the reader key held shared
 * until the transaction ends, and the cut-line (T, S) read after it.
 */

-- T of the statement's pin, in the tier key's type (one function per family
-- so that run-time partition pruning compares with the key's own operator).
CREATE FUNCTION tierdb.seam_t_bigint(relid oid) RETURNS bigint
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'tierdb_seam_t_bigint';

CREATE FUNCTION tierdb.seam_t_timestamptz(relid oid) RETURNS timestamptz
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'tierdb_seam_t_timestamptz';

CREATE FUNCTION tierdb.seam_t_timestamp(relid oid) RETURNS timestamp
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'tierdb_seam_t_timestamp';

CREATE FUNCTION tierdb.seam_t_date(relid oid) RETURNS date
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'tierdb_seam_t_date';

-- lake@S ⊕ delta below T for the statement's pin: the cold branch.  The
-- planner runs it as the custom scan "TierDB Cold Scan"; called directly it
-- is a plain set-returning function returning the same rows.  PARALLEL
-- SAFE so that a query over a tiered table can have a parallel plan: the
-- cold scan's workers read at the leader's pin (cold_scan.c), and the
-- planner keeps the function itself, where it still runs, in the leader.
CREATE FUNCTION tierdb.cold_rows(rowtype anyelement) RETURNS SETOF anyelement
LANGUAGE C STABLE PARALLEL SAFE ROWS 100000
AS 'MODULE_PATHNAME', 'tierdb_cold_rows';

COMMENT ON FUNCTION tierdb.cold_rows(anyelement) IS
    'the cold rows of a registered tiered table (lake at the pinned S, delta merged), as transparent reads see them';

-- The same at an explicit pin (S, T), for the read protocol's union SQL
-- (tierdb_rewrite_scan): the lake at S and the delta below T.
CREATE FUNCTION tierdb.cold_rows(rowtype anyelement, snapshot_id bigint, tier_key_hi bigint)
RETURNS SETOF anyelement
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL RESTRICTED ROWS 100000
AS 'MODULE_PATHNAME', 'tierdb_cold_rows';

COMMENT ON FUNCTION tierdb.cold_rows(anyelement, bigint, bigint) IS
    'the cold rows of a registered tiered table at a given lake snapshot S and cut-line T (delta merged)';

-- Registering, changing or unregistering a table invalidates the plans that
-- read it in every session (prepared statements included), so they are
-- planned again with or without the lake.
CREATE FUNCTION tierdb.registration_changed() RETURNS trigger
LANGUAGE C
AS 'MODULE_PATHNAME', 'tierdb_registration_changed';

CREATE TRIGGER registration_changed AFTER INSERT OR UPDATE OR DELETE ON tierdb.tables
    FOR EACH ROW EXECUTE FUNCTION tierdb.registration_changed();

-- So does advancing the cut-line T: plans that read the heap only were
-- planned for the old T (the "TierDB Heap-Only Guard" on top of such a
-- plan stops a statement that was planned just before an advance).
CREATE TRIGGER cutline_advanced AFTER UPDATE OF tier_key_hi ON tierdb.cutline
    FOR EACH ROW WHEN (OLD.tier_key_hi IS DISTINCT FROM NEW.tier_key_hi)
    EXECUTE FUNCTION tierdb.registration_changed();

-- Every statement that writes tierdb.cutline is counted in shared memory,
-- in every replication role, so that a statement reading the heap only can
-- trust the cut-line its session read last while nothing was written since
-- (extension/src/cutline_changes.h).
CREATE FUNCTION tierdb.cutline_writing() RETURNS trigger
LANGUAGE C
AS 'MODULE_PATHNAME', 'tierdb_cutline_writing';

CREATE TRIGGER cutline_writing BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON tierdb.cutline
    FOR EACH STATEMENT EXECUTE FUNCTION tierdb.cutline_writing();
ALTER TABLE tierdb.cutline ENABLE ALWAYS TRIGGER cutline_writing;

-- Readers of tiered tables call these from their own queries: they need the
-- schema, and the functions check the table's own privileges.
GRANT USAGE ON SCHEMA tierdb TO PUBLIC;
