/*
 * reader.c: opening a Parquet file, mapping its schema, pruning row groups
 * by statistics and reading column batches.
 *
 * Opening reads the 8-byte tail and the footer, decodes and validates it
 * (flat schema, chunk offsets inside the file, types consistent), and maps
 * each leaf to a tl_pq_column. Reading then walks the selected row groups;
 * for each one, every projected column's chunk is fetched (fetch.c: whole,
 * or only the pages a row selection needs when the chunk's OffsetIndex
 * allows) and decoded by a pq_column_reader. What is fetched for a row
 * group lives in an arena freed when the reader moves on; a batch never
 * spans row groups, so the views it holds into a chunk stay valid until the
 * next call.
 *
 * Every read goes through a counting wrapper of the caller's input, so
 * tl_pq_reader_io_counts can tell what a query cost in I/O.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parquet/column_reader.h"
#include "parquet/fetch.h"
#include "parquet/metadata.h"
#include "parquet/reader_index.h"
#include "tierlake/parquet.h"

#define PQ_MAGIC "PAR1"
#define PQ_MAX_FOOTER_BYTES (64 * 1024 * 1024)

/* The rows of one row group to read (tl_pq_reader_select_rows). */
typedef struct row_selection {
	bool selected;
	int nranges;
	tl_pq_row_range *ranges;
} row_selection;

/* A column chunk's page index, each half read on first use. */
typedef struct page_index_slot {
	bool offsets_loaded;
	int nlocations;              /* the OffsetIndex: 0 when absent or unusable */
	const pq_page_location *locations;
	bool pages_loaded;
	int npages;                  /* with the ColumnIndex: 0 when absent or unusable */
	tl_pq_page_info *pages;
} page_index_slot;

/* The caller's input, counting what is read through it. */
typedef struct counting_input {
	tl_input base;
	tl_input *inner;
	int64_t reads;
	int64_t bytes;
} counting_input;

struct tl_pq_reader {
	tl_input *in;                /* &counted.base */
	counting_input counted;
	uint8_t *footer;             /* footer bytes; metadata views point into them */
	pq_file_metadata md;
	bool md_decoded;
	tl_pq_schema *schema;
	tl_pq_chunk_info *chunks;    /* [row_group * ncolumns + column] */
	char *created_by;
	tl_pq_kv *metadata;
	int nmetadata;

	/* What to read. */
	int *projection;
	int nprojection;
	tl_pq_schema *projected_schema;
	bool *skip_row_group;
	int only_row_group;          /* -1: every row group not skipped */
	bool *deferred;              /* per projected column, or NULL: decoded on request only */
	row_selection *selections;   /* per row group (NULL until one is selected) */

	/* Page indexes read so far ([row_group * ncolumns + column]), in index_arena, through index_window. */
	page_index_slot *page_indexes;
	tl_arena index_arena;
	pq_index_window index_window;

	/* Where reading is. */
	int row_group;               /* the row group being read, or -1 before the first */
	const tl_pq_row_range *ranges; /* the rows of it to read */
	int nranges;
	int range;                   /* the range being read */
	int64_t next_row;            /* the next row to return, within the row group */
	tl_pq_row_range whole;       /* the range of an unselected row group */
	int64_t pages_read;          /* of the column chunks released so far */
	int64_t pages_skipped;
	int64_t batch_start;         /* the last batch's first row, within the row group */
	int64_t batch_rows;          /* and its row count (0: no batch to load columns of) */
	pq_column_reader *columns;   /* one per projected column; a deferred one is zeroed until loaded */
	tl_arena fetched;            /* the bytes fetched of the row group's chunks, and their page slots */
	bool started;
	bool failed;
	tl_error failure;
};

static int footer_error(tl_pq_reader *r, tl_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Reports a footer that breaks the format's rules, naming the file. */
static int footer_error(tl_pq_reader *r, tl_error *err, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return tl_error_set(err, TL_ERR_CORRUPT, "%s: %s", r->in->name, what);
}

static char *copy_text(tl_bytes b)
{
	char *s = tl_malloc((size_t)b.len + 1);
	if (s == NULL)
		return NULL;
	memcpy(s, b.ptr, b.len);
	s[b.len] = '\0';
	return s;
}

/* ------------------------------------------------------------ schema */

static bool logical_fits_physical(const tl_pq_column *c)
{
	switch (c->logical) {
	case TL_PQ_LOGICAL_NONE: return true;
	case TL_PQ_LOGICAL_STRING:
	case TL_PQ_LOGICAL_JSON:
	case TL_PQ_LOGICAL_ENUM: return c->physical == TL_PQ_BYTE_ARRAY;
	case TL_PQ_LOGICAL_DATE: return c->physical == TL_PQ_INT32;
	case TL_PQ_LOGICAL_TIMESTAMP: return c->physical == TL_PQ_INT64 || c->physical == TL_PQ_INT96;
	case TL_PQ_LOGICAL_TIME:
		return (c->physical == TL_PQ_INT32 && c->unit == TL_PQ_MILLIS) ||
		       (c->physical == TL_PQ_INT64 && c->unit != TL_PQ_MILLIS);
	case TL_PQ_LOGICAL_DECIMAL:
		if (c->precision < 1 || c->scale < 0 || c->scale > c->precision)
			return false;
		return (c->physical == TL_PQ_INT32 && c->precision <= 9) ||
		       (c->physical == TL_PQ_INT64 && c->precision <= 18) || c->physical == TL_PQ_BYTE_ARRAY ||
		       c->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY;
	case TL_PQ_LOGICAL_UUID: return c->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY && c->type_length == 16;
	case TL_PQ_LOGICAL_INT:
		return (c->physical == TL_PQ_INT32 && c->int_bit_width <= 32) ||
		       (c->physical == TL_PQ_INT64 && c->int_bit_width == 64);
	}
	return false;
}

/* Maps the modern LogicalType annotation. Returns false for kinds we read as raw values. */
static bool map_logical_type(const pq_logical_type *lt, tl_pq_column *c)
{
	switch (lt->kind) {
	case PQ_LT_STRING: c->logical = TL_PQ_LOGICAL_STRING; return true;
	case PQ_LT_ENUM: c->logical = TL_PQ_LOGICAL_ENUM; return true;
	case PQ_LT_JSON: c->logical = TL_PQ_LOGICAL_JSON; return true;
	case PQ_LT_UUID: c->logical = TL_PQ_LOGICAL_UUID; return true;
	case PQ_LT_DATE: c->logical = TL_PQ_LOGICAL_DATE; return true;
	case PQ_LT_DECIMAL:
		c->logical = TL_PQ_LOGICAL_DECIMAL;
		c->precision = lt->decimal_precision;
		c->scale = lt->decimal_scale;
		return true;
	case PQ_LT_TIME:
	case PQ_LT_TIMESTAMP:
		c->logical = lt->kind == PQ_LT_TIME ? TL_PQ_LOGICAL_TIME : TL_PQ_LOGICAL_TIMESTAMP;
		c->unit = (tl_pq_time_unit)lt->unit;
		c->utc_adjusted = lt->utc_adjusted;
		return lt->unit >= 0 && lt->unit <= 2;
	case PQ_LT_INTEGER:
		c->logical = TL_PQ_LOGICAL_INT;
		c->int_bit_width = lt->int_bit_width;
		c->int_signed = lt->int_signed;
		return lt->int_bit_width == 8 || lt->int_bit_width == 16 || lt->int_bit_width == 32 ||
		       lt->int_bit_width == 64;
	default:
		return false; /* NullType, BSON, FLOAT16, ...: the raw physical values */
	}
}

/* Maps the legacy ConvertedType annotation, used when LogicalType is absent. */
static void map_converted_type(const pq_schema_element *e, tl_pq_column *c)
{
	int ct = e->converted_type;
	switch (ct) {
	case PQ_CT_UTF8: c->logical = TL_PQ_LOGICAL_STRING; break;
	case PQ_CT_ENUM: c->logical = TL_PQ_LOGICAL_ENUM; break;
	case PQ_CT_JSON: c->logical = TL_PQ_LOGICAL_JSON; break;
	case PQ_CT_DATE: c->logical = TL_PQ_LOGICAL_DATE; break;
	case PQ_CT_DECIMAL:
		c->logical = TL_PQ_LOGICAL_DECIMAL;
		c->precision = e->precision;
		c->scale = e->scale;
		break;
	/* Legacy time annotations are defined as adjusted to UTC. */
	case PQ_CT_TIME_MILLIS:
	case PQ_CT_TIME_MICROS:
		c->logical = TL_PQ_LOGICAL_TIME;
		c->unit = ct == PQ_CT_TIME_MILLIS ? TL_PQ_MILLIS : TL_PQ_MICROS;
		c->utc_adjusted = true;
		break;
	case PQ_CT_TIMESTAMP_MILLIS:
	case PQ_CT_TIMESTAMP_MICROS:
		c->logical = TL_PQ_LOGICAL_TIMESTAMP;
		c->unit = ct == PQ_CT_TIMESTAMP_MILLIS ? TL_PQ_MILLIS : TL_PQ_MICROS;
		c->utc_adjusted = true;
		break;
	case PQ_CT_INT_8: case PQ_CT_INT_16: case PQ_CT_INT_32: case PQ_CT_INT_64:
	case PQ_CT_UINT_8: case PQ_CT_UINT_16: case PQ_CT_UINT_32: case PQ_CT_UINT_64: {
		static const int widths[] = {8, 16, 32, 64};
		bool is_signed = ct >= PQ_CT_INT_8;
		c->logical = TL_PQ_LOGICAL_INT;
		c->int_bit_width = widths[is_signed ? ct - PQ_CT_INT_8 : ct - PQ_CT_UINT_8];
		c->int_signed = is_signed;
		break;
	}
	default:
		break;
	}
}

/* Maps one leaf schema element; `name` is its NUL-terminated name. */
static int map_leaf(tl_pq_reader *r, const pq_schema_element *e, const char *name, tl_pq_column *c, tl_error *err)
{
	if (e->num_children > 0 || !e->has_type)
		return tl_error_set(err, TL_ERR_UNSUPPORTED,
		                    "%s: column \"%s\" is a nested group (struct, list or map); only flat schemas are supported",
		                    r->in->name, name);
	if (e->has_repetition && e->repetition == PQ_REPEATED)
		return tl_error_set(err, TL_ERR_UNSUPPORTED,
		                    "%s: column \"%s\" is repeated; only flat schemas are supported", r->in->name, name);
	if (e->type < TL_PQ_BOOLEAN || e->type > TL_PQ_FIXED_LEN_BYTE_ARRAY)
		return footer_error(r, err, "column \"%s\" has an unknown physical type", name);

	memset(c, 0, sizeof(*c));
	c->name = (char *)name;
	c->physical = (tl_pq_physical)e->type;
	/* A leaf must state its repetition; treating a missing one as required
	 * matches writers that omit it for required columns. */
	c->required = !(e->has_repetition && e->repetition == PQ_OPTIONAL);
	c->field_id = e->has_field_id ? e->field_id : -1;
	if (c->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY) {
		if (e->type_length <= 0 || e->type_length > (1 << 20))
			return footer_error(r, err, "column \"%s\" has an invalid FIXED_LEN_BYTE_ARRAY length", name);
		c->type_length = e->type_length;
	}

	if (c->physical == TL_PQ_INT96) {
		/* INT96 is the legacy Impala/Spark timestamp: nanoseconds, no zone. */
		c->logical = TL_PQ_LOGICAL_TIMESTAMP;
		c->unit = TL_PQ_NANOS;
		c->utc_adjusted = false;
	} else if (e->logical.kind != PQ_LT_NONE) {
		if (!map_logical_type(&e->logical, c)) {
			c->logical = TL_PQ_LOGICAL_NONE;
			map_converted_type(e, c);
		}
	} else {
		map_converted_type(e, c);
	}
	if (!logical_fits_physical(c))
		return footer_error(r, err, "column \"%s\" has a logical type that does not fit its physical type", name);
	if (tl_pq_schema_add(r->schema, c) < 0)
		return tl_error_nomem(err, "reading a Parquet schema");
	return 0;
}

static int map_schema(tl_pq_reader *r, tl_error *err)
{
	const pq_file_metadata *md = &r->md;
	if (md->nschema < 1)
		return footer_error(r, err, "the schema is empty");
	const pq_schema_element *root = &md->schema[0];
	if (root->has_type)
		return footer_error(r, err, "the schema root is not a group");
	if (root->num_children != md->nschema - 1)
		return tl_error_set(err, TL_ERR_UNSUPPORTED,
		                    "%s: the schema has nested groups (struct, list or map); only flat schemas are supported",
		                    r->in->name);
	r->schema = tl_pq_schema_new();
	if (r->schema == NULL)
		return tl_error_nomem(err, "reading a Parquet schema");
	for (int i = 1; i < md->nschema; i++) {
		tl_pq_column c;
		char *name = copy_text(md->schema[i].name);
		if (name == NULL)
			return tl_error_nomem(err, "reading a Parquet schema");
		int rc = map_leaf(r, &md->schema[i], name, &c, err);
		tl_free(name); /* tl_pq_schema_add copied it */
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* -------------------------------------------------------- statistics */

/* Whether the column's sort order compares byte arrays as signed big-endian numbers. */
static bool signed_bytes_order(const tl_pq_column *c)
{
	return c->logical == TL_PQ_LOGICAL_DECIMAL &&
	       (c->physical == TL_PQ_BYTE_ARRAY || c->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY);
}

static bool unsigned_int_order(const tl_pq_column *c)
{
	return c->logical == TL_PQ_LOGICAL_INT && !c->int_signed;
}

bool pq_decode_stat_value(const tl_pq_column *c, tl_bytes raw, union tl_pq_stat_value *v)
{
	switch (c->physical) {
	case TL_PQ_BOOLEAN:
		if (raw.len != 1)
			return false;
		v->b = raw.ptr[0] != 0;
		return true;
	case TL_PQ_INT32:
	case TL_PQ_FLOAT:
		if (raw.len != 4)
			return false;
		memcpy(&v->i32, raw.ptr, 4);
		return true;
	case TL_PQ_INT64:
	case TL_PQ_DOUBLE:
		if (raw.len != 8)
			return false;
		memcpy(&v->i64, raw.ptr, 8);
		return true;
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
		if (raw.len != (uint32_t)c->type_length)
			return false;
		v->bytes = raw;
		return true;
	case TL_PQ_BYTE_ARRAY:
		v->bytes = raw;
		return true;
	case TL_PQ_INT96:
		return false; /* INT96 has no defined sort order */
	}
	return false;
}

static void map_statistics(const tl_pq_column *c, const pq_column_meta *meta, tl_pq_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!meta->has_statistics)
		return;
	const pq_statistics *s = &meta->statistics;
	if (s->has_null_count && s->null_count >= 0) {
		out->has_null_count = true;
		out->null_count = s->null_count;
	}
	tl_bytes min, max;
	if (s->has_min_value && s->has_max_value) {
		min = s->min_value;
		max = s->max_value;
	} else if (s->has_min && s->has_max && c->physical != TL_PQ_BYTE_ARRAY &&
	           c->physical != TL_PQ_FIXED_LEN_BYTE_ARRAY && !unsigned_int_order(c)) {
		/* The deprecated fields were written in signed order, which is the
		 * column order only for these types. */
		min = s->min;
		max = s->max;
	} else {
		return;
	}
	if (!pq_decode_stat_value(c, min, &out->min) || !pq_decode_stat_value(c, max, &out->max))
		return;
	if (c->physical == TL_PQ_FLOAT && (isnan(out->min.f32) || isnan(out->max.f32)))
		return;
	if (c->physical == TL_PQ_DOUBLE && (isnan(out->min.f64) || isnan(out->max.f64)))
		return;
	out->has_min_max = true;
}

/* Two's-complement big-endian comparison of byte strings of any lengths. */
static int compare_signed_bytes(tl_bytes a, tl_bytes b)
{
	bool a_negative = a.len > 0 && (a.ptr[0] & 0x80);
	bool b_negative = b.len > 0 && (b.ptr[0] & 0x80);
	if (a_negative != b_negative)
		return a_negative ? -1 : 1;
	uint8_t pad = a_negative ? 0xff : 0x00;
	uint32_t len = a.len > b.len ? a.len : b.len;
	for (uint32_t i = 0; i < len; i++) {
		uint8_t x = i + a.len >= len ? a.ptr[i + a.len - len] : pad;
		uint8_t y = i + b.len >= len ? b.ptr[i + b.len - len] : pad;
		if (x != y)
			return x < y ? -1 : 1;
	}
	return 0;
}

static int compare_unsigned_bytes(tl_bytes a, tl_bytes b)
{
	uint32_t n = a.len < b.len ? a.len : b.len;
	int c = n ? memcmp(a.ptr, b.ptr, n) : 0;
	if (c != 0)
		return c < 0 ? -1 : 1;
	return a.len < b.len ? -1 : a.len > b.len ? 1 : 0;
}

#define CMP(a, b) ((a) < (b) ? -1 : (a) > (b) ? 1 : 0)

/* Compares two values of the column in its sort order; sets *ok = false if they are unordered (NaN). */
static int compare_values(const tl_pq_column *c, const union tl_pq_stat_value *a, const union tl_pq_stat_value *b,
                          bool *ok)
{
	*ok = true;
	switch (c->physical) {
	case TL_PQ_BOOLEAN: return CMP(a->b, b->b);
	case TL_PQ_INT32:
		return unsigned_int_order(c) ? CMP((uint32_t)a->i32, (uint32_t)b->i32) : CMP(a->i32, b->i32);
	case TL_PQ_INT64:
		return unsigned_int_order(c) ? CMP((uint64_t)a->i64, (uint64_t)b->i64) : CMP(a->i64, b->i64);
	case TL_PQ_FLOAT:
		if (isnan(a->f32) || isnan(b->f32))
			*ok = false;
		return CMP(a->f32, b->f32);
	case TL_PQ_DOUBLE:
		if (isnan(a->f64) || isnan(b->f64))
			*ok = false;
		return CMP(a->f64, b->f64);
	case TL_PQ_BYTE_ARRAY:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
		return signed_bytes_order(c) ? compare_signed_bytes(a->bytes, b->bytes)
		                             : compare_unsigned_bytes(a->bytes, b->bytes);
	case TL_PQ_INT96:
		*ok = false;
		return 0;
	}
	*ok = false;
	return 0;
}

/* Whether the chunk's statistics prove no row matches the predicate. */
static bool chunk_excludes(const tl_pq_column *c, const tl_pq_chunk_info *chunk, int64_t rows,
                           const tl_pq_predicate *p)
{
	const tl_pq_stats *s = &chunk->stats;
	bool all_null = s->has_null_count && s->null_count == rows;
	switch (p->op) {
	case TL_PQ_IS_NULL: return s->has_null_count && s->null_count == 0;
	case TL_PQ_NOT_NULL: return all_null;
	default: break;
	}
	if (all_null && rows > 0)
		return true; /* a comparison with null is never true */
	if (!s->has_min_max)
		return false;
	bool ok_min, ok_max;
	int vs_min = compare_values(c, &p->value, &s->min, &ok_min);
	int vs_max = compare_values(c, &p->value, &s->max, &ok_max);
	if (!ok_min || !ok_max)
		return false;
	switch (p->op) {
	case TL_PQ_EQ: return vs_min < 0 || vs_max > 0;
	case TL_PQ_LT: return vs_min <= 0;   /* every value >= min >= constant */
	case TL_PQ_LE: return vs_min < 0;
	case TL_PQ_GT: return vs_max >= 0;   /* every value <= max <= constant */
	case TL_PQ_GE: return vs_max > 0;
	default: return false;
	}
}

/* ------------------------------------------------------------ footer */

static int read_footer(tl_pq_reader *r, tl_error *err)
{
	tl_input *in = r->in;
	uint8_t tail[8];
	if (in->size < 12)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: not a Parquet file (only %llu bytes)", in->name,
		                    (unsigned long long)in->size);
	if (tl_input_read(in, in->size - 8, tail, 8, err) < 0)
		return -1;
	if (memcmp(tail + 4, PQ_MAGIC, 4) != 0) {
		if (memcmp(tail + 4, "PARE", 4) == 0)
			return tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: encrypted Parquet files are not supported", in->name);
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: not a Parquet file (no PAR1 magic at the end)", in->name);
	}
	uint32_t footer_len;
	memcpy(&footer_len, tail, 4);
	if (footer_len == 0 || (uint64_t)footer_len > in->size - 12 || footer_len > PQ_MAX_FOOTER_BYTES)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: footer length %u does not fit the file", in->name, footer_len);
	uint8_t head[4];
	if (tl_input_read(in, 0, head, 4, err) < 0)
		return -1;
	if (memcmp(head, PQ_MAGIC, 4) != 0)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: not a Parquet file (no PAR1 magic at the start)", in->name);

	r->footer = tl_malloc(footer_len);
	if (r->footer == NULL)
		return tl_error_nomem(err, "reading a Parquet footer");
	if (tl_input_read(in, in->size - 8 - footer_len, r->footer, footer_len, err) < 0)
		return -1;
	r->md_decoded = true;
	if (pq_file_metadata_decode(r->footer, footer_len, &r->md, err) < 0) {
		tl_error_prefix(err, "%s: footer", in->name);
		return -1;
	}
	return 0;
}

/* Where a column chunk's first page is: its dictionary page, if it has one. */
static int64_t chunk_start(const pq_column_meta *m)
{
	int64_t start = m->data_page_offset;
	if (m->has_dictionary_page_offset && m->dictionary_page_offset > 0 &&
	    (m->dictionary_page_offset < start || start <= 0))
		start = m->dictionary_page_offset;
	return start;
}

static int check_chunks(tl_pq_reader *r, tl_error *err)
{
	const pq_file_metadata *md = &r->md;
	int ncols = r->schema->ncolumns;
	uint64_t data_end = r->in->size - 8; /* the footer starts no earlier, so chunks end before it */
	if (md->nrow_groups < 0)
		return footer_error(r, err, "negative row group count");
	int64_t total_rows = 0;
	for (int g = 0; g < md->nrow_groups; g++) {
		int64_t rows = md->row_groups[g].num_rows;
		if (rows < 0 || rows > INT64_MAX - total_rows)
			return footer_error(r, err, "row group %d has an impossible row count", g);
		total_rows += rows;
	}
	if (total_rows != md->num_rows)
		return footer_error(r, err, "the footer says %lld rows but its row groups hold %lld",
		                    (long long)md->num_rows, (long long)total_rows);
	r->chunks = tl_calloc((size_t)md->nrow_groups * (size_t)(ncols ? ncols : 1), sizeof(tl_pq_chunk_info));
	if (r->chunks == NULL)
		return tl_error_nomem(err, "reading a Parquet footer");
	for (int g = 0; g < md->nrow_groups; g++) {
		const pq_row_group *rg = &md->row_groups[g];
		char where[64];
		snprintf(where, sizeof(where), "row group %d", g);
		if (rg->ncolumns != ncols)
			return footer_error(r, err, "%s does not have one chunk per column", where);
		for (int c = 0; c < ncols; c++) {
			const pq_column_chunk *cc = &rg->columns[c];
			const tl_pq_column *col = &r->schema->columns[c];
			if (cc->has_file_path)
				return tl_error_set(err, TL_ERR_UNSUPPORTED,
				                    "%s: column \"%s\" in %s is stored in another file; that is not supported",
				                    r->in->name, col->name, where);
			if (!cc->has_meta_data)
				return footer_error(r, err, "%s has a column chunk without metadata", where);
			const pq_column_meta *m = &cc->meta_data;
			if (m->type != (int32_t)col->physical)
				return footer_error(r, err, "%s has a column chunk whose type differs from the schema", where);
			int64_t start = chunk_start(m);
			bool outside = start < 4 || m->total_compressed_size < 0 || (uint64_t)start > data_end ||
			               (uint64_t)m->total_compressed_size > data_end - (uint64_t)start;
			/* An empty row group is never read, and writers leave its offsets unset. */
			if (outside && rg->num_rows > 0)
				return footer_error(r, err, "%s has a column chunk outside the file", where);
			if (m->num_values < 0)
				return footer_error(r, err, "%s has a column chunk with a negative value count", where);
			if (m->codec < 0 || m->codec > TL_PQ_LZ4_RAW)
				return footer_error(r, err, "%s has a column chunk with an unknown codec", where);
			tl_pq_chunk_info *info = &r->chunks[(size_t)g * (size_t)ncols + (size_t)c];
			info->codec = (tl_pq_codec)m->codec;
			info->num_values = m->num_values;
			info->compressed_size = m->total_compressed_size;
			info->uncompressed_size = m->total_uncompressed_size;
			for (int e = 0; e < m->nencodings; e++)
				if (m->encodings[e] >= 0 && m->encodings[e] < 32)
					info->encodings_mask |= 1u << m->encodings[e];
			map_statistics(col, m, &info->stats);
		}
	}
	return 0;
}

static int copy_key_values(tl_pq_reader *r, tl_error *err)
{
	const pq_file_metadata *md = &r->md;
	r->created_by = md->has_created_by ? copy_text(md->created_by) : tl_strdup("");
	r->metadata = tl_calloc((size_t)(md->nkey_value ? md->nkey_value : 1), sizeof(tl_pq_kv));
	if (r->created_by == NULL || r->metadata == NULL)
		return tl_error_nomem(err, "reading a Parquet footer's key-value metadata");
	r->nmetadata = md->nkey_value;
	for (int i = 0; i < md->nkey_value; i++) {
		r->metadata[i].key = copy_text(md->key_value[i].key);
		r->metadata[i].value = md->key_value[i].has_value ? copy_text(md->key_value[i].value) : NULL;
		if (r->metadata[i].key == NULL || (md->key_value[i].has_value && r->metadata[i].value == NULL))
			return tl_error_nomem(err, "reading a Parquet footer's key-value metadata");
	}
	return 0;
}

static int counting_read_at(tl_input *in, uint64_t offset, void *buf, size_t len, tl_error *err)
{
	counting_input *c = (counting_input *)in;
	c->reads++;
	c->bytes += (int64_t)len;
	return tl_input_read(c->inner, offset, buf, len, err);
}

tl_pq_reader *tl_pq_reader_open(tl_input *in, tl_error *err)
{
	tl_pq_reader *r = tl_calloc(1, sizeof(*r));
	if (r == NULL) {
		tl_error_nomem(err, "opening a Parquet file");
		return NULL;
	}
	r->counted.base = (tl_input){.read_at = counting_read_at,
	                             .size = in->size,
	                             .name = in->name,
	                             .coalesce_gap = in->coalesce_gap};
	r->counted.inner = in;
	r->in = &r->counted.base;
	r->row_group = -1;
	r->only_row_group = -1;
	tl_arena_init(&r->index_arena, 0);
	tl_arena_init(&r->fetched, 0);
	if (read_footer(r, err) < 0 || map_schema(r, err) < 0 || check_chunks(r, err) < 0 ||
	    copy_key_values(r, err) < 0)
		goto fail;
	pq_index_window_init(&r->index_window, r->in, &r->md);
	r->skip_row_group = tl_calloc((size_t)(r->md.nrow_groups ? r->md.nrow_groups : 1), sizeof(bool));
	int *all = tl_malloc(sizeof(int) * (size_t)(r->schema->ncolumns ? r->schema->ncolumns : 1));
	if (r->skip_row_group == NULL || all == NULL) {
		tl_free(all);
		tl_error_nomem(err, "opening a Parquet file");
		goto fail;
	}
	for (int i = 0; i < r->schema->ncolumns; i++)
		all[i] = i;
	int rc = tl_pq_reader_project(r, all, r->schema->ncolumns, err);
	tl_free(all);
	if (rc < 0)
		goto fail;
	return r;
fail:
	tl_pq_reader_free(r);
	return NULL;
}

static void release_columns(tl_pq_reader *r)
{
	if (r->columns == NULL)
		return;
	for (int i = 0; i < r->nprojection; i++) {
		r->pages_read += r->columns[i].pages_read;
		r->pages_skipped += r->columns[i].pages_skipped;
		pq_column_reader_free(&r->columns[i]);
	}
	tl_free(r->columns);
	r->columns = NULL;
	tl_arena_free(&r->fetched); /* not reset: its blocks are as large as what was fetched */
}

void tl_pq_reader_free(tl_pq_reader *r)
{
	if (r == NULL)
		return;
	release_columns(r);
	for (int g = 0; r->selections != NULL && g < r->md.nrow_groups; g++)
		tl_free(r->selections[g].ranges);
	if (r->md_decoded)
		pq_file_metadata_free(&r->md);
	tl_free(r->footer);
	tl_pq_schema_free(r->schema);
	tl_pq_schema_free(r->projected_schema);
	tl_free(r->chunks);
	tl_free(r->created_by);
	for (int i = 0; i < r->nmetadata; i++) {
		tl_free((char *)r->metadata[i].key);
		tl_free((char *)r->metadata[i].value);
	}
	tl_free(r->metadata);
	tl_free(r->projection);
	tl_free(r->deferred);
	tl_free(r->skip_row_group);
	tl_free(r->selections);
	tl_free(r->page_indexes);
	tl_arena_free(&r->index_arena);
	pq_index_window_free(&r->index_window);
	tl_arena_free(&r->fetched);
	tl_free(r);
}

/* ------------------------------------------------------------ accessors */

const tl_pq_schema *tl_pq_reader_schema(const tl_pq_reader *r) { return r->schema; }
int64_t tl_pq_reader_num_rows(const tl_pq_reader *r) { return r->md.num_rows; }
int tl_pq_reader_num_row_groups(const tl_pq_reader *r) { return r->md.nrow_groups; }
const char *tl_pq_reader_created_by(const tl_pq_reader *r) { return r->created_by; }
int tl_pq_reader_num_metadata(const tl_pq_reader *r) { return r->nmetadata; }

int64_t tl_pq_reader_row_group_rows(const tl_pq_reader *r, int row_group)
{
	if (row_group < 0 || row_group >= r->md.nrow_groups)
		return -1;
	return r->md.row_groups[row_group].num_rows;
}

const tl_pq_chunk_info *tl_pq_reader_chunk(const tl_pq_reader *r, int row_group, int column)
{
	if (row_group < 0 || row_group >= r->md.nrow_groups || column < 0 || column >= r->schema->ncolumns)
		return NULL;
	return &r->chunks[(size_t)row_group * (size_t)r->schema->ncolumns + (size_t)column];
}

const tl_pq_kv *tl_pq_reader_metadata(const tl_pq_reader *r, int i)
{
	return i >= 0 && i < r->nmetadata ? &r->metadata[i] : NULL;
}

/* ------------------------------------------------------------ selection */

int tl_pq_reader_project(tl_pq_reader *r, const int *columns, int ncolumns, tl_error *err)
{
	if (r->started)
		return tl_error_set(err, TL_ERR_INVALID, "projection must be chosen before reading starts");
	for (int i = 0; i < ncolumns; i++)
		if (columns[i] < 0 || columns[i] >= r->schema->ncolumns)
			return tl_error_set(err, TL_ERR_INVALID, "column index %d is out of range (the file has %d columns)",
			                    columns[i], r->schema->ncolumns);
	/* Built aside, so a failure leaves the previous projection in force. */
	int *projection = tl_malloc(sizeof(int) * (size_t)(ncolumns ? ncolumns : 1));
	tl_pq_schema *projected = tl_pq_schema_new();
	if (projection == NULL || projected == NULL)
		goto nomem;
	for (int i = 0; i < ncolumns; i++) {
		projection[i] = columns[i];
		if (tl_pq_schema_add(projected, &r->schema->columns[columns[i]]) < 0)
			goto nomem;
	}
	tl_free(r->projection);
	tl_free(r->deferred);
	r->deferred = NULL;
	tl_pq_schema_free(r->projected_schema);
	r->projection = projection;
	r->projected_schema = projected;
	r->nprojection = ncolumns;
	return 0;
nomem:
	tl_free(projection);
	tl_pq_schema_free(projected);
	return tl_error_nomem(err, "projecting Parquet columns");
}

int tl_pq_reader_defer(tl_pq_reader *r, const bool *deferred, tl_error *err)
{
	if (r->started)
		return tl_error_set(err, TL_ERR_INVALID, "deferred columns must be chosen before reading starts");
	tl_free(r->deferred);
	r->deferred = NULL;
	if (deferred != NULL && r->nprojection > 0) {
		r->deferred = tl_malloc(sizeof(bool) * (size_t)r->nprojection);
		if (r->deferred == NULL)
			return tl_error_nomem(err, "choosing deferred Parquet columns");
		memcpy(r->deferred, deferred, sizeof(bool) * (size_t)r->nprojection);
	}
	return 0;
}

static bool is_deferred(const tl_pq_reader *r, int i)
{
	return r->deferred != NULL && r->deferred[i];
}

int tl_pq_reader_prune(tl_pq_reader *r, const tl_pq_predicate *preds, int npreds)
{
	int skipped = 0;
	for (int g = 0; g < r->md.nrow_groups; g++) {
		if (r->skip_row_group[g])
			continue;
		int64_t rows = r->md.row_groups[g].num_rows;
		for (int i = 0; i < npreds; i++) {
			const tl_pq_predicate *p = &preds[i];
			if (p->column < 0 || p->column >= r->schema->ncolumns)
				continue;
			if (chunk_excludes(&r->schema->columns[p->column], tl_pq_reader_chunk(r, g, p->column), rows, p)) {
				r->skip_row_group[g] = true;
				skipped++;
				break;
			}
		}
	}
	return skipped;
}

int tl_pq_reader_select_row_group(tl_pq_reader *r, int row_group, tl_error *err)
{
	if (r->started)
		return tl_error_set(err, TL_ERR_INVALID, "row groups must be chosen before reading starts");
	if (row_group < -1 || row_group >= r->md.nrow_groups)
		return tl_error_set(err, TL_ERR_INVALID, "row group %d is out of range (the file has %d)", row_group,
		                    r->md.nrow_groups);
	r->only_row_group = row_group;
	return 0;
}

tl_pq_batch *tl_pq_reader_batch_new(const tl_pq_reader *r, int64_t capacity)
{
	return tl_pq_batch_new(r->projected_schema, capacity);
}

/* ------------------------------------------------------------ reading */

static bool wanted(const tl_pq_reader *r, int g)
{
	if (r->md.row_groups[g].num_rows == 0)
		return false;
	if (r->selections != NULL && r->selections[g].selected && r->selections[g].nranges == 0)
		return false;
	if (r->only_row_group >= 0)
		return g == r->only_row_group;
	return !r->skip_row_group[g];
}

static page_index_slot *index_slot(tl_pq_reader *r, int row_group, int column, tl_error *err)
{
	if (r->page_indexes == NULL) {
		r->page_indexes = tl_calloc((size_t)r->md.nrow_groups * (size_t)r->schema->ncolumns, sizeof(page_index_slot));
		if (r->page_indexes == NULL) {
			tl_error_nomem(err, "reading a Parquet page index");
			return NULL;
		}
	}
	return &r->page_indexes[(size_t)row_group * (size_t)r->schema->ncolumns + (size_t)column];
}

/* The OffsetIndex of a column chunk, read on first use: its page count (0: none usable) or -1. */
static int offset_index(tl_pq_reader *r, int row_group, int column, const pq_page_location **locations,
                        tl_error *err)
{
	page_index_slot *slot = index_slot(r, row_group, column, err);
	if (slot == NULL)
		return -1;
	if (!slot->offsets_loaded) {
		const pq_row_group *rg = &r->md.row_groups[row_group];
		int n = pq_offset_index_read(&r->index_window.base, &rg->columns[column], rg->num_rows, &r->index_arena,
		                             &slot->locations, err);
		if (n < 0)
			return -1;
		slot->nlocations = n;
		slot->offsets_loaded = true;
	}
	*locations = slot->locations;
	return slot->nlocations;
}

/*
 * Fetches the chunks of the current row group's projected columns
 * columns[0..n) and sets up their decoders, for the selected rows from row
 * `from` on: a chunk is fetched whole, or (when the rows selected leave
 * pages unread and its OffsetIndex says where the rest are) only the pages
 * holding them.
 */
static int open_columns(tl_pq_reader *r, const int *columns, int n, int64_t from, tl_error *err)
{
	const pq_row_group *rg = &r->md.row_groups[r->row_group];
	bool selective = r->ranges != &r->whole;
	pq_chunk_fetch *chunks = tl_calloc((size_t)(n ? n : 1), sizeof(pq_chunk_fetch));
	if (chunks == NULL)
		return tl_error_nomem(err, "reading a Parquet row group");
	int rc = 0;
	for (int k = 0; rc == 0 && k < n; k++) {
		int column = r->projection[columns[k]];
		const pq_column_meta *m = &rg->columns[column].meta_data;
		pq_chunk_fetch *c = &chunks[k];
		c->start = chunk_start(m);
		c->size = m->total_compressed_size;
		c->rows = rg->num_rows;
		if (selective && (c->npages = offset_index(r, r->row_group, column, &c->pages, err)) < 0)
			rc = -1;
	}
	if (rc == 0)
		rc = pq_fetch_chunks(r->in, chunks, n, selective ? r->ranges : NULL, r->nranges, from, &r->fetched, err);
	for (int k = 0; rc == 0 && k < n; k++) {
		int i = columns[k];
		const pq_column_meta *m = &rg->columns[r->projection[i]].meta_data;
		const pq_chunk_fetch *c = &chunks[k];
		pq_column_reader_init(&r->columns[i], &r->projected_schema->columns[i], r->in->name, r->row_group, c->start,
		                      (tl_pq_codec)m->codec, c->chunk, c->chunk ? (size_t)c->size : 0, rg->num_rows);
		if (c->chunk == NULL)
			pq_column_reader_use_pages(&r->columns[i], c->slots, c->npages, c->dictionary, c->dictionary_len,
			                           c->start);
	}
	tl_free(chunks);
	return rc;
}

/* Moves to row group g: fetches its chunks, but a deferred column's only when it is loaded. */
static int open_row_group(tl_pq_reader *r, int g, tl_error *err)
{
	release_columns(r);
	int ncols = r->nprojection ? r->nprojection : 1;
	r->columns = tl_calloc((size_t)ncols, sizeof(pq_column_reader));
	int *open = tl_malloc(sizeof(int) * (size_t)ncols);
	if (r->columns == NULL || open == NULL) {
		tl_free(open);
		return tl_error_nomem(err, "reading a Parquet row group");
	}
	r->row_group = g;
	r->whole.start = 0;
	r->whole.end = r->md.row_groups[g].num_rows;
	if (r->selections != NULL && r->selections[g].selected) {
		r->ranges = r->selections[g].ranges;
		r->nranges = r->selections[g].nranges;
	} else {
		r->ranges = &r->whole;
		r->nranges = 1;
	}
	r->range = 0;
	r->next_row = 0;
	int n = 0;
	for (int i = 0; i < r->nprojection; i++)
		if (!is_deferred(r, i))
			open[n++] = i;
	int rc = open_columns(r, open, n, 0, err);
	tl_free(open);
	return rc;
}

/*
 * After the last selected range of a row group, passes each open column
 * over the rest of its chunk, so the pages skipped are counted (headers are
 * read, bodies are not).
 */
static int finish_row_group(tl_pq_reader *r, tl_error *err)
{
	if (r->ranges == &r->whole || r->columns == NULL)
		return 0;
	for (int i = 0; i < r->nprojection; i++) {
		pq_column_reader *cr = &r->columns[i];
		if (cr->column != NULL && pq_column_reader_skip(cr, cr->rows_expected - cr->rows_read, err) < 0)
			return -1;
	}
	return 0;
}

static int64_t fail(tl_pq_reader *r, tl_error *err)
{
	r->failed = true;
	r->failure = *err;
	return -1;
}

int64_t tl_pq_reader_next(tl_pq_reader *r, tl_pq_batch *batch, tl_error *err)
{
	if (r->failed) {
		if (err && err->code == TL_OK)
			*err = r->failure;
		return -1;
	}
	if (batch->ncolumns != r->nprojection)
		return tl_error_set(err, TL_ERR_INVALID, "the batch has %d columns but the projection has %d",
		                    batch->ncolumns, r->nprojection);
	if (batch->capacity <= 0)
		return tl_error_set(err, TL_ERR_INVALID, "the batch has no room for rows");
	if (tl_check_interrupt(err) < 0)
		return -1;
	r->started = true;
	r->batch_rows = 0;
	batch->nrows = 0;
	tl_arena_reset(&batch->arena);
	while (r->row_group < 0 || r->range >= r->nranges) {
		if (r->row_group >= 0 && finish_row_group(r, err) < 0)
			return fail(r, err);
		int g = r->row_group + 1;
		while (g < r->md.nrow_groups && !wanted(r, g))
			g++;
		if (g >= r->md.nrow_groups) {
			release_columns(r);
			r->row_group = r->md.nrow_groups;
			r->nranges = 0;
			return 0;
		}
		if (open_row_group(r, g, err) < 0)
			return fail(r, err);
	}
	const tl_pq_row_range *range = &r->ranges[r->range];
	if (r->next_row < range->start)
		r->next_row = range->start;
	int64_t n = batch->capacity < range->end - r->next_row ? batch->capacity : range->end - r->next_row;
	for (int i = 0; i < r->nprojection; i++) {
		if (is_deferred(r, i))
			continue;
		pq_column_reader *cr = &r->columns[i];
		pq_column_reader_begin_batch(cr);
		/* Rows between the selected ranges are passed over, whole pages unread. */
		if (pq_column_reader_skip(cr, r->next_row - cr->rows_read, err) < 0 ||
		    pq_column_reader_read(cr, &batch->columns[i], 0, n, &batch->arena, err) < 0)
			return fail(r, err);
	}
	r->batch_start = r->next_row;
	r->batch_rows = n;
	r->next_row += n;
	if (r->next_row >= range->end)
		r->range++;
	batch->nrows = n;
	return n;
}

int tl_pq_reader_load_column(tl_pq_reader *r, tl_pq_batch *batch, int column, tl_error *err)
{
	if (r->failed) {
		if (err && err->code == TL_OK)
			*err = r->failure;
		return -1;
	}
	if (column < 0 || column >= r->nprojection || !is_deferred(r, column))
		return tl_error_set(err, TL_ERR_INVALID, "column %d is not a deferred column of the projection", column);
	if (r->batch_rows == 0 || batch->nrows != r->batch_rows)
		return tl_error_set(err, TL_ERR_INVALID, "there is no batch to load column %d of", column);
	pq_column_reader *cr = &r->columns[column];
	/* Rows before this batch are never asked of a column opened now. */
	if (cr->column == NULL && open_columns(r, &column, 1, r->batch_start, err) < 0)
		return fail(r, err);
	if (cr->rows_read == r->batch_start + r->batch_rows)
		return 0; /* loaded already */
	/* Rows of batches nobody loaded this column for are passed over now, in one go. */
	pq_column_reader_begin_batch(cr);
	if (pq_column_reader_skip(cr, r->batch_start - cr->rows_read, err) < 0 ||
	    pq_column_reader_read(cr, &batch->columns[column], 0, r->batch_rows, &batch->arena, err) < 0)
		return fail(r, err);
	return 0;
}

/* ------------------------------------------------- page index, bloom filters */

int tl_pq_reader_page_index(tl_pq_reader *r, int row_group, int column, const tl_pq_page_info **pages,
                            tl_error *err)
{
	*pages = NULL;
	int ncols = r->schema->ncolumns;
	if (row_group < 0 || row_group >= r->md.nrow_groups || column < 0 || column >= ncols)
		return tl_error_set(err, TL_ERR_INVALID, "no column chunk %d of row group %d", column, row_group);
	const pq_page_location *locations;
	int nlocations = offset_index(r, row_group, column, &locations, err);
	if (nlocations < 0)
		return -1;
	page_index_slot *slot = index_slot(r, row_group, column, err);
	if (!slot->pages_loaded) {
		const pq_row_group *rg = &r->md.row_groups[row_group];
		int n = pq_page_index_read(&r->index_window.base, &rg->columns[column], locations, nlocations, rg->num_rows,
		                           &r->schema->columns[column], r->md.has_column_orders, &r->index_arena,
		                           &slot->pages, err);
		if (n < 0)
			return -1;
		slot->npages = n;
		slot->pages_loaded = true;
	}
	*pages = slot->pages;
	return slot->npages;
}

int tl_pq_reader_select_rows(tl_pq_reader *r, int row_group, const tl_pq_row_range *ranges, int nranges,
                             tl_error *err)
{
	if (r->started)
		return tl_error_set(err, TL_ERR_INVALID, "rows must be selected before reading starts");
	if (row_group < 0 || row_group >= r->md.nrow_groups || nranges < 0)
		return tl_error_set(err, TL_ERR_INVALID, "row group %d is out of range (the file has %d)", row_group,
		                    r->md.nrow_groups);
	int64_t rows = r->md.row_groups[row_group].num_rows, prev_end = 0;
	for (int i = 0; i < nranges; i++) {
		if (ranges[i].start < prev_end || ranges[i].end <= ranges[i].start || ranges[i].end > rows)
			return tl_error_set(err, TL_ERR_INVALID,
			                    "row range %d [%lld, %lld) of row group %d is empty, out of order or past its %lld rows",
			                    i, (long long)ranges[i].start, (long long)ranges[i].end, row_group, (long long)rows);
		prev_end = ranges[i].end;
	}
	if (r->selections == NULL) {
		r->selections = tl_calloc((size_t)(r->md.nrow_groups ? r->md.nrow_groups : 1), sizeof(row_selection));
		if (r->selections == NULL)
			return tl_error_nomem(err, "selecting Parquet rows");
	}
	tl_pq_row_range *copy = NULL;
	if (nranges > 0) {
		copy = tl_malloc(sizeof(*copy) * (size_t)nranges);
		if (copy == NULL)
			return tl_error_nomem(err, "selecting Parquet rows");
		memcpy(copy, ranges, sizeof(*copy) * (size_t)nranges);
	}
	row_selection *sel = &r->selections[row_group];
	tl_free(sel->ranges);
	sel->selected = true;
	sel->ranges = copy;
	sel->nranges = nranges;
	return 0;
}

void tl_pq_reader_batch_position(const tl_pq_reader *r, int *row_group, int64_t *first_row)
{
	*row_group = r->row_group;
	*first_row = r->batch_start;
}

void tl_pq_reader_io_counts(const tl_pq_reader *r, int64_t *reads, int64_t *bytes)
{
	*reads = r->counted.reads;
	*bytes = r->counted.bytes;
}

void tl_pq_reader_page_counts(const tl_pq_reader *r, int64_t *pages_read, int64_t *pages_skipped)
{
	*pages_read = r->pages_read;
	*pages_skipped = r->pages_skipped;
	for (int i = 0; r->columns != NULL && i < r->nprojection; i++) {
		*pages_read += r->columns[i].pages_read;
		*pages_skipped += r->columns[i].pages_skipped;
	}
}

bool tl_pq_reader_has_bloom_filter(const tl_pq_reader *r, int row_group, int column)
{
	if (row_group < 0 || row_group >= r->md.nrow_groups || column < 0 || column >= r->schema->ncolumns)
		return false;
	return pq_has_bloom_filter(&r->md.row_groups[row_group].columns[column].meta_data, r->in->size);
}

int tl_pq_reader_bloom_may_contain(tl_pq_reader *r, int row_group, int column, const tl_bytes *values,
                                   int nvalues, tl_error *err)
{
	if (row_group < 0 || row_group >= r->md.nrow_groups || column < 0 || column >= r->schema->ncolumns)
		return tl_error_set(err, TL_ERR_INVALID, "no column chunk %d of row group %d", column, row_group);
	return pq_bloom_filter_probe(r->in, &r->md.row_groups[row_group].columns[column].meta_data, values, nvalues,
	                             err);
}
