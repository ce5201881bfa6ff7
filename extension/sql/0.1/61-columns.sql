/*
 * 61-columns.sql: how a registered table's columns map to its lake's
 * fields after ALTER TABLE (SPEC §6: the lake's columns are matched by
 * Iceberg field id, never by name; docs/schema-changes.md); a part of the
 * install script tierdb--0.1.sql.
 *
 * The DDL guard (src/ddl.c, src/columns.c) writes these rows in the
 * ALTER's own transaction; the daemon makes the lake follow at its next
 * step (cli/schema_evolution.c), so other engines see the change too.
 * Every reader (src/lake_scan.c, tierdb-spark's SeamPlan) applies them:
 *
 *  - the lake field of a column named n: the field tierdb.columns names n,
 *    else the field of the lake's current schema called n whose id
 *    tierdb.columns does not list; looked up by id in the read snapshot's
 *    schema (absent there: the column has no field at that snapshot);
 *  - a column with no field reads its row in tierdb.column_defaults, else
 *    NULL; a column with a field and a default reads the default in the
 *    rows of data files whose data sequence number is at most
 *    lake_sequence_number (all of them while that is NULL), the field in
 *    the others;
 *  - a field may hold a narrower type than its column's (int for bigint,
 *    float for double precision, decimal(p,s) for numeric(p',s)): the value
 *    is widened.
 *
 * Delta payloads always carry every column: the ALTER rewrites the pending
 * ones (renamed key, dropped key removed, added column's default put in).
 */

-- A lake field whose column is not the field's lake name: renamed
-- (column_name, the column's name now) or dropped (column_name NULL).
CREATE TABLE tierdb.columns (
    table_id        bigint NOT NULL
                    REFERENCES tierdb.tables (table_id) ON DELETE CASCADE,
    field_id        integer NOT NULL,
    column_name     text,
    PRIMARY KEY (table_id, field_id),
    UNIQUE (table_id, column_name)
);

-- A column added with a non-NULL default: the value, in the text form of
-- the column's type, that the rows already in the lake read (Iceberg's
-- initial-default, which a format-version 2 table cannot hold itself).
CREATE TABLE tierdb.column_defaults (
    table_id        bigint NOT NULL
                    REFERENCES tierdb.tables (table_id) ON DELETE CASCADE,
    column_name     text NOT NULL,
    default_value   text NOT NULL,
    -- the lake's last-sequence-number when the daemon added the column's
    -- field; every data file written before it has a number at most this
    lake_sequence_number bigint,
    PRIMARY KEY (table_id, column_name)
);

SELECT pg_catalog.pg_extension_config_dump('tierdb.columns', '');
SELECT pg_catalog.pg_extension_config_dump('tierdb.column_defaults', '');

-- the daemon keeps them (cli/schema_evolution.c); tierdb_admin reads the catalog (10-catalog.sql)
GRANT SELECT, INSERT, UPDATE, DELETE ON tierdb.columns, tierdb.column_defaults TO tierdb_worker;
GRANT SELECT ON tierdb.columns, tierdb.column_defaults TO tierdb_admin;
