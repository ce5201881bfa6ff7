/*
 * 60-ddl.sql: schema changes of a registered table and its lake (SPEC §6,
 * docs/schema-changes.md); a part of the install script tierdb--0.1.sql,
 * which extension/Makefile assembles from sql/0.1/.
 *
 * tierdb.ddl_guard() (src/ddl.c) looks at each ALTER TABLE, CREATE TABLE
 * and ALTER TYPE before it runs.  It refuses, with an error that says why,
 * the changes the lake cannot follow: a key column's rename, drop or type
 * change, a type change other than a widening, an added identity or
 * generated column, renaming or moving the table, a DEFAULT partition of
 * it, renaming a value of an enum its columns hold.  It records the
 * carried ones (rename, drop, widening; 61-columns.sql), which the daemon
 * then makes the lake follow.  tierdb.ddl_follow(), after an ALTER TABLE
 * ran, records the value an added column has in the rows already in the
 * lake (its default, once: a volatile one is refused).
 */

CREATE FUNCTION tierdb.ddl_guard()
RETURNS event_trigger
LANGUAGE c
AS 'MODULE_PATHNAME', 'tierdb_ddl_guard';

CREATE FUNCTION tierdb.ddl_follow()
RETURNS event_trigger
LANGUAGE c
AS 'MODULE_PATHNAME', 'tierdb_ddl_follow';

CREATE EVENT TRIGGER tierdb_ddl_guard ON ddl_command_start
    WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE', 'ALTER TYPE', 'DROP TABLE')
    EXECUTE FUNCTION tierdb.ddl_guard();

CREATE EVENT TRIGGER tierdb_ddl_follow ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE')
    EXECUTE FUNCTION tierdb.ddl_follow();

-- in every replication role too: a session replaying DDL as a replica
-- would leave the lake behind all the same.  (A superuser can still
-- ALTER EVENT TRIGGER tierdb_ddl_guard DISABLE, deliberately.)
ALTER EVENT TRIGGER tierdb_ddl_guard ENABLE ALWAYS;
ALTER EVENT TRIGGER tierdb_ddl_follow ENABLE ALWAYS;
