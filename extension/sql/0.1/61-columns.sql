/*
 * 61-columns.sql: the Postgres names of renamed lake fields (SPEC §6: the
 * lake's columns are matched by Iceberg field id, never by name); a part
 * of the install script tierdb--0.1.sql.
 *
 * ALTER TABLE t RENAME COLUMN a TO b of a registered table (src/ddl.c)
 * records here, in its own transaction, that the lake field that was
 * column a (its field id) is now column b.  Readers (src/lake_scan.c)
 * match a column named here by that field id, every other column by name
 * among the fields not named here; the daemon renames the lake's fields
 * to these names at its next step (cli/schema_evolution.c), so other
 * engines see them too.  Rows stay: they keep naming the fields' columns.
 */

CREATE TABLE tierdb.columns (
    table_id        bigint NOT NULL
                    REFERENCES tierdb.tables (table_id) ON DELETE CASCADE,
    field_id        integer NOT NULL,
    column_name     text NOT NULL,
    PRIMARY KEY (table_id, field_id),
    UNIQUE (table_id, column_name)
);

SELECT pg_catalog.pg_extension_config_dump('tierdb.columns', '');

-- the daemon keeps it (cli/schema_evolution.c); tierdb_admin reads the catalog (10-catalog.sql)
GRANT SELECT, INSERT, UPDATE, DELETE ON tierdb.columns TO tierdb_worker;
GRANT SELECT ON tierdb.columns TO tierdb_admin;
