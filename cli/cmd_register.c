/*
 * cmd_register.c: `tierdb register` and `tierdb unregister`.
 *
 * Registration turns a range-partitioned Postgres table into a tiered one
 * (SPEC §3, §4, §6): it validates the table against what tiering needs,
 * creates the empty Iceberg table that will receive its history, and then
 * publishes the table to the catalog (tables, cutline, partitions) in one
 * transaction. The lake table is created first because the catalog must
 * never name a lake table that does not exist; if publishing fails, the
 * directory just created is removed again, so a failed registration leaves
 * nothing behind. Validation happens before anything is written, inside the
 * same transaction that publishes, with the table's partition set locked
 * so the partitions recorded are the ones that exist at commit.
 *
 * Unregistering deletes the catalog rows (everything per-table cascades from
 * tierdb.tables) and, with --drop-lake, the lake table's directory.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "catalog.h"
#include "profiles.h"
#include "cli.h"
#include "lake_catalog.h"
#include "mirror.h"
#include "pg.h"
#include "pgtypes.h"
#include "tierlake/iceberg_metadata.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/io.h"
#include "tierlake/storage.h"

/* Iceberg's convention for the first partition field id. */
#define PARTITION_FIELD_ID_BASE 1000

/* What the command line asked for. */
typedef struct register_args {
	const char *dsn;
	const char *table;
	const char *pk;
	const char *tier_key;
	const char *mode;
	const char *lake_partition;  /* hour|day|month|year|none, NULL when absent */
	const char *profile;
	const char *lake_retention;
	bool has_partition_width;
	int64_t partition_width;
	bool keep_heap;
	const char *heap_retention;  /* mirrored: the window the heap keeps */
	bool has_chunk_rows;
	int64_t chunk_rows;
} register_args;

/* Everything registration derives before it writes. */
typedef struct registration {
	tdb_table_name name;
	uint32_t table_oid;
	tdb_pg_column *cols;
	int ncols;
	int tier_key_index;        /* into cols */
	tdb_key_type key_type;
	cli_column_list pk;        /* --pk split */
	int *pk_index;             /* into cols, per pk column */
	tdb_heap_partition *parts;
	int nparts;
	int first_range;           /* index of the oldest range partition */
	int last_range;            /* index of the newest */
	char *profile;
	bool has_lake_retention;
	int64_t lake_retention;
	bool has_heap_retention;
	int64_t heap_retention;    /* canonical: the heap keeps partitions above max(tier_key) minus this */
	bool keep_heap;
	const char *mode;           /* "tiered", "direct" or "mirrored" */
	tl_ice_transform transform; /* the lake's partition transform on the tier key */
	int64_t heap_width;         /* canonical width of the newest partition */
	tdb_mirror_plumbing mirror; /* mirrored: the publication and slot made for it */
	int64_t chunk_rows;         /* mirrored: rows per chunk of the initial copy */
} registration;

/* =============================================================== helpers */

static void registration_free(registration *r)
{
	tdb_table_name_free(&r->name);
	if (r->cols != NULL)
		tdb_pg_columns_free(r->cols, r->ncols);
	cli_column_list_free(&r->pk);
	free(r->pk_index);
	tdb_heap_partitions_free(r->parts, r->nparts);
	free(r->profile);
	tdb_mirror_plumbing_free(&r->mirror);
}

/* "schema"."table", quoted for SQL. */
static char *qualified_quoted(const tdb_table_name *name)
{
	tl_buf b;
	tl_buf_init(&b);
	tdb_pg_quote_qualified(name->schema, name->table, &b);
	tl_buf_append_byte(&b, '\0');
	return (char *)b.data;
}

/* Undoes tdb_mirror_plumbing_create after a failed registration (outside its transaction). */
static void drop_plumbing(PGconn *c, const registration *r)
{
	tl_error err;
	tl_error_clear(&err);
	if (r->mirror.slot != NULL && tdb_mirror_plumbing_drop(c, &r->mirror, &err) < 0)
		fprintf(stderr, "tierdb register: could not remove the publication %s and slot %s made for the "
		        "registration: %s; drop them by hand (DROP PUBLICATION, pg_drop_replication_slot)\n",
		        r->mirror.publication, r->mirror.slot, err.message);
}

static char *qualified_text(const tdb_table_name *name)
{
	size_t len = strlen(name->schema) + strlen(name->table) + 2;
	char *s = tl_malloc(len);
	snprintf(s, len, "%s.%s", name->schema, name->table);
	return s;
}

/* Removes a lake directory tree through the lake's storage. */
static int remove_lake_dir(const char *location, tl_error *err)
{
	if (tl_storage_remove_all(location, err) < 0) {
		tl_error_prefix(err, "cannot remove the lake table at %s", location);
		return -1;
	}
	return 0;
}

/*
 * A new lake table needs a location that is missing or an empty directory,
 * so that a failed registration can remove everything it made there
 * without touching anything it did not. *existed says which.
 */
static int check_location_free(const char *location, bool *existed, tl_error *err)
{
	tl_storage_list list;
	tl_error why;
	tl_error_clear(&why);
	*existed = false;
	if (tl_storage_list_dir(location, 0, &list, &why) < 0) {
		if (why.code == TL_ERR_NOT_FOUND)
			return 0;
		return tl_error_set(err, why.code, "cannot use lake location %s: %s", location, why.message);
	}
	*existed = true;
	size_t count = list.count;
	tl_storage_list_free(&list);
	if (count > 0)
		return tl_error_set(err, TL_ERR_CONFLICT,
		                    "the lake location %s is not empty (a lake table left by 'tierdb unregister' "
		                    "without --drop-lake?); move or remove it first",
		                    location);
	return 0;
}

/* Undoes create_lake_table: the directory, or only its contents if it existed before. */
static void remove_created_lake(const char *location, bool existed)
{
	tl_error err;
	tl_error_clear(&err);
	if (!existed) {
		remove_lake_dir(location, &err);
	} else {
		static const char *const made[] = {"metadata", "data"};
		for (int i = 0; i < 2 && err.code == TL_OK; i++) {
			size_t len = strlen(location) + strlen(made[i]) + 2;
			char *sub = tl_malloc(len);
			snprintf(sub, len, "%s/%s", location, made[i]);
			remove_lake_dir(sub, &err);
			free(sub);
		}
	}
	if (err.code != TL_OK)
		fprintf(stderr, "tierdb: could not remove the new lake table again: %s\n", err.message);
}

/* =============================================================== validation */

/* The table must exist, be partitioned BY RANGE on exactly the tier key, and not be a partition. */
static int check_table(PGconn *c, registration *r, const register_args *a, tl_error *err)
{
	const char *params[] = {r->name.schema, r->name.table, a->tier_key};
	PGresult *res = tdb_pg_query(
		c, "looking up the table",
		"SELECT c.oid, c.relkind, c.relispartition, pt.partstrat, pt.partnatts,"
		" (SELECT a.attname = $3 FROM pg_catalog.pg_attribute a"
		"   WHERE a.attrelid = c.oid AND a.attnum = pt.partattrs[0]),"
		" CASE WHEN c.relkind = 'p' THEN pg_catalog.pg_get_partkeydef(c.oid) END"
		" FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
		" LEFT JOIN pg_catalog.pg_partitioned_table pt ON pt.partrelid = c.oid"
		" WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
		3, params, err);
	if (res == NULL)
		return -1;
	int rc = 0;
	const char *s = r->name.schema, *t = r->name.table;
	if (PQntuples(res) == 0) {
		rc = tl_error_set(err, TL_ERR_NOT_FOUND, "table %s.%s does not exist in database %s%s", s, t, PQdb(c),
		                  strchr(a->table, '.') ? "" : " (an unqualified name means schema public)");
	} else if (PQgetvalue(res, 0, 2)[0] == 't') {
		rc = tl_error_set(err, TL_ERR_INVALID, "%s.%s is a partition of another table; register the partitioned "
		                  "parent table instead", s, t);
	} else if (strcmp(a->mode, "mirrored") == 0) {
		/* a mirror copies any table, partitioned or not */
		if (PQgetvalue(res, 0, 1)[0] != 'r' && PQgetvalue(res, 0, 1)[0] != 'p')
			rc = tl_error_set(err, TL_ERR_INVALID, "%s.%s is not a table; only tables can be mirrored", s, t);
		else
			r->table_oid = (uint32_t)strtoul(PQgetvalue(res, 0, 0), NULL, 10);
	} else if (PQgetvalue(res, 0, 1)[0] != 'p') {
		rc = tl_error_set(err, TL_ERR_INVALID,
		                  "%s.%s is not partitioned; TierDB tiers range-partitioned tables: create it with "
		                  "PARTITION BY RANGE (%s) and attach partitions",
		                  s, t, a->tier_key);
	} else if (PQgetvalue(res, 0, 3)[0] != 'r') {
		rc = tl_error_set(err, TL_ERR_INVALID,
		                  "%s.%s is partitioned by %s; TierDB tiers tables partitioned BY RANGE (%s)",
		                  s, t, PQgetvalue(res, 0, 6), a->tier_key);
	} else if (strcmp(PQgetvalue(res, 0, 4), "1") != 0 || PQgetvalue(res, 0, 5)[0] != 't') {
		rc = tl_error_set(err, TL_ERR_INVALID,
		                  "%s.%s is partitioned by %s but --tier-key is %s; the partition key must be exactly "
		                  "the tier key column",
		                  s, t, PQgetvalue(res, 0, 6), a->tier_key);
	} else {
		r->table_oid = (uint32_t)strtoul(PQgetvalue(res, 0, 0), NULL, 10);
	}
	PQclear(res);
	return rc;
}

static int find_column(const registration *r, const char *name)
{
	for (int i = 0; i < r->ncols; i++)
		if (strcmp(r->cols[i].name, name) == 0)
			return i;
	return -1;
}

/* The tier key's type and the --pk columns, against the table's mapped columns. */
static int check_columns(PGconn *c, registration *r, const register_args *a, tl_error *err)
{
	if (tdb_pg_table_columns(c, r->table_oid, &r->cols, &r->ncols, err) < 0)
		return -1;
	r->tier_key_index = find_column(r, a->tier_key);
	if (r->tier_key_index < 0) /* the partition key check found it; only a race gets here */
		return tl_error_set(err, TL_ERR_NOT_FOUND, "%s.%s has no column %s", r->name.schema, r->name.table,
		                    a->tier_key);
	if (!tdb_key_type_from_oid(r->cols[r->tier_key_index].type_oid, &r->key_type))
		return tl_error_set(err, TL_ERR_INVALID,
		                    "tier key %s of %s.%s has an unsupported type; a tier key is smallint, integer, "
		                    "bigint, timestamptz, timestamp or date",
		                    a->tier_key, r->name.schema, r->name.table);
	r->pk_index = tl_calloc((size_t)r->pk.count, sizeof(int));
	for (int i = 0; i < r->pk.count; i++) {
		r->pk_index[i] = find_column(r, r->pk.names[i]);
		if (r->pk_index[i] < 0)
			return tl_error_set(err, TL_ERR_NOT_FOUND, "--pk names %s, but %s.%s has no such column",
			                    r->pk.names[i], r->name.schema, r->name.table);
		/* The pk becomes the lake's identifier fields, which Iceberg forbids to be floating point. */
		tl_ice_type_id t = r->cols[r->pk_index[i]].ice_type.id;
		if (t == TL_ICE_FLOAT || t == TL_ICE_DOUBLE)
			return tl_error_set(err, TL_ERR_INVALID,
			                    "--pk column %s is floating point, which cannot identify rows (Iceberg forbids "
			                    "float and double identifier fields); choose key columns of another type",
			                    r->pk.names[i]);
	}
	return 0;
}

/*
 * A nullable --pk column must hold no NULLs: the lake's identifier fields
 * are required, so such a row could never move to the lake.
 */
static int check_pk_nulls(PGconn *c, const registration *r, tl_error *err)
{
	int rc = 0;
	for (int i = 0; i < r->pk.count && rc == 0; i++) {
		if (r->cols[r->pk_index[i]].not_null)
			continue;
		tl_buf sql;
		tl_buf_init(&sql);
		tl_buf_append_str(&sql, "SELECT EXISTS (SELECT 1 FROM ");
		tdb_pg_quote_qualified(r->name.schema, r->name.table, &sql);
		tl_buf_append_str(&sql, " WHERE ");
		tdb_pg_quote_ident(r->pk.names[i], &sql);
		tl_buf_append_str(&sql, " IS NULL)");
		tl_buf_append_byte(&sql, '\0');
		PGresult *res = tdb_pg_query(c, "looking for NULL keys", (const char *)sql.data, 0, NULL, err);
		tl_buf_free(&sql);
		if (res == NULL)
			return -1;
		if (PQgetvalue(res, 0, 0)[0] == 't')
			rc = tl_error_set(err, TL_ERR_INVALID,
			                  "--pk column %s of %s.%s holds NULLs, which cannot identify a row; give those rows "
			                  "a key and declare it NOT NULL (ALTER TABLE %s.%s ALTER COLUMN %s SET NOT NULL)",
			                  r->pk.names[i], r->name.schema, r->name.table, r->name.schema, r->name.table,
			                  r->pk.names[i]);
		PQclear(res);
	}
	return rc;
}

/*
 * Whether DEFAULT partition p is the spill partition of transparent writes
 * (extension/sql/0.1/47-transparent-writes.sql): the one carrying the
 * tierdb_spill trigger. It stays empty, so registration passes over it.
 */
static bool is_spill_partition(PGconn *c, const tdb_heap_partition *p)
{
	const char *params[] = {p->partition_id};
	tl_error ignored;
	tl_error_clear(&ignored);
	PGresult *res = tdb_pg_query(c, "looking for the spill partition",
	                             "SELECT EXISTS (SELECT FROM pg_catalog.pg_trigger g"
	                             " WHERE g.tgrelid = pg_catalog.to_regclass($1) AND g.tgname = 'tierdb_spill')",
	                             1, params, &ignored);
	bool spill = res != NULL && PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	return spill;
}

/* The partitions: contiguous bounded range partitions, no DEFAULT (but the spill partition), none sub-partitioned. */
static int check_partitions(PGconn *c, registration *r, tl_error *err)
{
	if (tdb_heap_partitions(c, r->table_oid, r->key_type, &r->parts, &r->nparts, err) < 0)
		return -1;
	r->first_range = r->last_range = -1;
	for (int i = 0; i < r->nparts; i++) {
		const tdb_heap_partition *p = &r->parts[i];
		if (p->is_partitioned)
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "partition %s of %s.%s is itself partitioned; TierDB tiers one level of range "
			                    "partitions",
			                    p->partition_id, r->name.schema, r->name.table);
		if (p->is_default && is_spill_partition(c, p))
			continue; /* transparent writes' own, made by an earlier registration of this table */
		if (p->is_default)
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "%s.%s has a DEFAULT partition (%s); rows below the cut-line that land there would "
			                    "be invisible to reads and block new partitions: move its rows into range "
			                    "partitions and detach it (ALTER TABLE %s.%s DETACH PARTITION %s) before "
			                    "registering",
			                    r->name.schema, r->name.table, p->partition_id, r->name.schema, r->name.table,
			                    p->partition_id);
		if (!p->has_lo || !p->has_hi)
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "partition %s of %s.%s is unbounded (%s); every range partition needs finite "
			                    "bounds so that it can move to the lake whole",
			                    p->partition_id, r->name.schema, r->name.table, p->bound);
		if (r->first_range >= 0 && r->parts[r->last_range].hi != p->lo)
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "%s.%s has a gap between partitions %s and %s; tiering moves the cut-line "
			                    "through contiguous ranges: create a partition for the missing range first",
			                    r->name.schema, r->name.table, r->parts[r->last_range].partition_id,
			                    p->partition_id);
		if (r->first_range < 0)
			r->first_range = i;
		r->last_range = i;
	}
	if (r->first_range < 0)
		return tl_error_set(err, TL_ERR_INVALID,
		                    "%s.%s has no range partitions; create at least one (CREATE TABLE ... PARTITION OF "
		                    "%s.%s FOR VALUES FROM (...) TO (...)) before registering",
		                    r->name.schema, r->name.table, r->name.schema, r->name.table);
	const tdb_heap_partition *newest = &r->parts[r->last_range];
	r->heap_width = newest->hi - newest->lo;
	return 0;
}

/* The lake's partition transform per SPEC §6. */
static int choose_transform(registration *r, const register_args *a, tl_error *err)
{
	if (r->key_type == TDB_KEY_BIGINT) {
		if (a->lake_partition != NULL)
			return tl_error_set(err, TL_ERR_INVALID,
			                    "--lake-partition applies to timestamp and date tier keys; %s is an integer: "
			                    "use --partition-width N (0 for none)",
			                    a->tier_key);
		/* a mirrored table need not be partitioned: its lake then is not either, unless asked */
		int64_t width = a->has_partition_width ? a->partition_width
		                : r->nparts > 0       ? r->parts[r->first_range].hi - r->parts[r->first_range].lo
		                                      : 0;
		if (width > INT32_MAX)
			return tl_error_set(err, TL_ERR_INVALID,
			                    "the lake partition width %" PRId64 " is larger than Iceberg's truncate allows (%d); "
			                    "pass --partition-width N",
			                    width, INT32_MAX);
		r->transform.kind = width == 0 ? TL_ICE_VOID : TL_ICE_TRUNCATE;
		r->transform.param = (int32_t)width;
		return 0;
	}
	if (a->has_partition_width)
		return tl_error_set(err, TL_ERR_INVALID,
		                    "--partition-width applies to integer tier keys; %s is a %s: use --lake-partition "
		                    "hour|day|month|year|none",
		                    a->tier_key, tdb_key_type_name(r->key_type));
	const char *lp = a->lake_partition ? a->lake_partition : "day";
	r->transform.param = 0;
	if (strcmp(lp, "hour") == 0 && r->key_type == TDB_KEY_DATE)
		return tl_error_set(err, TL_ERR_INVALID, "--lake-partition hour needs a timestamp tier key; %s is a date",
		                    a->tier_key);
	r->transform.kind = strcmp(lp, "hour") == 0    ? TL_ICE_HOUR
	                    : strcmp(lp, "day") == 0   ? TL_ICE_DAY
	                    : strcmp(lp, "month") == 0 ? TL_ICE_MONTH
	                    : strcmp(lp, "year") == 0  ? TL_ICE_YEAR
	                                               : TL_ICE_VOID;
	return 0;
}

static int validate(PGconn *c, registration *r, const register_args *a, tl_error *err)
{
	bool mirrored = strcmp(a->mode, "mirrored") == 0;
	/* a heap that keeps a window drops whole range partitions, as tiering does */
	bool partitioned = !mirrored || a->heap_retention != NULL;
	if (check_columns(c, r, a, err) < 0 || (partitioned && check_partitions(c, r, err) < 0) ||
	    check_pk_nulls(c, r, err) < 0 || choose_transform(r, a, err) < 0)
		return -1;
	r->chunk_rows = a->has_chunk_rows ? a->chunk_rows : TDB_MIRROR_DEFAULT_CHUNK_ROWS;
	if (a->lake_retention != NULL) {
		if (tdb_key_parse_lag(r->key_type, a->lake_retention, "--lake-retention", &r->lake_retention, err) < 0)
			return -1;
		if (r->lake_retention == 0)
			return tl_error_set(err, TL_ERR_INVALID,
			                    "--lake-retention must be positive; leave it out to keep history forever");
		r->has_lake_retention = true;
	}
	if (a->heap_retention != NULL) {
		if (tdb_key_parse_lag(r->key_type, a->heap_retention, "--heap-retention", &r->heap_retention, err) < 0)
			return -1;
		if (r->heap_retention == 0)
			return tl_error_set(err, TL_ERR_INVALID,
			                    "--heap-retention must be positive; leave it out to keep every row in the heap");
		r->has_heap_retention = true;
	}
	r->keep_heap = a->keep_heap;
	r->mode = a->mode;
	r->profile = tdb_catalog_profile(c, a->profile, err);
	return r->profile ? 0 : -1;
}

/* =============================================================== what gets written */

static char *transform_text(const tl_ice_transform *t)
{
	tl_buf b;
	tl_buf_init(&b);
	tl_ice_transform_text(t, &b);
	tl_buf_append_byte(&b, '\0');
	return (char *)b.data;
}

/* tables.partition_scheme (documented in catalog.h). */
static char *partition_scheme_json(const registration *r)
{
	json_t *o = json_object();
	char *t = transform_text(&r->transform);
	json_object_set_new(o, "lake_transform", json_string(t));
	free(t);
	if (r->key_type == TDB_KEY_BIGINT)
		json_object_set_new(o, "lake_partition_width",
		                    json_integer(r->transform.kind == TL_ICE_TRUNCATE ? r->transform.param : 0));
	json_object_set_new(o, "heap_partition_width", json_integer(r->heap_width));
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

/* Field ids 1..n in attnum order; pk columns required, identifier fields = the pk. */
static int build_schema(const registration *r, tl_ice_schema *schema, tl_error *err)
{
	tl_ice_field *fields = tl_calloc((size_t)r->ncols, sizeof(*fields));
	for (int i = 0; i < r->ncols; i++) {
		fields[i].id = i + 1;
		fields[i].name = r->cols[i].name;
		fields[i].type = r->cols[i].ice_type;
		fields[i].required = r->cols[i].not_null;
	}
	for (int i = 0; i < r->pk.count; i++)
		fields[r->pk_index[i]].required = true;
	int rc = tl_ice_schema_init(schema, 0, fields, r->ncols, err);
	free(fields);
	if (rc < 0)
		return -1;
	schema->nidentifier_ids = r->pk.count;
	schema->identifier_ids = tl_malloc((size_t)r->pk.count * sizeof(int32_t));
	for (int i = 0; i < r->pk.count; i++)
		schema->identifier_ids[i] = r->pk_index[i] + 1;
	return 0;
}

static void build_spec(const registration *r, tl_ice_partition_spec *spec)
{
	tl_ice_partition_spec_init(spec, 0);
	if (r->transform.kind == TL_ICE_VOID)
		return; /* unpartitioned: no field at all, as engines write it */
	static const struct {
		tl_ice_transform_kind kind;
		const char *suffix;
	} suffixes[] = {{TL_ICE_TRUNCATE, "trunc"}, {TL_ICE_HOUR, "hour"}, {TL_ICE_DAY, "day"},
	                {TL_ICE_MONTH, "month"},    {TL_ICE_YEAR, "year"}};
	const char *suffix = "part";
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (suffixes[i].kind == r->transform.kind)
			suffix = suffixes[i].suffix;
	const char *col = r->cols[r->tier_key_index].name;
	size_t len = strlen(col) + strlen(suffix) + 2;
	char *name = tl_malloc(len);
	snprintf(name, len, "%s_%s", col, suffix);
	tl_ice_partition_spec_add(spec, r->tier_key_index + 1, PARTITION_FIELD_ID_BASE, name, r->transform);
	free(name);
}

/*
 * Creates the table in the REST catalog `rc` at `location` (a free one, as
 * for a path-based table). The catalog assigns field ids afresh; in
 * attnum order they are the ids build_schema gave, and the table is
 * refused (and dropped again) if the catalog made them anything else.
 */
static tl_ice_table *create_in_catalog(const registration *r, tl_rest_catalog *rc, const char *location,
                                       const tl_ice_schema *schema, const tl_ice_partition_spec *spec,
                                       const tl_ice_kv *props, int nprops, tl_error *err)
{
	const char *ns = tdb_lake_catalog_namespace(r->name.schema);
	if (tl_rest_catalog_create_namespace(rc, ns, err) < 0)
		return NULL;
	tl_ice_table *t = tl_rest_catalog_create_table(rc, ns, r->name.table, location, schema, spec, props, nprops, err);
	if (t != NULL && !tl_ice_schema_equal(tl_ice_metadata_current_schema(t->metadata), schema)) {
		tl_error_set(err, TL_ERR_UNSUPPORTED,
		             "the REST catalog %s gave table %s.%s field ids other than TierDB's (1..n in column order)",
		             tl_rest_catalog_uri(rc), ns, r->name.table);
		tl_error ignored;
		tl_error_clear(&ignored);
		(void)tl_rest_catalog_drop_table(rc, ns, r->name.table, &ignored);
		tl_ice_table_free(t);
		t = NULL;
	}
	return t;
}

/* Creates the empty lake table at a free location (check_location_free), in the REST catalog rc if not NULL. */
static tl_ice_table *create_lake_table(const registration *r, const char *location, tl_rest_catalog *rc,
                                       tl_error *err)
{
	tl_ice_schema schema;
	if (build_schema(r, &schema, err) < 0)
		return NULL;
	tl_ice_partition_spec spec;
	build_spec(r, &spec);
	char table_id[16];
	snprintf(table_id, sizeof(table_id), "%u", r->table_oid);
	char *source = qualified_text(&r->name);
	tl_ice_kv props[] = {
		{"tierdb.table-id", table_id},
		{"tierdb.source-table", source},
		{"tierdb.tier-key", r->cols[r->tier_key_index].name},
		{"write.format.default", "parquet"},
		{"write.parquet.compression-codec", "zstd"},
	};
	int nprops = (int)(sizeof(props) / sizeof(props[0]));
	tl_ice_table *t = rc ? create_in_catalog(r, rc, location, &schema, &spec, props, nprops, err)
	                     : tl_ice_table_create(location, &schema, &spec, props, nprops, err);
	free(source);
	tl_ice_partition_spec_free(&spec);
	tl_ice_schema_free(&schema);
	return t;
}

/* The metadata location a reader opens: <location>/metadata/<file name>. */
static char *metadata_location(const tl_ice_table *t)
{
	const char *slash = strrchr(t->metadata_file, '/');
	const char *file = slash ? slash + 1 : t->metadata_file;
	size_t len = strlen(t->location) + strlen(file) + sizeof("/metadata/");
	char *s = tl_malloc(len);
	snprintf(s, len, "%s/metadata/%s", t->location, file);
	return s;
}

static char *json_text_array(char **items, int n)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_string(items[i]));
	char *s = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return s;
}

static char *partitions_json(const registration *r)
{
	json_t *a = json_array();
	for (int i = 0; i < r->nparts; i++) {
		const tdb_heap_partition *p = &r->parts[i];
		if (p->is_default)
			continue;
		json_t *o = json_object();
		json_object_set_new(o, "id", json_string(p->partition_id));
		json_object_set_new(o, "lo", json_integer(p->lo));
		json_object_set_new(o, "hi", json_integer(p->hi));
		json_array_append_new(a, o);
	}
	char *s = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return s;
}

/* The three inserts of the publishing transaction. */
static int insert_catalog_rows(PGconn *c, const registration *r, const char *location, const char *md_location,
                               const tl_rest_catalog *rest, tl_error *err)
{
	char table_id[16], retention[24], heap_retention[24], cut[24], consistent[24], chunk[24];
	bool mirrored = strcmp(r->mode, "mirrored") == 0;
	/* a mirrored table's heap keeps every row: no cut-line (SPEC §3); with heap retention, T rises as it drops */
	bool has_cut = !mirrored || r->has_heap_retention;
	snprintf(table_id, sizeof(table_id), "%u", r->table_oid);
	snprintf(retention, sizeof(retention), "%" PRId64, r->lake_retention);
	snprintf(heap_retention, sizeof(heap_retention), "%" PRId64, r->heap_retention);
	if (has_cut)
		snprintf(cut, sizeof(cut), "%" PRId64, r->parts[r->first_range].lo);
	snprintf(consistent, sizeof(consistent), "%" PRId64, r->mirror.consistent_point);
	snprintf(chunk, sizeof(chunk), "%" PRId64, r->chunk_rows);
	char *pk = json_text_array(r->pk.names, r->pk.count);
	char *scheme = partition_scheme_json(r);
	json_t *props = json_pack("{s:s, s:n}", "metadata_location", md_location, "snapshot_id");
	if (rest != NULL) {
		/* The table is the catalog's: every later open goes through it (lake_catalog.h). */
		char *entry = tdb_lake_catalog_props(rest, tdb_lake_catalog_namespace(r->name.schema), r->name.table);
		int set = json_object_set_new(props, "rest_catalog", entry ? json_loads(entry, 0, NULL) : NULL);
		free(entry);
		if (set < 0) {
			json_decref(props);
			free(pk);
			free(scheme);
			return tl_error_set(err, TL_ERR_NOMEM, "out of memory recording the REST catalog of %s.%s",
			                    r->name.schema, r->name.table);
		}
	}
	char *lake_props = json_dumps(props, JSON_COMPACT);
	json_decref(props);
	char *parts = partitions_json(r);

	const char *tparams[] = {table_id,
	                         r->name.schema,
	                         r->name.table,
	                         pk,
	                         r->cols[r->tier_key_index].name,
	                         tdb_key_type_name(r->key_type),
	                         scheme,
	                         location,
	                         r->profile,
	                         r->has_lake_retention ? retention : NULL,
	                         r->keep_heap ? "true" : "false",
	                         r->mode,
	                         r->mirror.publication,
	                         r->mirror.slot,
	                         r->has_heap_retention ? heap_retention : NULL};
	const char *cparams[] = {table_id, has_cut ? cut : NULL, lake_props};
	const char *mparams[] = {table_id, consistent, chunk};
	const char *pparams[] = {table_id, parts};
	int rc = tdb_pg_exec(c, "writing tierdb.tables",
	                     "INSERT INTO tierdb.tables (table_id, schema_name, table_name, primary_key_cols, "
	                     "tier_key_col, tier_key_type, partition_scheme, lake_format, lake_table_ref, "
	                     "storage_profile, mode, lake_retention_lag, keep_heap, publication_name, slot_name, "
	                     "heap_retention_lag) "
	                     "VALUES ($1::bigint, $2, $3, ARRAY(SELECT jsonb_array_elements_text($4::jsonb)), $5, $6, "
	                     "$7::jsonb, 'iceberg', $8, $9, $12, $10::bigint, $11::boolean, $13, $14, $15::bigint)",
	                     15, tparams, err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "writing tierdb.cutline",
		                 "INSERT INTO tierdb.cutline (table_id, tier_key_hi, lake_snapshot_id, lake_props) "
		                 "VALUES ($1::bigint, $2::bigint, NULL, $3::jsonb)",
		                 3, cparams, err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "writing tierdb.partitions",
		                 "INSERT INTO tierdb.partitions (table_id, partition_id, tier_key_lo, tier_key_hi, state) "
		                 "SELECT $1::bigint, p.id, p.lo, p.hi, 'hot' "
		                 "FROM jsonb_to_recordset($2::jsonb) AS p(id text, lo bigint, hi bigint)",
		                 2, pparams, err);
	/*
	 * transparent writes: the spill partition for rows below the cut-line (SPEC §7); a keep-heap table
	 * needs none, its heap keeps every row (tiering.c mirrors its tiered partitions)
	 */
	/* the initial copy starts where the slot's stream does (cli/mirror.c) */
	if (rc == 0 && mirrored)
		rc = tdb_pg_exec(c, "writing tierdb.copy_progress",
		                 "INSERT INTO tierdb.copy_progress (table_id, consistent_point, last_pk, chunks_done) "
		                 "VALUES ($1::bigint, $2::bigint, jsonb_build_object('chunk_rows', $3::bigint), 0)",
		                 3, mparams, err);
	if (rc == 0 && !r->keep_heap && has_cut)
		rc = tdb_pg_exec(c, "creating the spill partition of transparent writes",
		                 "SELECT tierdb_enable_transparent_writes($1::bigint::oid::regclass)", 1, tparams, err);
	free(pk);
	free(scheme);
	free(lake_props);
	free(parts);
	return rc;
}

/* =============================================================== re-registration */

/*
 * Compares an existing registration with this command line: the same
 * arguments are a no-op (returns 1), different ones an error naming each
 * difference. Options left out compare against their defaults, except the
 * partition width and lake partitioning, whose defaults come from the
 * table's partitions, which tiering changes afterwards.
 */
static int compare_registration(const tdb_catalog_table *old, const registration *r, const register_args *a,
                                tl_error *err)
{
	tl_buf diff;
	tl_buf_init(&diff);
	char *old_pk = json_text_array(old->pk_cols, old->npk);
	char *new_pk = json_text_array(r->pk.names, r->pk.count);
	if (strcmp(old_pk, new_pk) != 0)
		tl_buf_printf(&diff, "; --pk was %s, now %s", old_pk, new_pk);
	free(old_pk);
	free(new_pk);
	if (strcmp(old->tier_key_col, r->cols[r->tier_key_index].name) != 0)
		tl_buf_printf(&diff, "; --tier-key was %s, now %s", old->tier_key_col, a->tier_key);
	if (strcmp(old->mode, r->mode) != 0)
		tl_buf_printf(&diff, "; --mode was %s, now %s", old->mode, r->mode);
	if (old->has_heap_retention != r->has_heap_retention ||
	    (r->has_heap_retention && old->heap_retention_lag != r->heap_retention))
		tl_buf_printf(&diff, "; --heap-retention was %s, now %s", old->has_heap_retention ? "given" : "not given",
		              r->has_heap_retention ? "given" : "not given");
	if (old->keep_heap != r->keep_heap)
		tl_buf_printf(&diff, "; --keep-heap was %s, now %s", old->keep_heap ? "given" : "not given",
		              r->keep_heap ? "given" : "not given");
	if (strcmp(old->storage_profile, r->profile) != 0)
		tl_buf_printf(&diff, "; --profile was %s, now %s", old->storage_profile, r->profile);
	if (old->has_lake_retention != r->has_lake_retention ||
	    (r->has_lake_retention && old->lake_retention_lag != r->lake_retention)) {
		char was[32] = "none", now[32] = "none";
		if (old->has_lake_retention)
			snprintf(was, sizeof(was), "%" PRId64, old->lake_retention_lag);
		if (r->has_lake_retention)
			snprintf(now, sizeof(now), "%" PRId64, r->lake_retention);
		tl_buf_printf(&diff, "; --lake-retention was %s, now %s (canonical units)", was, now);
	}
	if (a->has_partition_width || a->lake_partition != NULL) {
		json_t *scheme = json_loads(old->partition_scheme ? old->partition_scheme : "{}", 0, NULL);
		const char *was = json_string_value(json_object_get(scheme, "lake_transform"));
		char *now = transform_text(&r->transform);
		if (was == NULL || strcmp(was, now) != 0)
			tl_buf_printf(&diff, "; the lake partitioning was %s, now %s", was ? was : "unknown", now);
		free(now);
		json_decref(scheme);
	}
	int rc = 1;
	if (diff.len > 0) {
		tl_buf_append_byte(&diff, '\0');
		rc = tl_error_set(err, TL_ERR_INVALID,
		                  "%s.%s is already registered with other settings%s; run 'tierdb unregister --table "
		                  "%s.%s' first to change them",
		                  old->schema_name, old->table_name, (const char *)diff.data, old->schema_name,
		                  old->table_name);
	}
	tl_buf_free(&diff);
	return rc;
}

/* 1 if the table is registered already with these arguments, 0 if not registered, -1 on error. */
static int check_existing(PGconn *c, const registration *r, const register_args *a, tl_error *err)
{
	tdb_catalog_table old;
	int found = tdb_catalog_load_table(c, r->name.schema, r->name.table, &old, err);
	if (found == 1) {
		int rc = old.table_id == (int64_t)r->table_oid
		             ? compare_registration(&old, r, a, err)
		             : tl_error_set(err, TL_ERR_INVALID,
		                            "the catalog registers a different table under the name %s.%s (it was "
		                            "dropped and created again?); run 'tierdb unregister --table %s.%s' first",
		                            r->name.schema, r->name.table, r->name.schema, r->name.table);
		tdb_catalog_table_free(&old);
		return rc;
	}
	if (found < 0)
		return -1;
	found = tdb_catalog_load_table_by_id(c, r->table_oid, &old, err);
	if (found == 1) {
		tl_error_set(err, TL_ERR_INVALID,
		             "%s.%s is registered under its old name %s.%s (renamed?); unregister %s.%s and register "
		             "again",
		             r->name.schema, r->name.table, old.schema_name, old.table_name, old.schema_name,
		             old.table_name);
		tdb_catalog_table_free(&old);
		return -1;
	}
	return found;
}

/* =============================================================== register */

static void register_usage(FILE *out)
{
	fputs("Usage: tierdb register --table SCHEMA.TABLE --pk COL[,COL...] --tier-key COL [options]\n"
	      "\n"
	      "Registers a range-partitioned table for tiering: creates its Iceberg table in the\n"
	      "lake and records it in the tierdb catalog. The table must be PARTITION BY RANGE on\n"
	      "the tier key (smallint, integer, bigint, timestamptz, timestamp or date) with at\n"
	      "least one bounded partition. --pk names the merge key; it need not be a declared\n"
	      "constraint. Running it again with the same arguments changes nothing.\n"
	      "\n"
	      "Options:\n"
	      "  --table S.T            the table (schema public when unqualified)\n"
	      "  --pk C[,C]             the columns that identify a row\n"
	      "  --tier-key C           the partition key column rows age along\n"
	      "  --mode M               tiered (the default) or direct (writes below the cut-line are\n"
	      "                         committed to the lake with their transaction, no delta kept:\n"
	      "                         docs/direct.md) or mirrored (the heap keeps every row, the lake a\n"
	      "                         full copy the daemon keeps from the replication stream; any\n"
	      "                         table, partitioned or not; needs wal_level = logical:\n"
	      "                         docs/mirrored.md)\n"
	      "  --chunk-rows N         mirrored: rows per chunk of the initial copy (default 100000)\n"
	      "  --heap-retention N     mirrored, range-partitioned by the tier key: the heap keeps only\n"
	      "                         the partitions within N of max(tier key) (units as for\n"
	      "                         --lake-retention); older ones are dropped once mirrored, and\n"
	      "                         reads and writes below them work as for a tiered table\n"
	      "  --partition-width N    integer keys: the lake's truncate width (default: the oldest\n"
	      "                         partition's width; 0 = unpartitioned)\n"
	      "  --lake-partition P     temporal keys: hour, day (default), month, year or none\n"
	      "  --profile P            the storage profile (default: the default profile)\n"
	      "  --lake-retention N     expire lake rows older than N (integers: a number; timestamps:\n"
	      "                         90s, 15m, 12h, 7d; dates: days); 'tierdb policy' changes it\n"
	      "  --keep-heap            keep tiered partitions in the heap too: the lake serves reads\n"
	      "                         below the cut-line, plain DML on them is mirrored into the lake\n"
	      "  --dsn DSN              the database (else TIERDB_PG_URL, else PG* variables;\n"
	      "                         TIERDB_PG_USER and TIERDB_PG_PASSWORD give user and password)\n"
	      "\n"
	      "The table may have no DEFAULT partition and no gaps between partitions, and a\n"
	      "nullable --pk column must hold no NULLs.\n"
	      "\n"
	      "The lake table goes to <warehouse>/<schema>/<table> (names percent-encoded where\n"
	      "they are not [A-Za-z0-9_.-] or start with '.'): the warehouse is the profile's,\n"
	      "else TIERDB_WAREHOUSE, else $XDG_DATA_HOME/tierdb/warehouse or\n"
	      "$HOME/.local/share/tierdb/warehouse.\n",
	      out);
}

enum {
	OPT_TABLE = 1,
	OPT_PK,
	OPT_TIER_KEY,
	OPT_MODE,
	OPT_PARTITION_WIDTH,
	OPT_LAKE_PARTITION,
	OPT_PROFILE,
	OPT_HEAP_RETENTION,
	OPT_LAKE_RETENTION,
	OPT_KEEP_HEAP,
	OPT_CHUNK_ROWS,
	OPT_DSN,
	OPT_DROP_LAKE
};

/* parse_register_args: --help was printed, nothing more to do (exit statuses are >= 0). */
#define PARSED_HELP (-1)

/* 0 when the arguments are complete, PARSED_HELP, or a usage exit status (printed). */
static int parse_register_args(int argc, char **argv, register_args *a)
{
	static const char *cmd = "tierdb register";
	static const cli_option options[] = {
		{"table", true, OPT_TABLE},           {"pk", true, OPT_PK},
		{"tier-key", true, OPT_TIER_KEY},     {"mode", true, OPT_MODE},
		{"partition-width", true, OPT_PARTITION_WIDTH},
		{"lake-partition", true, OPT_LAKE_PARTITION},
		{"profile", true, OPT_PROFILE},       {"heap-retention", true, OPT_HEAP_RETENTION},
		{"lake-retention", true, OPT_LAKE_RETENTION},
		{"keep-heap", false, OPT_KEEP_HEAP},  {"chunk-rows", true, OPT_CHUNK_ROWS},
		{"dsn", true, OPT_DSN},               {NULL, false, 0}};
	memset(a, 0, sizeof(*a));
	a->mode = "tiered";
	cli_parser p;
	cli_parser_init(&p, cmd, register_usage, options, argc, argv);
	for (int opt; (opt = cli_next(&p)) != CLI_END;) {
		switch (opt) {
		case CLI_HELP:
			cli_help(&p);
			return PARSED_HELP;
		case CLI_ERROR:
			return CLI_EXIT_USAGE;
		case CLI_POSITIONAL:
			return cli_usage_error(cmd, "unexpected argument '%s'", p.value);
		case OPT_TABLE: a->table = p.value; break;
		case OPT_PK: a->pk = p.value; break;
		case OPT_TIER_KEY: a->tier_key = p.value; break;
		case OPT_MODE: a->mode = p.value; break;
		case OPT_PARTITION_WIDTH:
			if (cli_parse_int(&p, 0, INT64_MAX, &a->partition_width) < 0)
				return CLI_EXIT_USAGE;
			a->has_partition_width = true;
			break;
		case OPT_LAKE_PARTITION:
			a->lake_partition = p.value;
			if (strcmp(p.value, "hour") != 0 && strcmp(p.value, "day") != 0 && strcmp(p.value, "month") != 0 &&
			    strcmp(p.value, "year") != 0 && strcmp(p.value, "none") != 0)
				return cli_usage_error(cmd, "--lake-partition must be hour, day, month, year or none, not '%s'",
				                       p.value);
			break;
		case OPT_PROFILE: a->profile = p.value; break;
		case OPT_HEAP_RETENTION: a->heap_retention = p.value; break;
		case OPT_LAKE_RETENTION: a->lake_retention = p.value; break;
		case OPT_KEEP_HEAP: a->keep_heap = true; break;
		case OPT_CHUNK_ROWS:
			if (cli_parse_int(&p, 1, INT64_MAX, &a->chunk_rows) < 0)
				return CLI_EXIT_USAGE;
			a->has_chunk_rows = true;
			break;
		case OPT_DSN: a->dsn = p.value; break;
		}
	}
	if (a->table == NULL || a->pk == NULL || a->tier_key == NULL)
		return cli_usage_error(cmd, "--table, --pk and --tier-key are required");
	if (strcmp(a->mode, "tiered") != 0 && strcmp(a->mode, "direct") != 0 && strcmp(a->mode, "mirrored") != 0)
		return cli_usage_error(cmd, "--mode must be tiered, direct or mirrored, not '%s'", a->mode);
	return 0;
}

/* Splits --pk at commas; an empty or repeated name is a usage error (printed; -1). */
static int split_pk(const char *arg, cli_column_list *list)
{
	list->text = tl_strdup(arg);
	list->names = tl_malloc((strlen(arg) + 1) * sizeof(char *));
	list->count = 0;
	for (char *name = list->text, *next; name != NULL; name = next) {
		next = strchr(name, ',');
		if (next != NULL)
			*next++ = '\0';
		if (*name == '\0') {
			cli_usage_error("tierdb register", "--pk has an empty column name in '%s'", arg);
			return -1;
		}
		for (int k = 0; k < list->count; k++)
			if (strcmp(list->names[k], name) == 0) {
				cli_usage_error("tierdb register", "--pk names column %s twice", name);
				return -1;
			}
		list->names[list->count++] = name;
	}
	return 0;
}

/* Modes and options of later issues: refused before anything connects. */
static int refuse_unsupported(const register_args *a)
{
	bool mirrored = strcmp(a->mode, "mirrored") == 0;
	if (mirrored && (a->keep_heap || a->lake_retention != NULL))
		return cli_fail("--%s applies to tiered and direct tables, not to --mode mirrored, whose heap keeps every "
		                "row", a->keep_heap ? "keep-heap" : "lake-retention");
	if (strcmp(a->mode, "direct") == 0 && a->keep_heap)
		return cli_fail("--keep-heap is not supported with --mode direct yet; register the table with --mode tiered "
		                "--keep-heap, or --mode direct alone");
	if (a->heap_retention != NULL && !mirrored)
		return cli_fail("--heap-retention keeps a window of a mirrored table's heap; it needs --mode mirrored "
		                "(a tiered table's heap keeps a window by tiering: TIERDB_TIERING_LAG)");
	if (a->keep_heap && a->lake_retention != NULL)
		return cli_fail("--lake-retention cannot be combined with --keep-heap: a keep-heap table keeps every row "
		                "in its heap, so the lake must keep them too; leave one of them out");
	if (a->has_chunk_rows && !mirrored)
		return cli_fail("--chunk-rows sizes a mirrored table's initial copy; it needs --mode mirrored");
	return 0;
}

/* Connects and checks the catalog; NULL after printing the error. */
static PGconn *connect_checked(const char *dsn)
{
	tl_error err;
	tl_error_clear(&err);
	PGconn *c = tdb_pg_connect(dsn, &err);
	/* Profiles on S3 are served before any lake location is touched. */
	if (c != NULL && (tdb_catalog_check(c, &err) < 0 || tdb_profiles_serve(c, NULL, &err) < 0)) {
		PQfinish(c);
		c = NULL;
	}
	if (c == NULL)
		cli_fail("%s", err.message);
	return c;
}

/*
 * Validates, creates the lake table and publishes, all inside one catalog
 * transaction. Returns the exit status; prints the outcome.
 */
static int do_register(PGconn *c, registration *r, const register_args *a)
{
	tl_error err;
	tl_error_clear(&err);
	tl_buf lock_sql;
	tl_buf_init(&lock_sql);
	/* Blocks partition attach/detach/create until commit, never inserts. */
	tl_buf_append_str(&lock_sql, "LOCK TABLE ");
	tdb_pg_quote_qualified(r->name.schema, r->name.table, &lock_sql);
	tl_buf_append_str(&lock_sql, " IN SHARE UPDATE EXCLUSIVE MODE");
	tl_buf_append_byte(&lock_sql, '\0');

	int rc = tdb_pg_exec(c, "starting the registration", "BEGIN", 0, NULL, &err);
	/* The table's existence is checked (and reported clearly) before locking it. */
	if (rc == 0)
		rc = check_table(c, r, a, &err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "locking the table's partitions", (const char *)lock_sql.data, 0, NULL, &err);
	tl_buf_free(&lock_sql);
	if (rc == 0)
		rc = validate(c, r, a, &err);
	int existing = rc == 0 ? check_existing(c, r, a, &err) : -1;
	bool mirrored = strcmp(r->mode, "mirrored") == 0;
	if (existing == 0 && mirrored) {
		/* the stream's plumbing is made before the registration's transaction (mirror_setup.c) */
		tdb_pg_exec(c, "ending the checks", "ROLLBACK", 0, NULL, NULL);
		char *qualified = qualified_quoted(&r->name);
		rc = tdb_mirror_plumbing_create(c, r->table_oid, qualified, &r->mirror, &err);
		free(qualified);
		if (rc == 0)
			rc = tdb_pg_exec(c, "starting the registration", "BEGIN", 0, NULL, &err);
		if (rc == 0)
			rc = check_table(c, r, a, &err);
		if (rc < 0) {
			tdb_pg_exec(c, "ending the registration", "ROLLBACK", 0, NULL, NULL);
			drop_plumbing(c, r);
			return cli_fail("cannot register %s: %s", a->table, err.message);
		}
	}
	if (existing != 0) {
		tdb_pg_exec(c, "ending the registration", "ROLLBACK", 0, NULL, NULL);
		if (existing < 0)
			return cli_fail("cannot register %s: %s", a->table, err.message);
		printf("%s.%s is already registered with these settings; nothing to do\n", r->name.schema, r->name.table);
		return cli_finish_output();
	}

	/* With TIERDB_CATALOG_URI set, the lake table is created in (and committed through) that REST catalog. */
	tl_rest_catalog *rest = tdb_lake_catalog_from_env(&err);
	char *warehouse = err.code == TL_OK ? tdb_catalog_warehouse(c, r->profile, &err) : NULL;
	char *location = warehouse ? tdb_lake_location(warehouse, r->name.schema, r->name.table) : NULL;
	bool existed = false;
	bool free_location = location != NULL && check_location_free(location, &existed, &err) == 0;
	tl_ice_table *lake = free_location ? create_lake_table(r, location, rest, &err) : NULL;
	char *md_location = lake ? metadata_location(lake) : NULL;
	rc = md_location ? insert_catalog_rows(c, r, lake->location, md_location, rest, &err) : -1;
	bool outcome_unknown = false;
	if (rc == 0) {
		rc = tdb_pg_exec(c, "committing the registration", "COMMIT", 0, NULL, &err);
		/* A connection lost during COMMIT may have committed: the lake table must stay then. */
		outcome_unknown = rc < 0 && PQstatus(c) != CONNECTION_OK;
	}
	if (rc < 0 && outcome_unknown) {
		cli_fail("cannot tell whether registering %s committed (%s); the lake table at %s was kept: run "
		         "'tierdb status --table %s' and, if it is not registered, remove that directory",
		         a->table, err.message, lake->location, a->table);
	} else if (rc < 0) {
		tdb_pg_exec(c, "ending the registration", "ROLLBACK", 0, NULL, NULL);
		/*
		 * Nothing half-applied: the lake table goes again if this run
		 * created it. A conflict means a concurrent registration made it
		 * first, and that one is not ours to remove.
		 */
		drop_plumbing(c, r);
		if (free_location && !(lake == NULL && err.code == TL_ERR_CONFLICT)) {
			if (rest != NULL && lake != NULL) {
				tl_error ignored;
				tl_error_clear(&ignored);
				(void)tl_rest_catalog_drop_table(rest, tdb_lake_catalog_namespace(r->name.schema), r->name.table,
				                                 &ignored);
			}
			remove_created_lake(location, existed);
		}
		cli_fail("cannot register %s: %s", a->table, err.message);
	} else if (mirrored) {
		char *t = transform_text(&r->transform);
		printf("registered %s.%s (mirrored): lake table %s (partitioned by %s(%s)); publication %s, replication "
		       "slot %s; the daemon copies the rows in chunks of %" PRId64 " and then follows the table's changes\n",
		       r->name.schema, r->name.table, lake->location, t, r->cols[r->tier_key_index].name, r->mirror.publication,
		       r->mirror.slot, r->chunk_rows);
		if (r->has_heap_retention)
			printf("the heap keeps the partitions within %s of the newest tier key; older ones are dropped once the "
			       "lake holds them (cut-line T = %" PRId64 " for now)\n",
			       a->heap_retention, r->parts[r->first_range].lo);
		free(t);
	} else {
		const tdb_heap_partition *first = &r->parts[r->first_range];
		char *t = transform_text(&r->transform);
		printf("registered %s.%s (%s): lake table %s (partitioned by %s(%s)); cut-line T = %" PRId64
		       " (the lower bound of %s); hot partitions: %d\n",
		       r->name.schema, r->name.table, r->mode, lake->location, t, r->cols[r->tier_key_index].name, first->lo,
		       first->partition_id, r->last_range - r->first_range + 1);
		if (rest != NULL)
			printf("the lake table is %s.%s in the REST catalog %s, which commits go through\n",
			       tdb_lake_catalog_namespace(r->name.schema), r->name.table, tl_rest_catalog_uri(rest));
		free(t);
	}
	free(warehouse);
	free(location);
	free(md_location);
	tl_ice_table_free(lake);
	tl_rest_catalog_free(rest);
	return rc < 0 ? CLI_EXIT_FAILURE : cli_finish_output();
}

static int run_register(int argc, char **argv)
{
	register_args a;
	int rc = parse_register_args(argc, argv, &a);
	if (rc == PARSED_HELP)
		return CLI_EXIT_OK;
	if (rc != 0)
		return rc;
	if ((rc = refuse_unsupported(&a)) != 0)
		return rc;
	registration r;
	memset(&r, 0, sizeof(r));
	tl_error err;
	tl_error_clear(&err);
	if (tdb_table_name_parse(a.table, &r.name, &err) < 0)
		return cli_usage_error("tierdb register", "--table: %s", err.message);
	if (split_pk(a.pk, &r.pk) < 0) {
		registration_free(&r);
		return CLI_EXIT_USAGE;
	}
	PGconn *c = connect_checked(a.dsn);
	rc = c ? do_register(c, &r, &a) : CLI_EXIT_FAILURE;
	PQfinish(c);
	registration_free(&r);
	return rc;
}

const cli_command cli_register_command = {"register", "register a range-partitioned table for tiering",
                                          run_register};

/* =============================================================== unregister */

static void unregister_usage(FILE *out)
{
	fputs("Usage: tierdb unregister --table SCHEMA.TABLE [--drop-lake] [--dsn DSN]\n"
	      "\n"
	      "Removes a table's registration from the tierdb catalog (its cut-line, partitions,\n"
	      "pending delta rows and pins go with it) in one transaction. The Postgres table is\n"
	      "not touched. The lake table stays where it is unless --drop-lake is given, which\n"
	      "deletes its directory after the catalog rows are gone (only the table's own\n"
	      "directory inside the warehouse; anything else is refused before a change); rows\n"
	      "that only the lake held are then lost. A table that is not registered is not an\n"
	      "error: leftover journal rows of it (and of dropped tables) are removed.\n",
	      out);
}

/* True if `path` is `dir` or below it. */
static bool path_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/*
 * --drop-lake deletes a directory tree, so it must be this table's own lake
 * directory: the location registration derives for its name (or, for lakes
 * made before names were encoded, the plain join of names that cannot
 * escape), strictly inside the warehouse even after symbolic links are
 * resolved. Checked before anything is changed.
 */
static int check_own_lake_dir(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	char *warehouse = tdb_catalog_warehouse(c, t->storage_profile, err);
	if (warehouse == NULL)
		return -1;
	char *expected = tdb_lake_location(warehouse, t->schema_name, t->table_name);
	size_t len = strlen(warehouse) + strlen(t->schema_name) + strlen(t->table_name) + 3;
	char *legacy = tl_malloc(len);
	snprintf(legacy, len, "%s/%s/%s", warehouse, t->schema_name, t->table_name);
	bool legacy_safe = strchr(t->schema_name, '/') == NULL && strchr(t->table_name, '/') == NULL &&
	                   t->schema_name[0] != '.' && t->table_name[0] != '.';
	if (tl_storage_for(t->lake_table_ref, NULL) != tl_storage_local()) {
		/* An object store: no links or "..", so the recorded location is the table's own iff it is the derived one. */
		int rc = 0;
		if (strcmp(t->lake_table_ref, expected) != 0 && !(legacy_safe && strcmp(t->lake_table_ref, legacy) == 0))
			rc = tl_error_set(err, TL_ERR_INVALID,
			                  "its lake location %s is not the table's own location in the warehouse (%s); "
			                  "--drop-lake deletes only that: remove the lake table by hand",
			                  t->lake_table_ref, expected);
		free(legacy);
		free(expected);
		free(warehouse);
		return rc;
	}
	char *lake = tl_local_path(t->lake_table_ref, err);
	char *wh = lake ? tl_local_path(warehouse, err) : NULL;
	char *exp = wh ? tl_local_path(expected, err) : NULL;
	char *leg = exp ? tl_local_path(legacy, err) : NULL;
	int rc = leg ? 0 : -1;
	if (rc == 0 && strcmp(lake, exp) != 0 && !(legacy_safe && strcmp(lake, leg) == 0))
		rc = tl_error_set(err, TL_ERR_INVALID,
		                  "its lake location %s is not the table's own directory in the warehouse (%s); "
		                  "--drop-lake deletes only that directory: remove the lake table by hand",
		                  t->lake_table_ref, exp);
	/* A lake directory that is gone needs no check; an unresolvable warehouse fails it. */
	char *real_lake = rc == 0 ? tl_storage_canonical(lake, NULL) : NULL;
	char *real_wh = real_lake ? tl_storage_canonical(wh, NULL) : NULL;
	if (real_lake != NULL && (real_wh == NULL || !path_within(real_lake, real_wh) ||
	                          strcmp(real_lake, real_wh) == 0))
		rc = tl_error_set(err, TL_ERR_INVALID,
		                  "its lake location %s resolves to %s, outside the warehouse %s; --drop-lake deletes "
		                  "only inside the warehouse: remove the lake table by hand",
		                  t->lake_table_ref, real_lake, wh);
	free(real_lake);
	free(real_wh);
	free(lake);
	free(wh);
	free(exp);
	free(leg);
	free(legacy);
	free(expected);
	free(warehouse);
	return rc;
}

/*
 * A table that is not registered: the command still succeeds, so reset
 * scripts can run on any database, and removes what a registration of that
 * table may have left: op_log journal rows (they have no foreign key) of
 * the table of that name, and of tables that no longer exist at all.
 */
static int unregister_leftovers(PGconn *c, const tdb_table_name *name, bool drop_lake)
{
	tl_error err;
	tl_error_clear(&err);
	tl_buf qualified;
	tl_buf_init(&qualified);
	tdb_pg_quote_qualified(name->schema, name->table, &qualified);
	tl_buf_append_byte(&qualified, '\0');
	const char *params[] = {(const char *)qualified.data};
	PGresult *res = tdb_pg_query(
		c, "removing leftover catalog rows",
		"WITH gone AS (DELETE FROM tierdb.op_log o"
		" WHERE NOT EXISTS (SELECT 1 FROM tierdb.tables t WHERE t.table_id = o.table_id)"
		" AND (o.table_id = pg_catalog.to_regclass($1)::oid::bigint"
		"      OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class k WHERE k.oid::bigint = o.table_id))"
		" RETURNING 1) SELECT count(*) FROM gone",
		1, params, &err);
	tl_buf_free(&qualified);
	if (res == NULL)
		return cli_fail("cannot clean up after %s.%s: %s", name->schema, name->table, err.message);
	printf("%s.%s is not registered; nothing to unregister%s (removed %s leftover catalog rows)\n", name->schema,
	       name->table, drop_lake ? " and no lake table of it is known" : "", PQgetvalue(res, 0, 0));
	PQclear(res);
	return cli_finish_output();
}

static int do_unregister(PGconn *c, const tdb_table_name *name, bool drop_lake)
{
	tl_error err;
	tl_error_clear(&err);
	tdb_catalog_table t;
	int found = tdb_catalog_load_table(c, name->schema, name->table, &t, &err);
	if (found < 0)
		return cli_fail("%s", err.message);
	if (found == 0)
		return unregister_leftovers(c, name, drop_lake);
	if (drop_lake && check_own_lake_dir(c, &t, &err) < 0) {
		cli_fail("cannot unregister %s.%s with --drop-lake: %s", name->schema, name->table, err.message);
		tdb_catalog_table_free(&t);
		return CLI_EXIT_FAILURE;
	}
	/*
	 * A mirrored table's slot goes first: left behind, it would keep every
	 * WAL segment from now on. One in use fails the command before anything
	 * changed.
	 */
	if (t.slot_name != NULL) {
		tdb_mirror_plumbing m = {t.publication_name, t.slot_name, 0};
		if (tdb_mirror_plumbing_drop(c, &m, &err) < 0) {
			cli_fail("cannot unregister %s.%s: %s", name->schema, name->table, err.message);
			tdb_catalog_table_free(&t);
			return CLI_EXIT_FAILURE;
		}
	}
	char id[24];
	snprintf(id, sizeof(id), "%" PRId64, t.table_id);
	const char *params[] = {id};
	/*
	 * Every lake commit holds the table's lake lock (SPEC §5): taking it
	 * waits out a commit in flight, so the catalog never loses a row that
	 * names a snapshot still being published.
	 */
	int rc = tdb_pg_exec(c, "starting the unregistration", "BEGIN", 0, NULL, &err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "waiting for the table's lake lock",
		                 "SELECT pg_advisory_xact_lock(hashtextextended('tierdb_lake_' || $1::bigint::text, 0))", 1,
		                 params, &err);
	/* the spill partition's trigger routes only for registered tables: it goes with the registration */
	if (rc == 0 && (strcmp(t.mode, "mirrored") != 0 || t.has_heap_retention))
		rc = tdb_pg_exec(c, "dropping the spill partition of transparent writes",
		                 "SELECT tierdb_disable_transparent_writes($1::bigint::oid::regclass)", 1, params, &err);
	if (rc == 0 && strcmp(t.mode, "mirrored") == 0) /* unlogged, so no foreign key cascades to it */
		rc = tdb_pg_exec(c, "deleting the mirror's batch keys",
		                 "DELETE FROM tierdb.mirror_keys WHERE table_id = $1::bigint", 1, params, &err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "deleting the catalog rows", "DELETE FROM tierdb.tables WHERE table_id = $1::bigint",
		                 1, params, &err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "committing the unregistration", "COMMIT", 0, NULL, &err);
	if (rc < 0) {
		tdb_catalog_table_free(&t);
		return cli_fail("cannot unregister %s.%s: %s", name->schema, name->table, err.message);
	}
	if (drop_lake) {
		/* A table kept in a REST catalog leaves the catalog first, so no engine finds it without its files. */
		if (tdb_lake_drop_from_catalog(&t, &err) < 0 || remove_lake_dir(t.lake_table_ref, &err) < 0) {
			cli_fail("unregistered %s.%s, but %s", name->schema, name->table, err.message);
			tdb_catalog_table_free(&t);
			return CLI_EXIT_FAILURE;
		}
		printf("unregistered %s.%s and removed its lake table %s\n", name->schema, name->table, t.lake_table_ref);
	} else {
		printf("unregistered %s.%s; its lake table stays at %s (remove it by hand when it is no longer "
		       "needed)\n",
		       name->schema, name->table, t.lake_table_ref);
	}
	tdb_catalog_table_free(&t);
	return cli_finish_output();
}

static int run_unregister(int argc, char **argv)
{
	static const char *cmd = "tierdb unregister";
	static const cli_option options[] = {
		{"table", true, OPT_TABLE}, {"drop-lake", false, OPT_DROP_LAKE}, {"dsn", true, OPT_DSN}, {NULL, false, 0}};
	const char *table = NULL, *dsn = NULL;
	bool drop_lake = false;
	cli_parser p;
	cli_parser_init(&p, cmd, unregister_usage, options, argc, argv);
	for (int opt; (opt = cli_next(&p)) != CLI_END;) {
		switch (opt) {
		case CLI_HELP: return cli_help(&p);
		case CLI_ERROR: return CLI_EXIT_USAGE;
		case CLI_POSITIONAL: return cli_usage_error(cmd, "unexpected argument '%s'", p.value);
		case OPT_TABLE: table = p.value; break;
		case OPT_DROP_LAKE: drop_lake = true; break;
		case OPT_DSN: dsn = p.value; break;
		}
	}
	if (table == NULL)
		return cli_usage_error(cmd, "--table is required");
	tdb_table_name name;
	tl_error err;
	tl_error_clear(&err);
	if (tdb_table_name_parse(table, &name, &err) < 0)
		return cli_usage_error(cmd, "--table: %s", err.message);
	PGconn *c = connect_checked(dsn);
	int rc = c ? do_unregister(c, &name, drop_lake) : CLI_EXIT_FAILURE;
	PQfinish(c);
	tdb_table_name_free(&name);
	return rc;
}

const cli_command cli_unregister_command = {"unregister", "remove a table's registration (and --drop-lake its lake)",
                                            run_unregister};
