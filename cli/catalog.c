/*
 * catalog.c: reading the tierdb catalog and the conventions around it
 * (see catalog.h): catalog version checks, the tier-key codec, table names,
 * registered-table rows, and warehouse resolution.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "catalog.h"
#include "pg.h"

/* Postgres type oids (pg_type.dat); stable across versions. */
#define INT2OID 21
#define INT4OID 23
#define INT8OID 20
#define DATEOID 1082
#define TIMESTAMPOID 1114
#define TIMESTAMPTZOID 1184

#define USECS_PER_SEC INT64_C(1000000)

static bool get_int64(const PGresult *res, int row, int col, int64_t *out);

/* ------------------------------------------------------------ version */

int tdb_catalog_check(PGconn *c, tl_error *err)
{
	PGresult *res = tdb_pg_query(c, "looking for the tierdb extension",
	                             "SELECT (SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'tierdb'),"
	                             " current_database()",
	                             0, NULL, err);
	if (res == NULL)
		return -1;
	if (PQgetisnull(res, 0, 0)) {
		tl_error_set(err, TL_ERR_NOT_FOUND,
		             "the tierdb extension is not installed in database %s: run CREATE EXTENSION tierdb in "
		             "database %s first",
		             PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 1));
		PQclear(res);
		return -1;
	}
	PQclear(res);
	res = tdb_pg_query(c, "reading the tierdb catalog version", "SELECT max(version) FROM tierdb.schema_meta", 0,
	                   NULL, err);
	if (res == NULL)
		return -1;
	int status = 0;
	if (PQgetisnull(res, 0, 0)) {
		status = tl_error_set(err, TL_ERR_CORRUPT,
		                      "tierdb.schema_meta is empty: the catalog is damaged; reinstall the extension "
		                      "(DROP EXTENSION tierdb CASCADE; CREATE EXTENSION tierdb)");
	} else {
		long version = strtol(PQgetvalue(res, 0, 0), NULL, 10);
		if (version > TDB_CATALOG_VERSION)
			status = tl_error_set(err, TL_ERR_UNSUPPORTED,
			                      "the tierdb catalog is version %ld but this tierdb understands up to %d; "
			                      "upgrade tierdb",
			                      version, TDB_CATALOG_VERSION);
	}
	PQclear(res);
	return status;
}

/* ------------------------------------------------------------ tier keys */

static const char *const key_type_names[] = {"bigint", "timestamptz", "timestamp", "date"};

const char *tdb_key_type_name(tdb_key_type type)
{
	return key_type_names[type];
}

int tdb_key_type_parse(const char *name, tdb_key_type *out, tl_error *err)
{
	for (int i = 0; i < (int)(sizeof(key_type_names) / sizeof(key_type_names[0])); i++)
		if (strcmp(name, key_type_names[i]) == 0) {
			*out = (tdb_key_type)i;
			return 0;
		}
	return tl_error_set(err, TL_ERR_CORRUPT, "unknown tier_key_type '%s' in tierdb.tables", name);
}

bool tdb_key_type_from_oid(uint32_t type_oid, tdb_key_type *out)
{
	switch (type_oid) {
	case INT2OID:
	case INT4OID:
	case INT8OID:
		*out = TDB_KEY_BIGINT;
		return true;
	case TIMESTAMPTZOID:
		*out = TDB_KEY_TIMESTAMPTZ;
		return true;
	case TIMESTAMPOID:
		*out = TDB_KEY_TIMESTAMP;
		return true;
	case DATEOID:
		*out = TDB_KEY_DATE;
		return true;
	default:
		return false;
	}
}

bool tdb_key_type_is_timestamp(tdb_key_type type)
{
	return type == TDB_KEY_TIMESTAMPTZ || type == TDB_KEY_TIMESTAMP;
}

int tdb_key_parse_lag(tdb_key_type type, const char *text, const char *what, int64_t *out, tl_error *err)
{
	const char *units = type == TDB_KEY_BIGINT ? "a non-negative integer"
	                    : type == TDB_KEY_DATE ? "a number of days (7 or 7d)"
	                                           : "a duration such as 90s, 15m, 12h or 7d (a plain number is seconds)";
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (end == text || !isdigit((unsigned char)text[0]) || errno != 0)
		return tl_error_set(err, TL_ERR_INVALID, "%s '%s' is not %s", what, text, units);
	int64_t scale = 1;
	if (type == TDB_KEY_DATE) {
		if (strcmp(end, "d") == 0)
			end++;
	} else if (tdb_key_type_is_timestamp(type)) {
		int64_t seconds = 1;
		if (*end == 's')
			seconds = 1;
		else if (*end == 'm')
			seconds = 60;
		else if (*end == 'h')
			seconds = 3600;
		else if (*end == 'd')
			seconds = 86400;
		if (*end != '\0' && end[1] == '\0' && strchr("smhd", *end))
			end++;
		scale = seconds * USECS_PER_SEC;
	}
	if (*end != '\0')
		return tl_error_set(err, TL_ERR_INVALID, "%s '%s' is not %s", what, text, units);
	if (v > INT64_MAX / scale)
		return tl_error_set(err, TL_ERR_INVALID, "%s '%s' is too large", what, text);
	*out = (int64_t)v * scale;
	return 0;
}

void tdb_key_canonical_sql(tdb_key_type type, const char *expr, tl_buf *out)
{
	/* extract() returns numeric since Postgres 14, so microseconds are exact. */
	switch (type) {
	case TDB_KEY_BIGINT:
		tl_buf_printf(out, "(%s)::bigint", expr);
		break;
	case TDB_KEY_TIMESTAMPTZ:
		tl_buf_printf(out, "(extract(epoch FROM (%s)::timestamptz) * 1000000)::bigint", expr);
		break;
	case TDB_KEY_TIMESTAMP:
		tl_buf_printf(out, "(extract(epoch FROM (%s)::timestamp) * 1000000)::bigint", expr);
		break;
	case TDB_KEY_DATE:
		tl_buf_printf(out, "((%s)::date - date '1970-01-01')::bigint", expr);
		break;
	}
}

/* ------------------------------------------------------------ heap partitions */

/*
 * Postgres prints a one-column range bound as FOR VALUES FROM (x) TO (y),
 * where x is MINVALUE, MAXVALUE, a bare number or a quoted literal ('' for
 * a quote; 'infinity' for temporal types). The query cuts the literals out and casts them to the key type
 * on the server, which reads them back exactly as it printed them.
 */
static void heap_partitions_sql(tdb_key_type type, tl_buf *sql)
{
	tl_buf_append_str(sql,
	                  "SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname),"
	                  " n.nspname, c.relname, e.bound, e.bound = 'DEFAULT', c.relkind = 'p', ");
	for (int side = 0; side < 2; side++) {
		const char *lit = side == 0 ? "b.lo" : "b.hi";
		/* Infinite temporal bounds are as unbounded as MINVALUE and have no canonical value. */
		tl_buf_printf(sql,
		              "CASE WHEN %s IS NULL OR %s IN ('MINVALUE', 'MAXVALUE', 'infinity', '-infinity') THEN NULL ELSE ",
		              lit, lit);
		tdb_key_canonical_sql(type, lit, sql);
		tl_buf_append_str(sql, side == 0 ? " END AS lo, " : " END AS hi");
	}
	tl_buf_append_str(sql,
	                  " FROM pg_catalog.pg_inherits i"
	                  " JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid"
	                  " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
	                  " CROSS JOIN LATERAL (SELECT pg_catalog.pg_get_expr(c.relpartbound, c.oid) AS bound) e"
	                  " CROSS JOIN LATERAL (SELECT"
	                  "  substring(e.bound FROM '^FOR VALUES FROM \\((.*)\\) TO \\(.*\\)$') AS lo,"
	                  "  substring(e.bound FROM '^FOR VALUES FROM \\(.*\\) TO \\((.*)\\)$') AS hi) l"
	                  " CROSS JOIN LATERAL (SELECT"
	                  "  CASE WHEN l.lo LIKE '''%' THEN replace(substr(l.lo, 2, length(l.lo) - 2), '''''', '''')"
	                  "   ELSE l.lo END AS lo,"
	                  "  CASE WHEN l.hi LIKE '''%' THEN replace(substr(l.hi, 2, length(l.hi) - 2), '''''', '''')"
	                  "   ELSE l.hi END AS hi) b"
	                  " WHERE i.inhparent = $1::oid"
	                  " ORDER BY e.bound = 'DEFAULT', lo NULLS FIRST, c.relname");
	tl_buf_append_byte(sql, '\0');
}

int tdb_heap_partitions(PGconn *c, uint32_t table_oid, tdb_key_type type, tdb_heap_partition **out, int *n,
                        tl_error *err)
{
	*out = NULL;
	*n = 0;
	char oid[16];
	snprintf(oid, sizeof(oid), "%u", table_oid);
	const char *params[] = {oid};
	tl_buf sql;
	tl_buf_init(&sql);
	heap_partitions_sql(type, &sql);
	PGresult *res = tdb_pg_query(c, "reading the table's partitions", (const char *)sql.data, 1, params, err);
	tl_buf_free(&sql);
	if (res == NULL)
		return -1;
	int rows = PQntuples(res);
	tdb_heap_partition *parts = tl_calloc((size_t)rows + 1, sizeof(*parts));
	for (int i = 0; i < rows; i++) {
		tdb_heap_partition *p = &parts[i];
		p->partition_id = tl_strdup(PQgetvalue(res, i, 0));
		p->schema = tl_strdup(PQgetvalue(res, i, 1));
		p->name = tl_strdup(PQgetvalue(res, i, 2));
		p->bound = tl_strdup(PQgetvalue(res, i, 3));
		p->is_default = PQgetvalue(res, i, 4)[0] == 't';
		p->is_partitioned = PQgetvalue(res, i, 5)[0] == 't';
		p->has_lo = get_int64(res, i, 6, &p->lo);
		p->has_hi = get_int64(res, i, 7, &p->hi);
	}
	PQclear(res);
	*out = parts;
	*n = rows;
	return 0;
}

void tdb_heap_partitions_free(tdb_heap_partition *parts, int n)
{
	for (int i = 0; i < n; i++) {
		free(parts[i].partition_id);
		free(parts[i].schema);
		free(parts[i].name);
		free(parts[i].bound);
	}
	free(parts);
}

/* ------------------------------------------------------------ table names */

/* One name part at *p (quoted or not) into a malloc'd string; advances *p. */
static char *parse_name_part(const char **p, const char *text, tl_error *err)
{
	tl_buf part;
	tl_buf_init(&part);
	const char *s = *p;
	if (*s == '"') {
		for (s++;; s++) {
			if (*s == '\0') {
				tl_buf_free(&part);
				tl_error_set(err, TL_ERR_INVALID, "table name '%s' has an unterminated quote", text);
				return NULL;
			}
			if (*s == '"') {
				if (s[1] != '"')
					break;
				s++;
			}
			tl_buf_append_byte(&part, (uint8_t)*s);
		}
		s++;
	} else {
		for (; *s != '\0' && *s != '.'; s++)
			tl_buf_append_byte(&part, (uint8_t)*s);
	}
	*p = s;
	if (part.len == 0) {
		tl_buf_free(&part);
		tl_error_set(err, TL_ERR_INVALID, "table name '%s' has an empty part; write schema.table", text);
		return NULL;
	}
	tl_buf_append_byte(&part, '\0');
	return (char *)part.data;
}

int tdb_table_name_parse(const char *text, tdb_table_name *out, tl_error *err)
{
	memset(out, 0, sizeof(*out));
	const char *p = text;
	char *first = parse_name_part(&p, text, err);
	if (first == NULL)
		return -1;
	if (*p == '\0') {
		out->schema = tl_strdup("public");
		out->table = first;
		return 0;
	}
	if (*p != '.') {
		free(first);
		return tl_error_set(err, TL_ERR_INVALID, "table name '%s' has text after a quoted name; write schema.table",
		                    text);
	}
	p++;
	char *second = parse_name_part(&p, text, err);
	if (second == NULL) {
		free(first);
		return -1;
	}
	if (*p != '\0') {
		free(first);
		free(second);
		return tl_error_set(err, TL_ERR_INVALID, "table name '%s' has more than two parts; write schema.table",
		                    text);
	}
	out->schema = first;
	out->table = second;
	return 0;
}

void tdb_table_name_free(tdb_table_name *name)
{
	free(name->schema);
	free(name->table);
	name->schema = name->table = NULL;
}

/* ------------------------------------------------------------ registered tables */

/* The columns every load selects, in the order fill_table reads them. */
#define TABLE_SELECT                                                                                         \
	"SELECT t.table_id, t.schema_name, t.table_name, array_to_json(t.primary_key_cols)::text, t.tier_key_col," \
	" t.tier_key_type, t.partition_scheme::text, t.lake_format, t.lake_table_ref, t.storage_profile, t.mode,"  \
	" t.lake_retention_lag, c.tier_key_hi, c.lake_snapshot_id, c.retention_line,"                             \
	" c.lake_props->>'metadata_location', c.lake_props::text, t.keep_heap, t.publication_name, t.slot_name,"  \
	" c.replicated_lsn::text, EXISTS (SELECT FROM tierdb.copy_progress p WHERE p.table_id = t.table_id),"      \
	" t.heap_retention_lag"                                                                                   \
	" FROM tierdb.tables t LEFT JOIN tierdb.cutline c ON c.table_id = t.table_id "

static char *dup_or_null(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NULL : tl_strdup(PQgetvalue(res, row, col));
}

static bool get_int64(const PGresult *res, int row, int col, int64_t *out)
{
	if (PQgetisnull(res, row, col))
		return false;
	*out = strtoll(PQgetvalue(res, row, col), NULL, 10);
	return true;
}

static int parse_pk_cols(const char *json_text, tdb_catalog_table *t, tl_error *err)
{
	json_error_t jerr;
	json_t *arr = json_loads(json_text ? json_text : "[]", 0, &jerr);
	if (arr == NULL || !json_is_array(arr)) {
		json_decref(arr);
		return tl_error_set(err, TL_ERR_CORRUPT, "tierdb.tables.primary_key_cols of %s.%s is not a text array",
		                    t->schema_name, t->table_name);
	}
	t->npk = (int)json_array_size(arr);
	t->pk_cols = tl_calloc((size_t)t->npk + 1, sizeof(char *));
	for (int i = 0; i < t->npk; i++) {
		const char *s = json_string_value(json_array_get(arr, (size_t)i));
		t->pk_cols[i] = tl_strdup(s ? s : "");
	}
	json_decref(arr);
	return 0;
}

static int fill_table(const PGresult *res, int row, tdb_catalog_table *t, tl_error *err)
{
	memset(t, 0, sizeof(*t));
	get_int64(res, row, 0, &t->table_id);
	t->schema_name = dup_or_null(res, row, 1);
	t->table_name = dup_or_null(res, row, 2);
	t->tier_key_col = dup_or_null(res, row, 4);
	t->partition_scheme = dup_or_null(res, row, 6);
	t->lake_format = dup_or_null(res, row, 7);
	t->lake_table_ref = dup_or_null(res, row, 8);
	t->storage_profile = dup_or_null(res, row, 9);
	t->mode = dup_or_null(res, row, 10);
	t->has_lake_retention = get_int64(res, row, 11, &t->lake_retention_lag);
	t->publication_name = dup_or_null(res, row, 18);
	t->slot_name = dup_or_null(res, row, 19);
	t->has_replicated_lsn = get_int64(res, row, 20, &t->replicated_lsn);
	t->copying = PQgetvalue(res, row, 21)[0] == 't';
	t->has_heap_retention = get_int64(res, row, 22, &t->heap_retention_lag);
	/* a mirrored table's heap is complete: it has no cut-line of its own (SPEC §3), unless it keeps a window */
	if (!get_int64(res, row, 12, &t->cutline_t) &&
	    (strcmp(t->mode ? t->mode : "", "mirrored") != 0 || t->has_heap_retention))
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "%s.%s is registered but has no tierdb.cutline row; unregister and register it again",
		                    t->schema_name, t->table_name);
	t->has_snapshot = get_int64(res, row, 13, &t->snapshot_id);
	t->has_retention_line = get_int64(res, row, 14, &t->retention_line);
	t->metadata_location = dup_or_null(res, row, 15);
	t->lake_props = dup_or_null(res, row, 16);
	t->keep_heap = !PQgetisnull(res, row, 17) && PQgetvalue(res, row, 17)[0] == 't';
	if (parse_pk_cols(PQgetisnull(res, row, 3) ? NULL : PQgetvalue(res, row, 3), t, err) < 0)
		return -1;
	return tdb_key_type_parse(PQgetvalue(res, row, 5), &t->tier_key_type, err);
}

static int load_one(PGconn *c, const char *what, const char *where, int nparams, const char *const *params,
                    tdb_catalog_table *out, tl_error *err)
{
	memset(out, 0, sizeof(*out));
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_printf(&sql, "%s%s", TABLE_SELECT, where);
	tl_buf_append_byte(&sql, '\0');
	PGresult *res = tdb_pg_query(c, what, (const char *)sql.data, nparams, params, err);
	tl_buf_free(&sql);
	if (res == NULL)
		return -1;
	int found = PQntuples(res) > 0;
	if (found && fill_table(res, 0, out, err) < 0) {
		tdb_catalog_table_free(out);
		found = -1;
	}
	PQclear(res);
	return found;
}

int tdb_catalog_load_table(PGconn *c, const char *schema, const char *table, tdb_catalog_table *out,
                           tl_error *err)
{
	const char *params[] = {schema, table};
	char what[300];
	snprintf(what, sizeof(what), "reading the catalog row of %s.%s", schema, table);
	return load_one(c, what, "WHERE t.schema_name = $1 AND t.table_name = $2", 2, params, out, err);
}

int tdb_catalog_load_table_by_id(PGconn *c, int64_t table_id, tdb_catalog_table *out, tl_error *err)
{
	char id[24], what[80];
	snprintf(id, sizeof(id), "%lld", (long long)table_id);
	snprintf(what, sizeof(what), "reading the catalog row of table %s", id);
	const char *params[] = {id};
	return load_one(c, what, "WHERE t.table_id = $1::bigint", 1, params, out, err);
}

int tdb_catalog_list_tables(PGconn *c, tdb_catalog_table **out, int *n, tl_error *err)
{
	*out = NULL;
	*n = 0;
	PGresult *res = tdb_pg_query(c, "listing registered tables",
	                             TABLE_SELECT "ORDER BY t.schema_name, t.table_name", 0, NULL, err);
	if (res == NULL)
		return -1;
	int rows = PQntuples(res);
	tdb_catalog_table *tables = tl_calloc((size_t)rows + 1, sizeof(*tables));
	for (int i = 0; i < rows; i++)
		if (fill_table(res, i, &tables[i], err) < 0) {
			tdb_catalog_tables_free(tables, i + 1);
			PQclear(res);
			return -1;
		}
	PQclear(res);
	*out = tables;
	*n = rows;
	return 0;
}

void tdb_catalog_table_free(tdb_catalog_table *t)
{
	free(t->schema_name);
	free(t->table_name);
	for (int i = 0; i < t->npk; i++)
		free(t->pk_cols[i]);
	free(t->pk_cols);
	free(t->tier_key_col);
	free(t->partition_scheme);
	free(t->lake_format);
	free(t->lake_table_ref);
	free(t->storage_profile);
	free(t->mode);
	free(t->metadata_location);
	free(t->lake_props);
	free(t->publication_name);
	free(t->slot_name);
	memset(t, 0, sizeof(*t));
}

void tdb_catalog_tables_free(tdb_catalog_table *tables, int n)
{
	for (int i = 0; i < n; i++)
		tdb_catalog_table_free(&tables[i]);
	free(tables);
}

/* ------------------------------------------------------------ warehouses */

static char *join_path(const char *a, const char *b)
{
	size_t la = strlen(a);
	while (la > 1 && a[la - 1] == '/')
		la--;
	char *out = tl_malloc(la + strlen(b) + 2);
	sprintf(out, "%.*s/%s", (int)la, a, b);
	return out;
}

char *tdb_default_warehouse(tl_error *err)
{
	const char *xdg = getenv("XDG_DATA_HOME");
	if (xdg != NULL && xdg[0] == '/')
		return join_path(xdg, "tierdb/warehouse");
	const char *home = getenv("HOME");
	if (home != NULL && home[0] == '/')
		return join_path(home, ".local/share/tierdb/warehouse");
	tl_error_set(err, TL_ERR_INVALID,
	             "no warehouse configured: set TIERDB_WAREHOUSE, or the storage profile's warehouse "
	             "(HOME is not set, so there is no default)");
	return NULL;
}

char *tdb_catalog_profile(PGconn *c, const char *profile, tl_error *err)
{
	PGresult *res;
	if (profile != NULL) {
		const char *params[] = {profile};
		res = tdb_pg_query(c, "reading storage profiles",
		                   "SELECT profile_name FROM tierdb.storage_profiles WHERE profile_name = $1", 1, params,
		                   err);
	} else {
		res = tdb_pg_query(c, "reading storage profiles",
		                   "SELECT profile_name FROM tierdb.storage_profiles WHERE is_default", 0, NULL, err);
	}
	if (res == NULL)
		return NULL;
	char *name = PQntuples(res) > 0 ? tl_strdup(PQgetvalue(res, 0, 0)) : NULL;
	PQclear(res);
	if (name == NULL && profile != NULL)
		tl_error_set(err, TL_ERR_NOT_FOUND,
		             "storage profile '%s' does not exist; see 'tierdb profile list', or create it with "
		             "'tierdb profile create --name %s --warehouse W'",
		             profile, profile);
	else if (name == NULL)
		tl_error_set(err, TL_ERR_NOT_FOUND,
		             "there is no default storage profile; pass --profile, or make one the default with "
		             "'tierdb profile create --name N --warehouse W --default'");
	return name;
}

char *tdb_absolute_warehouse(const char *w, tl_error *err)
{
	if (w[0] == '/' || strstr(w, "://") != NULL || strncmp(w, "file:", 5) == 0)
		return tl_strdup(w);
	char *cwd = getcwd(NULL, 0);
	if (cwd == NULL) {
		tl_error_set(err, TL_ERR_IO, "cannot make warehouse %s absolute: %s", w, strerror(errno));
		return NULL;
	}
	const char *rel = strncmp(w, "./", 2) == 0 ? w + 2 : w;
	char *out = join_path(cwd, rel);
	free(cwd);
	return out;
}

char *tdb_catalog_warehouse(PGconn *c, const char *profile, tl_error *err)
{
	const char *params[] = {profile};
	PGresult *res = tdb_pg_query(c, "reading the storage profile's warehouse",
	                             "SELECT warehouse FROM tierdb.storage_profiles WHERE profile_name = $1", 1, params,
	                             err);
	if (res == NULL)
		return NULL;
	if (PQntuples(res) == 0) {
		PQclear(res);
		tl_error_set(err, TL_ERR_NOT_FOUND, "storage profile '%s' does not exist; see 'tierdb profile list'",
		             profile);
		return NULL;
	}
	char *own = tl_strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	const char *env = getenv("TIERDB_WAREHOUSE");
	char *fallback = NULL;
	const char *chosen = own;
	if (own[0] == '\0' && env != NULL && env[0] != '\0')
		chosen = env;
	else if (own[0] == '\0' && (fallback = tdb_default_warehouse(err)) == NULL) {
		free(own);
		return NULL;
	} else if (own[0] == '\0')
		chosen = fallback;
	char *result = tdb_absolute_warehouse(chosen, err);
	free(own);
	free(fallback);
	return result;
}

/*
 * One name as a single path segment that cannot leave its directory:
 * bytes outside [A-Za-z0-9_.-] (the separator '/', '%' itself, spaces,
 * non-ASCII) and a leading '.' (".", "..", hidden files) are
 * percent-encoded. Ordinary names map to themselves, as they always did.
 */
char *tdb_path_segment(const char *name)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = tl_malloc(strlen(name) * 3 + 1), *o = out;
	for (const unsigned char *p = (const unsigned char *)name; *p != '\0'; p++) {
		bool keep = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		            *p == '_' || *p == '-' || (*p == '.' && p != (const unsigned char *)name);
		if (keep) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return out;
}

char *tdb_lake_location(const char *warehouse, const char *schema, const char *table)
{
	char *s = tdb_path_segment(schema), *t = tdb_path_segment(table);
	char *schema_dir = join_path(warehouse, s);
	char *location = join_path(schema_dir, t);
	free(schema_dir);
	free(s);
	free(t);
	return location;
}
