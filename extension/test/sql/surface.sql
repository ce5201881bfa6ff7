-- The SQL surface of the extension: its objects, version and settings.
SELECT tierdb_version() ~ '^tierdb 0\.1 \(catalog [0-9]+\)$' AS version_ok;

-- catalog tables and their columns
SELECT c.relname, string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE n.nspname = 'tierdb' AND c.relkind IN ('r', 'v')
 GROUP BY c.relname ORDER BY c.relname;

-- the user-facing functions (unqualified, in pg_catalog)
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args, pg_get_function_result(p.oid) AS result
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'tierdb'
 WHERE p.proname LIKE 'tierdb\_%' AND p.pronamespace = 'pg_catalog'::regnamespace
 ORDER BY 1, 2;

-- the catalog tables are not granted to PUBLIC
SELECT c.relname, has_table_privilege('public', c.oid, 'SELECT') AS public_select
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'tierdb' AND c.relkind = 'r' ORDER BY 1;

-- settings and their defaults
SELECT name, setting, vartype FROM pg_settings WHERE name LIKE 'tierdb.%' ORDER BY name;

-- the seeded storage profile
SELECT profile_name, warehouse, is_default FROM tierdb.storage_profiles;

-- the event triggers that keep registered tables' lakes following their columns
SELECT evtname, evtevent, evtenabled, evttags, evtfoid::regproc FROM pg_event_trigger ORDER BY 1;
