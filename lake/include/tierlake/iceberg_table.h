/*
 * iceberg_table.h: path-based Iceberg tables and the commits that change them.
 *
 * A table lives in one directory (SPEC §6): metadata/v<N>.metadata.json for
 * every version, metadata/version-hint.text naming the newest N, data files
 * under data/, manifests and manifest lists beside the metadata. This is
 * the layout Iceberg's Hadoop catalog and Spark's load(path) use.
 *
 * A commit writes its manifests and manifest list first, then creates
 * v<N+1>.metadata.json exclusively: if another writer got there first the
 * commit fails with TL_ERR_CONFLICT and nothing of the table changes. The
 * hint is updated last; readers that find it stale still pick the newest
 * version by listing (tl_ice_table_open).
 *
 * A table created or loaded through an Iceberg REST catalog (rest_catalog.h)
 * is the same object, but its commits go to the catalog, which writes the
 * metadata files and refuses a commit whose base is stale (TL_ERR_CONFLICT).
 */
#ifndef TIERLAKE_ICEBERG_TABLE_H
#define TIERLAKE_ICEBERG_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/iceberg_manifest.h"
#include "tierlake/iceberg_metadata.h"
#include "tierlake/parquet.h"

typedef struct tl_ice_table {
	char *location;          /* table root, as in the metadata's "location" */
	char *metadata_file;     /* the metadata JSON read: a plain path for local tables, else a URI */
	int64_t version;         /* N of v<N>.metadata.json; -1 when the name carries none */
	tl_ice_table_metadata *metadata;
} tl_ice_table;

/*
 * Creates an empty table at `location` (a local path or file:// URI; the
 * directory is created if missing): v1.metadata.json written exclusively,
 * then the hint. An existing table there is TL_ERR_CONFLICT.
 */
tl_ice_table *tl_ice_table_create(const char *location, const tl_ice_schema *schema,
                                  const tl_ice_partition_spec *spec, const tl_ice_kv *properties,
                                  int nproperties, tl_error *err);

/*
 * Opens a table by its directory (the version hint if it names an existing
 * file, else the highest-numbered metadata file: v<N>.metadata.json or
 * <N>-<uuid>.metadata.json) or by one metadata JSON file, so tables any
 * engine wrote can be read. No metadata is TL_ERR_NOT_FOUND.
 */
tl_ice_table *tl_ice_table_open(const char *location, tl_error *err);

/*
 * Finds the current metadata file of the table whose root is `location`
 * (a path or URI) the way tl_ice_table_open does, without reading it: the
 * version hint walked forward over newer v<N>.metadata.json files, else the
 * highest-numbered metadata file listed. Returns its location (free() it;
 * a plain path for local tables) and its version in *version (if not NULL;
 * -1 when the name carries none); NULL with err set when there is none
 * (TL_ERR_NOT_FOUND). Cheap enough to call to see whether a table changed.
 */
char *tl_ice_table_current_metadata(const char *location, int64_t *version, tl_error *err);

/*
 * Rereads the newest version (a table opened by directory), or reloads it
 * from its catalog (a table opened through a REST catalog, rest_catalog.h).
 */
int tl_ice_table_refresh(tl_ice_table *t, tl_error *err);
void tl_ice_table_free(tl_ice_table *t);

/*
 * A new, unique path for a data or delete file:
 * <location>/data/<partition_path>/[<name_prefix>-]<uuid>.parquet
 * (partition_path may be NULL or "" for none, see tl_ice_partition_path;
 * name_prefix NULL or "" for none). Appends it to `out` without a
 * terminating NUL. A prefix such as the writing operation's id (Java
 * Iceberg names files by operation id too) lets whoever undoes a failed
 * operation find every file it wrote, even ones no journal listed.
 */
int tl_ice_table_new_data_path(const tl_ice_table *t, const char *partition_path, const char *name_prefix,
                               tl_buf *out, tl_error *err);

/*
 * The metrics a manifest keeps for a Parquet file read with `r`, mapped to
 * the schema's fields by Parquet field id (then by column name for files
 * written without ids): record_count, column_sizes, value_counts,
 * null_value_counts, nan_value_counts (left absent: Parquet does not count
 * NaNs) and lower and upper bounds in the single-value form, from the
 * footer statistics. Arrays and bounds are allocated in `arena`. The
 * caller fills content, file_path, file_format, file_size_in_bytes,
 * partition and equality_ids.
 */
int tl_ice_data_file_metrics(const tl_ice_schema *schema, const tl_pq_reader *r, tl_arena *arena,
                             tl_ice_data_file *file, tl_error *err);

/* ------------------------------------------------------------- commits */

typedef enum tl_ice_operation {
	TL_ICE_OP_APPEND,    /* adds data files                        -> "append" */
	TL_ICE_OP_ROW_DELTA, /* adds data and delete files             -> "overwrite" ("delete" with deletes only) */
	TL_ICE_OP_DELETE,    /* removes data and delete files          -> "delete" */
	TL_ICE_OP_REPLACE,   /* removes files and adds their rewrite   -> "replace" */
	TL_ICE_OP_OVERWRITE  /* removes files, adds data/delete files  -> "overwrite" (the rows change) */
} tl_ice_operation;

typedef struct tl_ice_commit tl_ice_commit;

/* Starts a commit on the table's current snapshot of its main branch. */
tl_ice_commit *tl_ice_commit_begin(tl_ice_table *t, tl_ice_operation op, tl_error *err);

/*
 * Adds an entry to the new snapshot's summary, such as "tierdb.op-id".
 * The standard counts (added-data-files, total-records, ...) are computed.
 * -1 when out of memory (the summary is unchanged).
 */
int tl_ice_commit_set_summary(tl_ice_commit *c, const char *key, const char *value);

/*
 * Adds a data or delete file (by file->content), deep-copied. Its
 * partition tuple must have the default spec's arity. APPEND takes data
 * files only; DELETE takes none; equality deletes need equality_ids.
 */
int tl_ice_commit_add_file(tl_ice_commit *c, const tl_ice_data_file *file, tl_error *err);

/*
 * Removes a live data or delete file by path (DELETE, REPLACE and OVERWRITE).
 * A path that is not live in the base snapshot at finish time is
 * TL_ERR_CONFLICT (someone removed it first) or TL_ERR_NOT_FOUND.
 */
int tl_ice_commit_remove_file(tl_ice_commit *c, const char *file_path, tl_error *err);

/*
 * Writes the commit: a manifest per content for the added files, rewrites
 * of the manifests that hold removed files (entries marked DELETED), the
 * unchanged manifests carried over, the manifest list, then
 * v<N+1>.metadata.json (exclusive create) with the new snapshot (id,
 * parent, sequence number, summary, timestamps) as current and on "main",
 * and finally the hint. On success the table object holds the new version
 * and *snapshot_id (if not NULL) the new snapshot's id.
 *
 * Losing the race for v<N+1> is TL_ERR_CONFLICT and leaves the table as the
 * winner made it; the commit stays usable: tl_ice_table_refresh and call
 * finish again to retry on the new base.
 */
int tl_ice_commit_finish(tl_ice_commit *c, int64_t *snapshot_id, tl_error *err);
void tl_ice_commit_free(tl_ice_commit *c);

/*
 * Makes snapshot_id, the current snapshot or one of its ancestors, current
 * again (main points at it), a metadata-only commit like Java's
 * ManageSnapshots.rollbackTo: v<N+1>.metadata.json written exclusively
 * (losing the race is TL_ERR_CONFLICT), or the REST catalog's updateTable.
 * The newer snapshots stay in the metadata, no longer current, and their
 * files stay until snapshot expiry. TL_ICE_NO_SNAPSHOT empties a
 * path-based table's current state (a table that had no snapshot before);
 * a snapshot that is not an ancestor is TL_ERR_INVALID. Rolling back to
 * the current snapshot writes nothing.
 */
int tl_ice_table_rollback(tl_ice_table *t, int64_t snapshot_id, tl_error *err);

/* ------------------------------------------------------ schema evolution */

/*
 * Makes `fields` (top-level, at least one, in this order) the current schema, a
 * metadata-only commit (no snapshot) as Java's UpdateSchema makes:
 *   - a field with id > 0 is the current schema's top-level field of that
 *     id. Its name may differ (a rename). Its type must be the current one
 *     or a promotion the Iceberg spec allows: int to long, float to double,
 *     decimal(P, S) to decimal(P', S) with P' > P (not for a field a
 *     partition spec takes values from). It may go from required to
 *     optional, not back, and an identifier field stays required. A NULL
 *     doc keeps the current doc.
 *   - a field with id <= 0 is new: a primitive type, made optional, with
 *     the next id after last-column-id (ids of dropped fields are never
 *     given again), and its initial_default if given (a JSON single value:
 *     what the rows of files written before read). A kept field's
 *     initial_default is the current one, whatever the caller gives.
 *   - a current field not listed is dropped; not an identifier field, nor
 *     a source of the default partition spec or of the default sort order.
 * Names must be unique. The new schema keeps the identifier fields, takes
 * the next schema id and is made current in v<N+1>.metadata.json
 * (exclusive create; losing the race is TL_ERR_CONFLICT); last-column-id
 * never decreases. Files written under earlier schemas read by field id,
 * their stored values in the promoted type, a dropped field's column
 * ignored; snapshots keep their own schema.
 *
 * Fields equal to the current schema's (ids, names, types, required flags,
 * order) write nothing. *changed (if not NULL) says whether a version was
 * written. A change the rules refuse is TL_ERR_UNSUPPORTED naming the
 * field, the types and the table; an unknown id, a name taken twice or a
 * malformed type TL_ERR_INVALID. On error nothing is written.
 */
int tl_ice_table_evolve_schema(tl_ice_table *t, const tl_ice_field *fields, int nfields, bool *changed,
                               tl_error *err);

/*
 * Renames the current schema's top-level fields: names[i] becomes the name
 * of field i; nnames must be the number of fields. tl_ice_table_evolve_schema
 * with the current fields renamed: ids, types and identifier fields stay;
 * names equal to the current ones write nothing (*changed false).
 */
int tl_ice_table_rename_fields(tl_ice_table *t, const char *const *names, int nnames, bool *changed,
                               tl_error *err);

/*
 * Adds top-level primitive fields after the current schema's (as Java's
 * UpdateSchema.addColumn): each optional, whatever `required` says, with
 * the next id after last-column-id (the given ids are ignored), through
 * tl_ice_table_evolve_schema. Rows of files written before read the new
 * fields' initial_default, else null.
 */
int tl_ice_table_add_fields(tl_ice_table *t, const tl_ice_field *fields, int nfields, tl_error *err);

#endif
