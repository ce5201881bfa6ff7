/*
 * catalog.h: the `tierdb` command's view of the tierdb catalog (SPEC §4).
 *
 * Registration writes the rows; the daemon and `status` read them back
 * through the same functions, so the catalog's shape is spelled out in one
 * place on the client side: which catalog versions this binary understands,
 * how a tier-key value becomes the canonical bigint every catalog column
 * holds (SPEC §2), how a registered table's row and cut-line load, and
 * where a table's lake lives.
 *
 * tables.partition_scheme, as written by `tierdb register`, is a JSON object:
 *   {"lake_transform": "truncate[100]" | "day" | "hour" | "month" | "year" | "void",
 *    "lake_partition_width": 100,          integer keys only: the truncate width, 0 = none
 *    "heap_partition_width": 86400000000}  canonical width of the newest heap partition at
 *                                          registration (what premake continues)
 * cutline right after registration: tier_key_hi = T = the oldest range
 * partition's lower bound, lake_snapshot_id = NULL (the lake table has no
 * snapshot yet), retention_line = NULL, lake_props = {"metadata_location":
 * "<location>/metadata/v1.metadata.json", "snapshot_id": null}.
 * partitions: one row per bounded range partition (the DEFAULT partition is
 * not a tiering unit), partition_id = schema.name quoted as SQL needs it
 * (quote_ident of each part), tier_key_lo/hi canonical, state 'hot'.
 * tables.lake_table_ref is the lake table's absolute location.
 */
#ifndef TIERDB_CATALOG_H
#define TIERDB_CATALOG_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"

/* The newest schema_meta version this binary reads and writes. */
#define TDB_CATALOG_VERSION 1

/*
 * Checks that the database has the tierdb extension and that its catalog
 * version is one this binary understands; errors say what to do.
 */
int tdb_catalog_check(PGconn *c, tl_error *err);

/* ------------------------------------------------------------ tier keys */

/* A tier key's canonical family (tables.tier_key_type). */
typedef enum tdb_key_type {
	TDB_KEY_BIGINT = 0, /* int2, int4, int8: the value itself */
	TDB_KEY_TIMESTAMPTZ,  /* microseconds since 1970-01-01 00:00:00+00 */
	TDB_KEY_TIMESTAMP,    /* microseconds since 1970-01-01 00:00:00 read as UTC */
	TDB_KEY_DATE          /* days since 1970-01-01 */
} tdb_key_type;

/* 'bigint', 'timestamptz', 'timestamp' or 'date'. */
const char *tdb_key_type_name(tdb_key_type type);
/* The reverse of tdb_key_type_name, for catalog text; -1 with err on anything else. */
int tdb_key_type_parse(const char *name, tdb_key_type *out, tl_error *err);
/* The family of a Postgres type oid; false if it cannot be a tier key. */
bool tdb_key_type_from_oid(uint32_t type_oid, tdb_key_type *out);
/* True for timestamptz and timestamp (durations in microseconds). */
bool tdb_key_type_is_timestamp(tdb_key_type type);

/*
 * A lag, width or retention in natural units (SPEC §2) as a canonical
 * bigint: a number for integer keys; for timestamps a duration "90s",
 * "15m", "12h", "7d" (a plain number is seconds) in microseconds; for dates
 * days ("7" or "7d"). `what` names the option in errors. Negative values
 * are refused.
 */
int tdb_key_parse_lag(tdb_key_type type, const char *text, const char *what, int64_t *out, tl_error *err);

/*
 * Appends an SQL expression turning the text-valued SQL expression `expr`
 * (a literal of the key's Postgres type) into its canonical bigint.
 */
void tdb_key_canonical_sql(tdb_key_type type, const char *expr, tl_buf *out);

/* ------------------------------------------------------------ heap partitions */

/* One partition of a range-partitioned table, as the system catalogs describe it. */
typedef struct tdb_heap_partition {
	char *partition_id;   /* schema.name, each part quoted only if needed (quote_ident): usable in SQL */
	char *schema;
	char *name;
	char *bound;          /* pg_get_expr of the bound: "FOR VALUES FROM (...) TO (...)" or "DEFAULT" */
	bool is_default;      /* the DEFAULT partition: no range */
	bool is_partitioned;  /* itself partitioned (TierDB does not tier sub-partitioned tables) */
	bool has_lo, has_hi;  /* false for MINVALUE / MAXVALUE (and for DEFAULT) */
	int64_t lo, hi;       /* canonical bounds: rows in [lo, hi) */
} tdb_heap_partition;

/*
 * The direct partitions of a table partitioned BY RANGE on one column of
 * the given key type, ordered by lower bound (unbounded below first,
 * DEFAULT last). Bounds are converted to canonical bigints by the server,
 * so their text form never has to be parsed here.
 */
int tdb_heap_partitions(PGconn *c, uint32_t table_oid, tdb_key_type type, tdb_heap_partition **out, int *n,
                        tl_error *err);
void tdb_heap_partitions_free(tdb_heap_partition *parts, int n);

/* ------------------------------------------------------------ table names */

typedef struct tdb_table_name {
	char *schema;
	char *table;
} tdb_table_name;

/*
 * Parses "schema.table" or "table" (schema public). Either part may be
 * double-quoted to keep dots or case ("Sales"."Events"); unquoted parts are
 * taken as written (not case-folded), matching the names the catalog
 * stores. -1 with err naming what is wrong.
 */
int tdb_table_name_parse(const char *text, tdb_table_name *out, tl_error *err);
void tdb_table_name_free(tdb_table_name *name);

/* ------------------------------------------------------------ registered tables */

/* A tables row and its cutline row. */
typedef struct tdb_catalog_table {
	int64_t table_id;
	char *schema_name;
	char *table_name;
	int npk;
	char **pk_cols;
	char *tier_key_col;
	tdb_key_type tier_key_type;
	char *partition_scheme;     /* JSON text */
	char *lake_format;
	char *lake_table_ref;       /* the lake table's location */
	char *storage_profile;
	char *mode;
	bool has_lake_retention;
	int64_t lake_retention_lag;
	bool keep_heap;             /* --keep-heap: tiered partitions stay in the heap, mirrored into the delta */
	/* cutline */
	int64_t cutline_t;
	bool has_snapshot;          /* S is NULL until the first lake commit */
	int64_t snapshot_id;
	bool has_retention_line;
	int64_t retention_line;
	char *metadata_location;    /* lake_props->>'metadata_location', NULL when absent */
	char *lake_props;           /* JSON text */
	/* mirrored tables (cli/mirror.c) */
	char *publication_name;
	char *slot_name;
	bool has_replicated_lsn;    /* F is NULL until the initial copy is done */
	int64_t replicated_lsn;     /* F */
	bool copying;               /* a tierdb.copy_progress row: the initial copy is not done */
	/* --heap-retention: the mirrored table's heap keeps a window, T rises as partitions leave it (docs/mirrored.md) */
	bool has_heap_retention;
	int64_t heap_retention_lag;
} tdb_catalog_table;

/* 1 and *out filled when schema.table is registered, 0 when not, -1 on error. */
int tdb_catalog_load_table(PGconn *c, const char *schema, const char *table, tdb_catalog_table *out,
                           tl_error *err);
/* The same by tables.table_id. */
int tdb_catalog_load_table_by_id(PGconn *c, int64_t table_id, tdb_catalog_table *out, tl_error *err);
/* Every registered table, ordered by schema and name. */
int tdb_catalog_list_tables(PGconn *c, tdb_catalog_table **out, int *n, tl_error *err);
void tdb_catalog_table_free(tdb_catalog_table *t);
void tdb_catalog_tables_free(tdb_catalog_table *tables, int n);

/* ------------------------------------------------------------ warehouses */

/*
 * The warehouse when neither the profile nor TIERDB_WAREHOUSE names one:
 * $XDG_DATA_HOME/tierdb/warehouse, else $HOME/.local/share/tierdb/warehouse.
 * A per-user directory because the command and the daemon run as ordinary
 * users; a shared /var/lib path would need root to create. Malloc'd.
 */
char *tdb_default_warehouse(tl_error *err);

/*
 * The name of the profile that --profile names (checked to exist) or, with
 * profile NULL, of the default profile. Malloc'd; NULL with err.
 */
char *tdb_catalog_profile(PGconn *c, const char *profile, tl_error *err);

/* A local relative path made absolute against the working directory; URIs and absolute paths as given. */
char *tdb_absolute_warehouse(const char *warehouse, tl_error *err);

/*
 * A profile's warehouse: its own if non-empty, else TIERDB_WAREHOUSE, else
 * tdb_default_warehouse(). Relative local paths become absolute (every
 * process that reads the catalog must find the same place). Malloc'd.
 */
char *tdb_catalog_warehouse(PGconn *c, const char *profile, tl_error *err);

/*
 * A name as one path segment that cannot escape its directory (characters
 * outside [A-Za-z0-9_.-] and a leading '.' percent-encoded), malloc'd.
 */
char *tdb_path_segment(const char *name);

/* <warehouse>/<schema>/<table>, each name a tdb_path_segment; malloc'd. */
char *tdb_lake_location(const char *warehouse, const char *schema, const char *table);

#endif
