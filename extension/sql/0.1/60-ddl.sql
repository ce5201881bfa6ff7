/*
 * 60-ddl.sql: the guard against schema changes a registered table's lake
 * does not follow (SPEC §6); a part of the install script tierdb--0.1.sql,
 * which extension/Makefile assembles from sql/0.1/.
 *
 * tierdb.ddl_guard() (src/ddl.c) looks at each ALTER TABLE, CREATE TABLE
 * and ALTER TYPE before it runs and refuses, with an error that says why,
 * a change of a registered table's columns (add with a default or NOT
 * NULL, drop, rename of a key column, change of type), renaming or moving
 * the table, a DEFAULT partition of it, and renaming a value of an enum
 * its columns hold; it records a carried RENAME COLUMN (61-columns.sql).
 * See docs/schema-changes.md.
 */

CREATE FUNCTION tierdb.ddl_guard()
RETURNS event_trigger
LANGUAGE c
AS 'MODULE_PATHNAME', 'tierdb_ddl_guard';

CREATE EVENT TRIGGER tierdb_ddl_guard ON ddl_command_start
    WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE', 'ALTER TYPE')
    EXECUTE FUNCTION tierdb.ddl_guard();
-- in every replication role too: a session replaying DDL as a replica
-- would leave the lake behind all the same.  (A superuser can still
-- ALTER EVENT TRIGGER tierdb_ddl_guard DISABLE, deliberately.)
ALTER EVENT TRIGGER tierdb_ddl_guard ENABLE ALWAYS;
