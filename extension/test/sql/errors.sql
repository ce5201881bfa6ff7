-- Errors of the SQL API on tables that are not registered and on bad arguments.
\set VERBOSITY default
-- where in TierDB's own functions an error is raised is not part of its surface
\set SHOW_CONTEXT never
CREATE TABLE plain_t (id bigint PRIMARY KEY, ts timestamptz NOT NULL, v text);

SELECT tierdb_upsert('plain_t', '{"id": 1, "ts": "2024-01-01", "v": "x"}');
SELECT tierdb_upsert(NULL, '{"id": 1}');
SELECT tierdb_upsert('plain_t', NULL);
SELECT tierdb_upsert('no_such_table', '{"id": 1}');
SELECT tierdb_delete('plain_t', '1', 1::bigint);
SELECT tierdb_delete('plain_t', '1', timestamptz '2024-01-01');
SELECT tierdb_delete('plain_t', NULL, 1::bigint);
SELECT tierdb_read_begin('plain_t');
SELECT tierdb_read_begin('plain_t', '0 seconds');
SELECT tierdb_read_begin('plain_t', NULL);
SELECT tierdb_read_end(123456);
SELECT tierdb_read_end(NULL);
SELECT tierdb_rewrite_scan('plain_t');
SELECT tierdb_rewrite_scan(NULL);
SELECT * FROM tierdb_explain('SELECT * FROM plain_t');
-- nothing was written
SELECT count(*) FROM tierdb.delta;
SELECT count(*) FROM tierdb.read_pins;
