/*
 * schema.c: flat Parquet schemas, column batches, writer defaults, and the
 * names the rest of the library prints for types, codecs and encodings.
 *
 * Validation lives here rather than in the writer so that every producer
 * of a schema (the CLI, the Iceberg layer, tests) gets the same messages
 * before any bytes are written: a file with a UUID on the wrong width or a
 * DECIMAL that cannot hold its precision would be rejected by every reader
 * downstream, long after the mistake was made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parquet/writer_internal.h"
#include "tierlake/parquet.h"

tl_pq_schema *tl_pq_schema_new(void)
{
	return tl_calloc(1, sizeof(tl_pq_schema));
}

int tl_pq_schema_add(tl_pq_schema *schema, const tl_pq_column *col)
{
	/* One realloc per column: the struct records no capacity, so a schema
	 * whose array was allocated elsewhere can still be extended safely. */
	int n = schema->ncolumns;
	char *name = tl_strdup(col->name ? col->name : "");
	if (name == NULL)
		return -1;
	tl_pq_column *columns = tl_realloc(schema->columns, ((size_t)n + 1) * sizeof(tl_pq_column));
	if (columns == NULL) {
		tl_free(name);
		return -1;
	}
	schema->columns = columns;
	schema->columns[n] = *col;
	schema->columns[n].name = name;
	schema->ncolumns = n + 1;
	return n;
}

void tl_pq_schema_free(tl_pq_schema *schema)
{
	if (schema == NULL)
		return;
	for (int i = 0; i < schema->ncolumns; i++)
		tl_free(schema->columns[i].name);
	tl_free(schema->columns);
	tl_free(schema);
}

int tl_pq_schema_find(const tl_pq_schema *schema, const char *name)
{
	for (int i = 0; i < schema->ncolumns; i++)
		if (strcmp(schema->columns[i].name, name) == 0)
			return i;
	return -1;
}

static const char *time_unit_name(tl_pq_time_unit unit)
{
	switch (unit) {
	case TL_PQ_MILLIS:
		return "MILLIS";
	case TL_PQ_MICROS:
		return "MICROS";
	case TL_PQ_NANOS:
		return "NANOS";
	}
	return "UNKNOWN";
}

/* The largest precision a two's-complement integer of `bytes` bytes holds:
 * floor(log10(2^(8 * bytes - 1) - 1)). 2^k is never a power of ten, so
 * floor(k * log10(2)) gives the same digit count without big numbers. */
static int32_t decimal_max_precision(int64_t bytes)
{
	if (bytes <= 0)
		return 0;
	if (bytes > 1000)
		return INT32_MAX;
	return (int32_t)((double)(8 * bytes - 1) * 0.30102999566398119521);
}

static int validate_decimal(const tl_pq_column *col, tl_error *err)
{
	if (col->precision < 1)
		return tl_error_set(err, TL_ERR_INVALID, "column \"%s\": DECIMAL precision must be at least 1, not %d",
		                    col->name, (int)col->precision);
	if (col->scale < 0 || col->scale > col->precision)
		return tl_error_set(err, TL_ERR_INVALID,
		                    "column \"%s\": DECIMAL scale %d must be between 0 and the precision %d", col->name,
		                    (int)col->scale, (int)col->precision);
	int32_t max_precision;
	switch (col->physical) {
	case TL_PQ_INT32:
		max_precision = 9;
		break;
	case TL_PQ_INT64:
		max_precision = 18;
		break;
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
		max_precision = decimal_max_precision(col->type_length);
		break;
	case TL_PQ_BYTE_ARRAY:
		return 0;
	default:
		return tl_error_set(err, TL_ERR_INVALID,
		                    "column \"%s\": DECIMAL must be stored as INT32, INT64, FIXED_LEN_BYTE_ARRAY or "
		                    "BYTE_ARRAY, not %s",
		                    col->name, tl_pq_physical_name(col->physical));
	}
	if (col->precision > max_precision) {
		char width[32] = "";
		if (col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY)
			snprintf(width, sizeof(width), "(%d)", (int)col->type_length);
		return tl_error_set(err, TL_ERR_INVALID,
		                    "column \"%s\": DECIMAL(%d, %d) does not fit in %s%s, which holds at most %d digits",
		                    col->name, (int)col->precision, (int)col->scale, tl_pq_physical_name(col->physical),
		                    width, (int)max_precision);
	}
	return 0;
}

static int require_physical(const tl_pq_column *col, const char *logical, tl_pq_physical physical, tl_error *err)
{
	if (col->physical == physical)
		return 0;
	return tl_error_set(err, TL_ERR_INVALID, "column \"%s\": %s must be stored as %s, not %s", col->name, logical,
	                    tl_pq_physical_name(physical), tl_pq_physical_name(col->physical));
}

static int validate_logical(const tl_pq_column *col, tl_error *err)
{
	switch (col->logical) {
	case TL_PQ_LOGICAL_NONE:
		return 0;
	case TL_PQ_LOGICAL_STRING:
		return require_physical(col, "STRING", TL_PQ_BYTE_ARRAY, err);
	case TL_PQ_LOGICAL_JSON:
		return require_physical(col, "JSON", TL_PQ_BYTE_ARRAY, err);
	case TL_PQ_LOGICAL_ENUM:
		return require_physical(col, "ENUM", TL_PQ_BYTE_ARRAY, err);
	case TL_PQ_LOGICAL_DATE:
		return require_physical(col, "DATE", TL_PQ_INT32, err);
	case TL_PQ_LOGICAL_TIMESTAMP:
		if (col->unit != TL_PQ_MILLIS && col->unit != TL_PQ_MICROS && col->unit != TL_PQ_NANOS)
			return tl_error_set(err, TL_ERR_INVALID, "column \"%s\": TIMESTAMP has an unknown time unit %d",
			                    col->name, (int)col->unit);
		return require_physical(col, "TIMESTAMP", TL_PQ_INT64, err);
	case TL_PQ_LOGICAL_TIME:
		if (col->unit == TL_PQ_MILLIS)
			return require_physical(col, "TIME(MILLIS)", TL_PQ_INT32, err);
		if (col->unit == TL_PQ_MICROS)
			return require_physical(col, "TIME(MICROS)", TL_PQ_INT64, err);
		if (col->unit == TL_PQ_NANOS)
			return require_physical(col, "TIME(NANOS)", TL_PQ_INT64, err);
		return tl_error_set(err, TL_ERR_INVALID, "column \"%s\": TIME has an unknown time unit %d", col->name,
		                    (int)col->unit);
	case TL_PQ_LOGICAL_DECIMAL:
		return validate_decimal(col, err);
	case TL_PQ_LOGICAL_UUID:
		if (col->physical != TL_PQ_FIXED_LEN_BYTE_ARRAY || col->type_length != 16)
			return tl_error_set(err, TL_ERR_INVALID,
			                    "column \"%s\": UUID must be stored as FIXED_LEN_BYTE_ARRAY(16), not %s", col->name,
			                    col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY ? "a different width"
			                                                                 : tl_pq_physical_name(col->physical));
		return 0;
	case TL_PQ_LOGICAL_INT:
		if (col->int_bit_width == 8 || col->int_bit_width == 16 || col->int_bit_width == 32)
			return require_physical(col, "INT(8|16|32)", TL_PQ_INT32, err);
		if (col->int_bit_width == 64)
			return require_physical(col, "INT(64)", TL_PQ_INT64, err);
		return tl_error_set(err, TL_ERR_INVALID, "column \"%s\": INT bit width must be 8, 16, 32 or 64, not %d",
		                    col->name, (int)col->int_bit_width);
	}
	return tl_error_set(err, TL_ERR_INVALID, "column \"%s\": unknown logical type %d", col->name, (int)col->logical);
}

int tl_pq_schema_validate(const tl_pq_schema *schema, tl_error *err)
{
	if (schema == NULL || schema->ncolumns <= 0)
		return tl_error_set(err, TL_ERR_INVALID, "a Parquet schema needs at least one column");
	for (int i = 0; i < schema->ncolumns; i++) {
		const tl_pq_column *col = &schema->columns[i];
		if (col->name == NULL || col->name[0] == '\0')
			return tl_error_set(err, TL_ERR_INVALID, "column %d has an empty name", i);
		for (int j = 0; j < i; j++)
			if (strcmp(schema->columns[j].name, col->name) == 0)
				return tl_error_set(err, TL_ERR_INVALID, "column name \"%s\" appears twice (columns %d and %d)",
				                    col->name, j, i);
		switch (col->physical) {
		case TL_PQ_BOOLEAN:
		case TL_PQ_INT32:
		case TL_PQ_INT64:
		case TL_PQ_FLOAT:
		case TL_PQ_DOUBLE:
		case TL_PQ_BYTE_ARRAY:
			break;
		case TL_PQ_FIXED_LEN_BYTE_ARRAY:
			if (col->type_length <= 0)
				return tl_error_set(err, TL_ERR_INVALID,
				                    "column \"%s\": FIXED_LEN_BYTE_ARRAY needs a positive type_length, not %d",
				                    col->name, (int)col->type_length);
			break;
		case TL_PQ_INT96:
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "column \"%s\": INT96 is deprecated and read-only; write timestamps as INT64 "
			                    "TIMESTAMP",
			                    col->name);
		default:
			return tl_error_set(err, TL_ERR_INVALID, "column \"%s\": unknown physical type %d", col->name,
			                    (int)col->physical);
		}
		if (validate_logical(col, err) < 0)
			return -1;
	}
	return 0;
}

void tl_pq_column_type_text(const tl_pq_column *col, tl_buf *out)
{
	tl_buf_append_str(out, tl_pq_physical_name(col->physical));
	if (col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY)
		tl_buf_printf(out, "(%d)", (int)col->type_length);
	switch (col->logical) {
	case TL_PQ_LOGICAL_NONE:
		break;
	case TL_PQ_LOGICAL_STRING:
		tl_buf_append_str(out, " STRING");
		break;
	case TL_PQ_LOGICAL_DATE:
		tl_buf_append_str(out, " DATE");
		break;
	case TL_PQ_LOGICAL_TIMESTAMP:
		tl_buf_printf(out, " TIMESTAMP(%s%s)", time_unit_name(col->unit), col->utc_adjusted ? ", UTC" : "");
		break;
	case TL_PQ_LOGICAL_TIME:
		tl_buf_printf(out, " TIME(%s%s)", time_unit_name(col->unit), col->utc_adjusted ? ", UTC" : "");
		break;
	case TL_PQ_LOGICAL_DECIMAL:
		tl_buf_printf(out, " DECIMAL(%d, %d)", (int)col->precision, (int)col->scale);
		break;
	case TL_PQ_LOGICAL_UUID:
		tl_buf_append_str(out, " UUID");
		break;
	case TL_PQ_LOGICAL_INT:
		tl_buf_printf(out, " INT(%d, %s)", (int)col->int_bit_width, col->int_signed ? "SIGNED" : "UNSIGNED");
		break;
	case TL_PQ_LOGICAL_JSON:
		tl_buf_append_str(out, " JSON");
		break;
	case TL_PQ_LOGICAL_ENUM:
		tl_buf_append_str(out, " ENUM");
		break;
	}
}

/* ------------------------------------------------------------ batches */

size_t pq_vector_width(tl_pq_physical physical)
{
	switch (physical) {
	case TL_PQ_BOOLEAN:
		return 1;
	case TL_PQ_INT32:
		return sizeof(int32_t);
	case TL_PQ_FLOAT:
		return sizeof(float);
	case TL_PQ_INT64:
	case TL_PQ_INT96:
		return sizeof(int64_t);
	case TL_PQ_DOUBLE:
		return sizeof(double);
	case TL_PQ_BYTE_ARRAY:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
		return sizeof(tl_bytes);
	}
	return sizeof(tl_bytes);
}

tl_pq_batch *tl_pq_batch_new(const tl_pq_schema *schema, int64_t capacity)
{
	if (capacity < 0)
		capacity = 0;
	tl_pq_batch *batch = tl_calloc(1, sizeof(*batch));
	if (batch == NULL)
		return NULL;
	tl_arena_init(&batch->arena, 0);
	batch->capacity = capacity;
	batch->columns = tl_calloc((size_t)(schema->ncolumns ? schema->ncolumns : 1), sizeof(tl_vector));
	if (batch->columns == NULL) {
		tl_free(batch);
		return NULL;
	}
	batch->ncolumns = schema->ncolumns;
	for (int i = 0; i < schema->ncolumns; i++) {
		const tl_pq_column *col = &schema->columns[i];
		tl_vector *vec = &batch->columns[i];
		/* Zeroed so that a slot the caller never fills (a null row) holds a
		 * harmless value rather than garbage. */
		vec->v.b = tl_calloc((size_t)capacity, pq_vector_width(col->physical));
		if (vec->v.b == NULL) {
			tl_pq_batch_free(batch);
			return NULL;
		}
		if (!col->required) {
			vec->valid = tl_malloc((size_t)capacity);
			if (vec->valid == NULL) {
				tl_pq_batch_free(batch);
				return NULL;
			}
			memset(vec->valid, 1, (size_t)capacity);
		}
	}
	return batch;
}

void tl_pq_batch_free(tl_pq_batch *batch)
{
	if (batch == NULL)
		return;
	for (int i = 0; i < batch->ncolumns; i++) {
		tl_free(batch->columns[i].valid);
		tl_free(batch->columns[i].v.b);   /* every union member is the same pointer */
	}
	tl_free(batch->columns);
	tl_arena_free(&batch->arena);
	tl_free(batch);
}

/* ------------------------------------------------------------ writer defaults */

void tl_pq_writer_options_init(tl_pq_writer_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->codec = TL_PQ_ZSTD;
	opts->compression_level = 0;
	opts->row_group_rows = 1024 * 1024;
	opts->row_group_bytes = 128 * 1024 * 1024;
	opts->page_bytes = 1024 * 1024;
	/* parquet-cpp's default: small enough that readers can skip pages by
	 * row, large enough that page headers cost nothing measurable. */
	opts->page_rows = 20000;
	opts->dictionary = true;
	opts->dictionary_bytes = 1024 * 1024;
	/* On: a chunk of (nearly) unique values gets no dictionary, which
	 * would hold as many bytes as its values and leave every reader of a
	 * page to decompress up to dictionary_bytes first. */
	opts->dictionary_early_fallback = true;
	/* On: a flipped bit in a stored page is then an error on read (ours,
	 * parquet-mr's, Arrow's with verification on), never a different value. */
	opts->write_page_crc = true;
	/* On: a filter on a sorted or clustered column then reads only the
	 * pages that may match, for a few bytes per page at the file's end. */
	opts->write_page_index = true;
	opts->bloom_columns = NULL;
	opts->nbloom_columns = 0;
	opts->bloom_fpp = 0.01;
	opts->bloom_max_bytes = 1024 * 1024;
	opts->metadata = NULL;
	opts->nmetadata = 0;
	opts->created_by = NULL;
}

/* ------------------------------------------------------------ names */

const char *tl_pq_physical_name(tl_pq_physical t)
{
	switch (t) {
	case TL_PQ_BOOLEAN:
		return "BOOLEAN";
	case TL_PQ_INT32:
		return "INT32";
	case TL_PQ_INT64:
		return "INT64";
	case TL_PQ_INT96:
		return "INT96";
	case TL_PQ_FLOAT:
		return "FLOAT";
	case TL_PQ_DOUBLE:
		return "DOUBLE";
	case TL_PQ_BYTE_ARRAY:
		return "BYTE_ARRAY";
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
		return "FIXED_LEN_BYTE_ARRAY";
	}
	return "UNKNOWN";
}

const char *tl_pq_codec_name(tl_pq_codec c)
{
	switch (c) {
	case TL_PQ_UNCOMPRESSED:
		return "UNCOMPRESSED";
	case TL_PQ_SNAPPY:
		return "SNAPPY";
	case TL_PQ_GZIP:
		return "GZIP";
	case TL_PQ_LZO:
		return "LZO";
	case TL_PQ_BROTLI:
		return "BROTLI";
	case TL_PQ_LZ4:
		return "LZ4";
	case TL_PQ_ZSTD:
		return "ZSTD";
	case TL_PQ_LZ4_RAW:
		return "LZ4_RAW";
	}
	return "UNKNOWN";
}

const char *tl_pq_encoding_name(int encoding)
{
	static const char *const names[] = {
		"PLAIN",
		"GROUP_VAR_INT",
		"PLAIN_DICTIONARY",
		"RLE",
		"BIT_PACKED",
		"DELTA_BINARY_PACKED",
		"DELTA_LENGTH_BYTE_ARRAY",
		"DELTA_BYTE_ARRAY",
		"RLE_DICTIONARY",
		"BYTE_STREAM_SPLIT",
	};
	if (encoding < 0 || encoding >= (int)(sizeof(names) / sizeof(names[0])))
		return "UNKNOWN";
	return names[encoding];
}

int tl_pq_codec_from_name(const char *name)
{
	static const struct {
		const char *name;
		tl_pq_codec codec;
	} codecs[] = {
		{"zstd", TL_PQ_ZSTD},       {"snappy", TL_PQ_SNAPPY},       {"gzip", TL_PQ_GZIP},
		{"lz4_raw", TL_PQ_LZ4_RAW}, {"none", TL_PQ_UNCOMPRESSED}, {"uncompressed", TL_PQ_UNCOMPRESSED},
	};
	if (name == NULL)
		return -1;
	for (size_t i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++)
		if (strcasecmp(name, codecs[i].name) == 0)
			return (int)codecs[i].codec;
	return -1;
}
