/*
 * ingest_adopt.h: committing a Parquet file to the lake as it is (ingest.h).
 *
 * A file is adopted, not rewritten, when the lake can serve it exactly as
 * its own files: every column carries an Iceberg field id of the lake
 * table's current schema with exactly the Parquet type the lake writes for
 * that field (so every engine reads the same values), every required field
 * is there, and all its rows lie in one partition of the table's spec
 * (partitioned on the tier key: the transform of the least and the
 * greatest tier key agree). Its manifest entry takes the metrics of its
 * footer, as Iceberg's add_files does. A file already under the table's
 * location is referenced where it is; any other is copied byte for byte
 * into the table's data/ directory (named for the operation, so undoing
 * it finds the copy), so the lake never depends on a path it does not own.
 */
#ifndef TIERDB_INGEST_ADOPT_H
#define TIERDB_INGEST_ADOPT_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/iceberg_manifest.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/parquet.h"

typedef struct tdb_adopted_file {
	bool adopt;              /* the file is committed as it is */
	char why_not[300];       /* when not: why it is rewritten */
	char *source;            /* the file as given */
	uint64_t size;
	int32_t tk_field;        /* the tier key's lake field id */
	bool seen_key;           /* the least and greatest tier key of its rows, as the lake stores them */
	int64_t min_key, max_key;
	tl_ice_value *partition; /* its partition tuple (in arena), and the directory it names */
	int npartition;
	char *partition_path;
	tl_ice_data_file file;   /* the manifest entry, once placed */
	tl_arena arena;          /* what the entry points at */
	bool copied;             /* placed by copying into data/ (undo deletes the copy) */
} tdb_adopted_file;

/*
 * Decides whether the file at `path` (`size` bytes, columns `schema`, map[i]
 * the lake field index of column i) can be adopted; `tk` is the tier key's
 * field index. Sets a->adopt or a->why_not.
 */
void tdb_adopt_consider(tdb_adopted_file *a, const tl_ice_table *lake, const char *path, uint64_t size,
                        const tl_pq_schema *schema, const int *map, int tk);

/* Takes the tier keys of n rows read from the file (its column `col`, values `vec`) into account. */
void tdb_adopt_note_keys(tdb_adopted_file *a, const tl_pq_column *col, const tl_vector *vec, int64_t n);

/*
 * Once every row was noted: a file whose rows span partitions (or that has
 * none) is not adopted after all. Sets a->partition_path for placing.
 */
void tdb_adopt_check_partition(tdb_adopted_file *a, const tl_ice_table *lake);

/*
 * Places an adoptable file and builds its manifest entry. -1 with err when
 * copying or reading the footer fails.
 */
int tdb_adopt_place(tdb_adopted_file *a, tl_ice_table *lake, const char *op_id, tl_error *err);

/* Deletes the copy a placed file made (after a commit that did not land). */
void tdb_adopt_undo(tdb_adopted_file *a, const char *label);

void tdb_adopt_free(tdb_adopted_file *a);

#endif
