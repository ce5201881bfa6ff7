/*
 * table_internal.h: what commit.c needs from table.c, the one place that
 * knows how a path-based table's metadata files are named and published.
 */
#ifndef TIERLAKE_ICEBERG_TABLE_INTERNAL_H
#define TIERLAKE_ICEBERG_TABLE_INTERNAL_H

#include <stdint.h>

#include "tierlake/iceberg_table.h"

/*
 * The local metadata directory a commit writes v<N+1>.metadata.json into,
 * or NULL with TL_ERR_INVALID in err when the table cannot take commits:
 * it was opened by a metadata file, or its current file is not named
 * v<N>.metadata.json (another catalog's naming, which we do not extend).
 */
const char *tl_ice_table_commit_dir(const tl_ice_table *t, tl_error *err);

/*
 * Publishes md as metadata/v<version>.metadata.json in metadata_dir so that
 * it never replaces an existing file and no reader sees it half-written:
 * the JSON goes to a temporary file first, which is then hard-linked to
 * the final name. An existing version is TL_ERR_CONFLICT. On success
 * *path (if not NULL) is the new file's local path (free() it).
 */
int tl_ice_table_publish_version(const char *metadata_dir, int64_t version, const tl_ice_table_metadata *md,
                                 char **path, tl_error *err);

/* Points metadata/version-hint.text at `version` (atomic replace by rename). */
int tl_ice_table_write_hint(const char *metadata_dir, int64_t version, tl_error *err);

/*
 * Makes md (taken over) at version / path (taken over) the table's current
 * state. -1 when out of memory (nothing taken): only when md moves the
 * table's location, which a commit never does.
 */
int tl_ice_table_install(tl_ice_table *t, tl_ice_table_metadata *md, int64_t version, char *path);

/* ------------------------------------------ tables kept in a REST catalog */

typedef struct tl_rest_table_ref tl_rest_table_ref;

/*
 * A table whose current metadata md (taken over) a REST catalog answered,
 * at metadata_file (taken over), committing through ref (taken over; all
 * three freed on failure). Makes the metadata and data directories.
 */
tl_ice_table *tl_ice_table_from_catalog(tl_ice_table_metadata *md, char *metadata_file, tl_rest_table_ref *ref,
                                        tl_error *err);

/* The catalog t commits through, or NULL for a path-based table. */
tl_rest_table_ref *tl_ice_table_catalog(const tl_ice_table *t);

/* The version a metadata file's name carries (v<N> or <N>-<uuid>), -1 for none. */
int64_t tl_ice_table_file_version(const char *metadata_file);

/* t->location without trailing slashes, into out (no NUL). */
void tl_ice_table_append_location(const tl_ice_table *t, tl_buf *out);

#endif
