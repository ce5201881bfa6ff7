/*
 * pgcopy.h: decoding Postgres binary COPY output into lake column batches.
 *
 * The daemon streams a partition out with
 *     COPY (SELECT <tdb_pg_copy_select_list> FROM ...) TO STDOUT (FORMAT binary)
 * and hands each CopyData message to the decoder, which writes the values
 * straight into the column vectors of a tl_pq_batch in the form the Parquet
 * writer takes (the physical types tl_ice_field_to_pq_column picks). Values
 * that Iceberg cannot hold (infinite dates and timestamps, time 24:00:00,
 * numeric NaN or a value wider than the decimal) are errors naming the
 * column and the row: nothing is silently changed.
 *
 * Every length in the stream is checked against the message and the type,
 * so a truncated or foreign stream is TL_ERR_CORRUPT, never a wild read.
 * No allocation happens per value: bytes go to the batch's arena.
 */
#ifndef TIERDB_PGCOPY_H
#define TIERDB_PGCOPY_H

#include <stddef.h>

#include "pgmap.h"
#include "tierlake/error.h"
#include "tierlake/parquet.h"

typedef struct tdb_copy_decoder tdb_copy_decoder;

/*
 * Decodes binary COPY output of those columns into rows of batches whose schema is the
 * Parquet columns tl_ice_field_to_pq_column gives for each column's ice_type, in order.
 * The decoder keeps a copy of what it needs; cols may be freed afterwards.
 * NULL with err set if a column's type cannot be decoded (a caller bug).
 */
tdb_copy_decoder *tdb_copy_decoder_new(const tdb_pg_column *cols, int n, tl_error *err);

/*
 * Consumes one CopyData message from PQgetCopyData (the header, a row, the trailer, or a
 * header followed by rows), appending decoded rows at batch->nrows (bytes copied into
 * batch->arena). Returns rows appended, or -1 with err naming the column and row.
 * The caller flushes the batch when batch->nrows reaches capacity (a message holds one row);
 * a row arriving for a full batch is a TL_ERR_INVALID error.
 * A NULL goes to the column's validity array; a column without one (required) refuses it.
 */
int tdb_copy_decoder_feed(tdb_copy_decoder *d, const char *msg, size_t len, tl_pq_batch *batch, tl_error *err);

/* 0 if the trailer was seen, else -1 (truncated stream). */
int tdb_copy_decoder_finish(tdb_copy_decoder *d, tl_error *err);

/* Rows decoded so far (all messages). */
int64_t tdb_copy_decoder_rows(const tdb_copy_decoder *d);

void tdb_copy_decoder_free(tdb_copy_decoder *d);

#endif
