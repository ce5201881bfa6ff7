-- A registered table, its catalog rows written by SQL as `tierdb register`
-- writes them (cli/cmd_register.c), with no lake yet (S is NULL): routed
-- writes, the explicit read protocol and tierdb_explain.
\set VERBOSITY default
-- where in TierDB's own functions an error is raised is not part of its surface
\set SHOW_CONTEXT never
SET TimeZone = 'UTC';
CREATE TABLE ev (id bigint NOT NULL, ts timestamptz NOT NULL, v text) PARTITION BY RANGE (ts);
CREATE TABLE ev_20240101 PARTITION OF ev FOR VALUES FROM ('2024-01-01 00:00+00') TO ('2024-01-02 00:00+00');
CREATE TABLE ev_20240102 PARTITION OF ev FOR VALUES FROM ('2024-01-02 00:00+00') TO ('2024-01-03 00:00+00');
INSERT INTO ev VALUES (1, '2024-01-02 10:00+00', 'hot one'), (2, '2024-01-02 11:00+00', 'hot two');
-- T = 2024-01-02 00:00 UTC: the first day is below it (its rows would be in the lake)
INSERT INTO tierdb.tables (table_id, schema_name, table_name, primary_key_cols, tier_key_col, tier_key_type,
                           partition_scheme, lake_table_ref)
VALUES ('ev'::regclass::oid, 'public', 'ev', ARRAY['id'], 'ts', 'timestamptz', '{"granularity": "day"}', 'public/ev');
INSERT INTO tierdb.cutline (table_id, tier_key_hi, lake_snapshot_id)
VALUES ('ev'::regclass::oid, 1704153600000000, NULL);
INSERT INTO tierdb.partitions (table_id, partition_id, tier_key_lo, tier_key_hi, state)
VALUES ('ev'::regclass::oid, 'ev_20240101', 1704067200000000, 1704153600000000, 'tiered'),
       ('ev'::regclass::oid, 'ev_20240102', 1704153600000000, 1704240000000000, 'hot');

-- routes: hot rows go to the heap, cold ones to the delta
SELECT tierdb_upsert('ev', '{"id": 1, "ts": "2024-01-02 10:00:00+00", "v": "hot one, corrected"}');
SELECT tierdb_upsert('ev', '{"id": 3, "ts": "2024-01-01 09:00:00+00", "v": "cold three"}');
SELECT tierdb_upsert('ev', '{"id": 3, "ts": "2024-01-01 09:00:00+00", "v": "cold three, again"}');
SELECT tierdb_upsert('ev', '{"id": 4, "ts": "2024-01-01 12:00:00+00", "v": "cold four"}');
SELECT tierdb_delete('ev', '4', timestamptz '2024-01-01 12:00:00+00');
SELECT tierdb_delete('ev', '99', timestamptz '2024-01-02 12:00:00+00');
SELECT pk, op, tier_key, old_tier_key, payload FROM tierdb.delta ORDER BY pk;
-- a hot row moved below T leaves the heap
SELECT tierdb_upsert('ev', '{"id": 2, "ts": "2024-01-01 11:00:00+00", "v": "two, now cold"}');
SELECT * FROM ev ORDER BY id;
SET tierdb.transparent_reads = off;
SELECT * FROM ev ORDER BY id;
RESET tierdb.transparent_reads;

-- argument errors of a registered table
SELECT tierdb_upsert('ev', '{"id": 5}');
SELECT tierdb_upsert('ev', '{"id": 5, "ts": "not a time"}');
SELECT tierdb_upsert('ev', '[1, 2]');
SELECT tierdb_delete('ev', '1', 5::bigint);
SELECT tierdb_delete('ev', '{"nope": 1}', timestamptz '2024-01-02 10:00+00');

-- the explicit read protocol
SELECT tierdb_rewrite_scan('ev');
SELECT pin_id IS NOT NULL AS pinned, tier_key_hi, lake_snapshot_id FROM tierdb_read_begin('ev', '1 minute');
SELECT tierdb_read_end(pin_id) FROM tierdb.read_pins;
SELECT tierdb_read_end(pin_id) FROM (SELECT max(pin_id) + 1 AS pin_id FROM tierdb.read_pins) p;

-- where rows come from and go to
SELECT * FROM tierdb_explain('SELECT * FROM ev WHERE ts >= ''2024-01-02''');
SELECT * FROM tierdb_explain('SELECT tierdb_upsert(''ev'', ''{"id": 7, "ts": "2024-01-01 01:00:00+00"}'')');
SELECT * FROM tierdb_explain('SELECT tierdb_delete(''ev'', ''1'', timestamptz ''2024-01-02 10:00+00'')');
