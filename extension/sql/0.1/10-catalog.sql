/*
 * 10-catalog.sql: the TierDB catalog, version 1 (SPEC §4); the first part of
 * the install script tierdb--0.1.sql, which extension/Makefile assembles from
 * the parts in sql/0.1/.
 *
 * The catalog is the only channel between the daemon, the extension's
 * readers and writers, and external clients such as Spark: every table,
 * column and view name here is protocol.  Columns stay portable (bigint,
 * text, jsonb) so any Postgres client can read and write them.
 *
 * Versions: the extension version (tierdb.control's default_version) and
 * tierdb.schema_meta.version move together (0.1 is version 1).  Every
 * catalog change ships as an upgrade script sql/tierdb--<from>--<to>.sql,
 * which ALTER EXTENSION tierdb UPDATE runs, that alters the catalog and ends
 * with
 *     UPDATE tierdb.schema_meta SET version = <n>, applied_at = now();
 * (see extension/README.md).  The daemon refuses a catalog whose
 * schema_meta.version is newer than the one it was built for.
 *
 * Per-table state (everything keyed by table_id except the op_log journal)
 * references tierdb.tables with ON DELETE CASCADE, so unregistering a table
 * is one DELETE.  The op_log keeps no foreign key: the journal of an
 * operation must outlive the registration it was working on, so recovery
 * can adopt or finish it.
 *
 * Privileges (SPEC §10): the script creates the cluster-wide roles
 * tierdb_admin (register, profiles, maintain) and tierdb_worker (what the
 * daemon needs) if they are missing, and grants them the catalog at the end
 * of this file.  Nothing is granted to PUBLIC.
 */

-- complain if the script is sourced in psql rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION tierdb" to load this file. \quit

-- a member of the extension: DROP EXTENSION drops it with everything in it
CREATE SCHEMA tierdb;

/* Where lake tables live.  Exactly one profile is the default. */
CREATE TABLE tierdb.storage_profiles (
    profile_name    text PRIMARY KEY,
    lake_format     text NOT NULL DEFAULT 'iceberg'
                    CONSTRAINT storage_profiles_lake_format_check
                    CHECK (lake_format IN ('iceberg')),
    -- '' means "from the daemon's environment" (TIERDB_WAREHOUSE)
    warehouse       text NOT NULL,
    lake_config     jsonb NOT NULL DEFAULT '{}',
    credential_ref  text,
    is_default      boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- at most one default profile
CREATE UNIQUE INDEX storage_profiles_one_default
    ON tierdb.storage_profiles (is_default) WHERE is_default;

INSERT INTO tierdb.storage_profiles (profile_name, lake_format, warehouse, is_default)
VALUES ('default', 'iceberg', '', true);

/*
 * Registered tables.  table_id is the table's oid.  Which options a mode
 * accepts (SPEC §3) is enforced here too, so a hand-written row cannot
 * describe a table no component knows how to serve.
 */
CREATE TABLE tierdb.tables (
    table_id            bigint PRIMARY KEY,
    schema_name         text NOT NULL,
    table_name          text NOT NULL,
    primary_key_cols    text[] NOT NULL
                        CONSTRAINT tables_primary_key_cols_check
                        CHECK (cardinality(primary_key_cols) > 0),
    tier_key_col        text NOT NULL,
    tier_key_type       text NOT NULL
                        CONSTRAINT tables_tier_key_type_check
                        CHECK (tier_key_type IN ('bigint', 'timestamptz', 'timestamp', 'date')),
    partition_scheme    jsonb NOT NULL DEFAULT '{}',
    lake_format         text NOT NULL DEFAULT 'iceberg'
                        CONSTRAINT tables_lake_format_check
                        CHECK (lake_format IN ('iceberg')),
    lake_table_ref      text NOT NULL,
    storage_profile     text NOT NULL DEFAULT 'default'
                        REFERENCES tierdb.storage_profiles (profile_name)
                        ON UPDATE CASCADE,
    mode                text NOT NULL DEFAULT 'tiered'
                        CONSTRAINT tables_mode_check
                        CHECK (mode IN ('tiered', 'mirrored', 'direct')),
    publication_name    text,
    slot_name           text,
    heap_retention_lag  bigint
                        CONSTRAINT tables_heap_retention_lag_check
                        CHECK (heap_retention_lag > 0),
    lake_retention_lag  bigint
                        CONSTRAINT tables_lake_retention_lag_check
                        CHECK (lake_retention_lag > 0),
    keep_heap           boolean NOT NULL DEFAULT false,
    maintenance_policy  jsonb NOT NULL DEFAULT '{}',
    created_at          timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT tables_schema_name_table_name_key UNIQUE (schema_name, table_name),
    -- CDC plumbing and a heap retention window exist only for mirrored tables
    CONSTRAINT tables_mirrored_only_check CHECK (
        mode = 'mirrored'
        OR (publication_name IS NULL AND slot_name IS NULL AND heap_retention_lag IS NULL)),
    -- lake retention and --keep-heap apply to tiered and direct tables
    CONSTRAINT tables_tiered_only_check CHECK (
        mode IN ('tiered', 'direct')
        OR (lake_retention_lag IS NULL AND NOT keep_heap)),
    -- with --keep-heap the heap holds everything, so the lake cannot expire rows
    CONSTRAINT tables_keep_heap_retention_check CHECK (
        NOT (keep_heap AND lake_retention_lag IS NOT NULL))
);

/*
 * The cut-line: (T, S, lake_props) always advance together in one
 * transaction; F for mirrored tables; R the retention line.
 */
CREATE TABLE tierdb.cutline (
    table_id            bigint PRIMARY KEY
                        REFERENCES tierdb.tables (table_id) ON DELETE CASCADE,
    tier_key_hi         bigint,             -- T
    lake_snapshot_id    bigint,             -- S, NULL before the first snapshot
    replicated_lsn      bigint,             -- F
    retention_line      bigint,             -- R
    -- {"metadata_location": ..., "snapshot_id": ...}
    lake_props          jsonb NOT NULL DEFAULT '{}',
    updated_at          timestamptz NOT NULL DEFAULT now()
);

/* Heap range partitions of registered tables and where their rows are. */
CREATE TABLE tierdb.partitions (
    table_id        bigint NOT NULL
                    REFERENCES tierdb.tables (table_id) ON DELETE CASCADE,
    partition_id    text NOT NULL,
    tier_key_lo     bigint NOT NULL,
    tier_key_hi     bigint NOT NULL,
    state           text NOT NULL DEFAULT 'hot'
                    CONSTRAINT partitions_state_check
                    CHECK (state IN ('hot', 'sealing', 'tiering', 'tiered', 'dropped')),
    updated_at      timestamptz NOT NULL DEFAULT now(),

    PRIMARY KEY (table_id, partition_id),
    CONSTRAINT partitions_range_check CHECK (tier_key_lo < tier_key_hi)
);

/*
 * The delta: upserts (op 0) and tombstones (op 1) for rows only the lake
 * holds, newest version wins.  Versions come from one sequence so that
 * "newer" is comparable across tables and the fold's version guard works.
 */
CREATE SEQUENCE tierdb.delta_version AS bigint;

CREATE TABLE tierdb.delta (
    table_id        bigint NOT NULL
                    REFERENCES tierdb.tables (table_id) ON DELETE CASCADE,
    pk              text NOT NULL,
    op              smallint NOT NULL
                    CONSTRAINT delta_op_check CHECK (op IN (0, 1)),
    tier_key        bigint NOT NULL,
    old_tier_key    bigint,
    version         bigint NOT NULL DEFAULT nextval('tierdb.delta_version'),
    payload         jsonb,
    updated_at      timestamptz NOT NULL DEFAULT now(),

    PRIMARY KEY (table_id, pk),
    -- an upsert carries the full row image it writes
    CONSTRAINT delta_upsert_payload_check CHECK (op = 1 OR payload IS NOT NULL)
);

CREATE INDEX delta_table_id_tier_key_idx ON tierdb.delta (table_id, tier_key);

/* Readers' holds on (T, S), so maintenance never deletes what they scan. */
CREATE TABLE tierdb.read_pins (
    pin_id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    table_id                bigint NOT NULL
                            REFERENCES tierdb.tables (table_id) ON DELETE CASCADE,
    pinned_lake_snapshot_id bigint,
    pinned_tier_key_hi      bigint,
    started_at              timestamptz NOT NULL DEFAULT now(),
    expires_at              timestamptz NOT NULL
);

CREATE INDEX read_pins_table_id_expires_at_idx ON tierdb.read_pins (table_id, expires_at);

/*
 * The journal of lake-writing operations.  op_id is stamped as
 * tierdb.op-id in the snapshot summary of every commit the operation makes.
 */
CREATE TABLE tierdb.op_log (
    op_id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    table_id            bigint NOT NULL,
    op_kind             text NOT NULL
                        CONSTRAINT op_log_op_kind_check
                        CHECK (op_kind IN ('tiering', 'compaction', 'maintenance',
                                           'retention', 'ingest', 'load')),
    phase               text NOT NULL,
    lake_snapshot_id    bigint,
    details             jsonb NOT NULL DEFAULT '{}',
    updated_at          timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX op_log_table_id_idx ON tierdb.op_log (table_id);

/* Stream Load labels: a label commits at most once. */
CREATE TABLE tierdb.load_labels (
    table_id        bigint NOT NULL
                    REFERENCES tierdb.tables (table_id) ON DELETE CASCADE,
    label           text NOT NULL,
    state           text NOT NULL DEFAULT 'staged'
                    CONSTRAINT load_labels_state_check
                    CHECK (state IN ('staged', 'committed', 'failed')),
    staged_files    jsonb NOT NULL DEFAULT '[]',
    result          jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),

    PRIMARY KEY (table_id, label)
);

/* Progress of a mirrored table's initial copy, so it resumes after a crash. */
CREATE TABLE tierdb.copy_progress (
    table_id            bigint PRIMARY KEY
                        REFERENCES tierdb.tables (table_id) ON DELETE CASCADE,
    consistent_point    bigint,
    last_pk             jsonb,
    chunks_done         bigint NOT NULL DEFAULT 0,
    updated_at          timestamptz NOT NULL DEFAULT now()
);

/*
 * A mirrored table's published batches (cli/mirror.c), for hybrid reads
 * (src/hybrid.c): the lake snapshot each made, the WAL position F it brought
 * the mirror to, and which transactions it holds, so that a reader can find
 * the newest snapshot holding only transactions its own snapshot sees.
 * Kept for a while (TDB_MIRROR_HISTORY_SECONDS), then pruned by the pump.
 * Full 64-bit transaction ids (xid8 as bigint); seq orders the rows.
 */
CREATE TABLE tierdb.mirror_batches (
    table_id            bigint NOT NULL
                        REFERENCES tierdb.tables (table_id) ON DELETE CASCADE,
    seq                 bigint GENERATED ALWAYS AS IDENTITY,
    op_id               uuid NOT NULL,      -- the batch's operation (tierdb.op_log), naming its keys
    lake_snapshot_id    bigint NOT NULL,
    replicated_lsn      bigint NOT NULL,    -- F after the batch (the copy's end for the copy's row)
    xid_lo              bigint,             -- its transactions' ids lie in [xid_lo, xid_hi] (NULL: the copy)
    xid_hi              bigint,
    xid_hi_running      bigint NOT NULL,    -- the highest id in this batch and every earlier one
    tier_key_max        bigint,             -- the highest tier key the mirror has written (canonical)
    exact               boolean NOT NULL,   -- the lake at the snapshot is the table as of replicated_lsn
    truncated           boolean NOT NULL DEFAULT false,
    published_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (table_id, seq)
);

/*
 * The (merge key, tier key) pairs each batch changed, as a jsonb object of
 * those columns: what a hybrid read takes from the heap instead of the lake
 * when the batch holds transactions its snapshot does not see. Unlogged:
 * after a crash no snapshot older than it survives, and the batches before
 * it hold only transactions every later snapshot sees.
 */
CREATE UNLOGGED TABLE tierdb.mirror_keys (
    table_id            bigint NOT NULL,
    op_id               uuid NOT NULL,      -- the batch's (written before its lake commit)
    key                 jsonb NOT NULL
);
CREATE INDEX mirror_keys_op ON tierdb.mirror_keys (table_id, op_id);

/* What the daemon last learned about each lake table, and its advice. */
CREATE TABLE tierdb.lake_stats (
    table_id        bigint PRIMARY KEY
                    REFERENCES tierdb.tables (table_id) ON DELETE CASCADE,
    stats           jsonb NOT NULL DEFAULT '{}',
    warnings        jsonb NOT NULL DEFAULT '[]',
    policy          jsonb NOT NULL DEFAULT '{}',
    collected_at    timestamptz NOT NULL DEFAULT now()
);

/* `tierdb maintain` asks the daemon to run maintenance now. */
CREATE TABLE tierdb.maintenance_requests (
    table_id        bigint PRIMARY KEY
                    REFERENCES tierdb.tables (table_id) ON DELETE CASCADE,
    requested_at    timestamptz NOT NULL DEFAULT now(),
    requested_by    text NOT NULL DEFAULT current_user
);

/* The catalog version: exactly one row, moved by every upgrade script. */
CREATE TABLE tierdb.schema_meta (
    version     int NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX schema_meta_one_row ON tierdb.schema_meta ((true));

INSERT INTO tierdb.schema_meta (version) VALUES (1);

/* One row per registered table: what `tierdb status` prints. */
CREATE VIEW tierdb.status AS
SELECT t.table_id,
       t.schema_name,
       t.table_name,
       t.mode,
       c.tier_key_hi AS cutline_t,
       c.lake_snapshot_id AS cutline_s,
       c.replicated_lsn AS mirror_frontier,
       c.retention_line,
       c.updated_at AS cutline_updated_at,
       (SELECT count(*) FROM tierdb.delta d
         WHERE d.table_id = t.table_id) AS delta_backlog,
       (SELECT count(*) FROM tierdb.read_pins p
         WHERE p.table_id = t.table_id AND p.expires_at > now()) AS read_pins,
       (SELECT count(*) FROM tierdb.load_labels l
         WHERE l.table_id = t.table_id AND l.state = 'staged') AS staged_loads,
       EXISTS (SELECT FROM tierdb.copy_progress cp
                WHERE cp.table_id = t.table_id) AS copying,
       (SELECT coalesce(jsonb_object_agg(s.state, s.n), '{}')
          FROM (SELECT pa.state, count(*) AS n
                  FROM tierdb.partitions pa
                 WHERE pa.table_id = t.table_id
                 GROUP BY pa.state) s) AS partition_states,
       -- delta rows the fold leaves because the lake cannot hold them (cli/fold.c)
       (SELECT coalesce(jsonb_agg(w - 'kind' ORDER BY (w->>'version')::bigint), '[]')
          FROM tierdb.lake_stats ls, jsonb_array_elements(ls.warnings) w
         WHERE ls.table_id = t.table_id AND w->>'kind' = 'unfoldable_delta_row'
           AND EXISTS (SELECT FROM tierdb.delta d
                        WHERE d.table_id = t.table_id AND d.pk = w->>'pk'
                          AND d.version::text = w->>'version')) AS unfoldable_rows,
       -- lake debt past the maintenance policy's thresholds (cli/maintenance.c)
       (SELECT coalesce(jsonb_agg(w), '[]')
          FROM tierdb.lake_stats ls, jsonb_array_elements(ls.warnings) w
         WHERE ls.table_id = t.table_id AND w->>'kind' <> 'unfoldable_delta_row') AS lake_warnings,
       -- WAL a mirrored table's slot keeps on the server's disk (not on a standby)
       (SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), rs.restart_lsn)::bigint
          FROM pg_catalog.pg_replication_slots rs
         WHERE rs.slot_name = t.slot_name AND NOT pg_is_in_recovery()) AS slot_wal_bytes
  FROM tierdb.tables t
  LEFT JOIN tierdb.cutline c ON c.table_id = t.table_id;

/*
 * Keeps writes off a partition while the daemon moves it to the lake.  The
 * daemon installs it on the partition being sealed:
 *
 *   CREATE TRIGGER tierdb_sealed BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE
 *       ON <partition> FOR EACH STATEMENT
 *       EXECUTE FUNCTION tierdb.sealed_partition_guard();
 *
 * It works as a row-level trigger too.  That matters: statements that name
 * the partitioned parent fire only the parent's statement-level triggers,
 * while row-level triggers fire on the partition each row lands in, so only
 * a FOR EACH ROW trigger on the partition catches an INSERT or COPY routed
 * through the parent.
 */
CREATE FUNCTION tierdb.sealed_partition_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    parent regclass;
BEGIN
    SELECT i.inhparent::regclass INTO parent
      FROM pg_inherits i
     WHERE i.inhrelid = TG_RELID;

    RAISE EXCEPTION 'partition % of % is being moved to the lake',
                    TG_RELID::regclass, coalesce(parent, TG_RELID::regclass)
        USING ERRCODE = 'object_not_in_prerequisite_state',
              DETAIL = format('%s on this partition was refused: its rows are being copied into the lake and the partition will be dropped.', TG_OP),
              HINT = 'Write rows of this range with tierdb_upsert() or tierdb_delete(), which route them to the lake, or retry once tiering has finished.';
END;
$$;

/*
 * Coordination the daemon and readers meet on (coordination.h): locks no
 * SQL session can take by itself, so no role can stall readers or the
 * daemon by holding an advisory key.  wait_for_readers waits (bounded by
 * lock_timeout) until no transaction reads the table with a cut-line it
 * pinned, and keeps new readers waiting until the caller's transaction
 * ends; try_become_leader makes the session the daemons' leader in this
 * database until it disconnects (false if another session leads).
 */
CREATE FUNCTION tierdb.wait_for_readers(table_id bigint)
RETURNS void
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'tierdb_wait_for_readers';

CREATE FUNCTION tierdb.try_become_leader()
RETURNS boolean
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'tierdb_try_become_leader';

REVOKE ALL ON FUNCTION tierdb.wait_for_readers(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION tierdb.try_become_leader() FROM PUBLIC;

/*
 * The roles are cluster-wide: created by the first database's CREATE
 * EXTENSION, found by the others'.  Members of tierdb_worker run the daemon
 * (it must also own the registered tables, or be a member of their owner,
 * since it creates and drops their partitions); members of tierdb_admin
 * register tables and manage profiles.
 */
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'tierdb_admin') THEN
        CREATE ROLE tierdb_admin NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'tierdb_worker') THEN
        CREATE ROLE tierdb_worker NOLOGIN;
    END IF;
END
$$;

GRANT USAGE ON SCHEMA tierdb TO tierdb_admin, tierdb_worker;
GRANT SELECT ON ALL TABLES IN SCHEMA tierdb TO tierdb_admin;
GRANT INSERT, UPDATE, DELETE ON tierdb.storage_profiles, tierdb.tables, tierdb.cutline, tierdb.partitions,
    tierdb.op_log, tierdb.maintenance_requests TO tierdb_admin;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA tierdb TO tierdb_worker;
GRANT USAGE, SELECT, UPDATE ON SEQUENCE tierdb.delta_version TO tierdb_worker;
GRANT EXECUTE ON FUNCTION tierdb.wait_for_readers(bigint), tierdb.try_become_leader() TO tierdb_worker;

/*
 * pg_dump keeps the rows of the catalog (the extension recreates the objects).
 * The seeded default profile and the schema_meta row come from this script,
 * so they are left out of dumps: restoring them would conflict.  read_pins
 * are left out too: they hold lake snapshots for readers of this server, and
 * no such reader survives a dump and restore.
 */
SELECT pg_catalog.pg_extension_config_dump('tierdb.storage_profiles', 'WHERE profile_name <> ''default''');
SELECT pg_catalog.pg_extension_config_dump('tierdb.tables', '');
SELECT pg_catalog.pg_extension_config_dump('tierdb.cutline', '');
SELECT pg_catalog.pg_extension_config_dump('tierdb.partitions', '');
SELECT pg_catalog.pg_extension_config_dump('tierdb.delta', '');
SELECT pg_catalog.pg_extension_config_dump('tierdb.delta_version', '');
SELECT pg_catalog.pg_extension_config_dump('tierdb.op_log', '');
SELECT pg_catalog.pg_extension_config_dump('tierdb.load_labels', '');
SELECT pg_catalog.pg_extension_config_dump('tierdb.copy_progress', '');
SELECT pg_catalog.pg_extension_config_dump('tierdb.lake_stats', '');
SELECT pg_catalog.pg_extension_config_dump('tierdb.maintenance_requests', '');
