/*
 * writer.c: the streaming Parquet writer.
 *
 * A file is "PAR1", row groups, the Thrift footer, its length and "PAR1"
 * again. Rows arrive in column batches; each column of the open row group
 * encodes them into data pages (definition levels, then PLAIN values or
 * dictionary indices), compresses every page as it closes and keeps the
 * pages in memory until the row group is full. Then the row group is
 * written column by column, each chunk's dictionary page first, and its
 * metadata is kept for the footer. So memory is bounded by one row group
 * (plus one page per column being filled), whatever the file size, and
 * every buffer is reused from one row group to the next. Each closed page
 * also leaves its place, rows and min/max for the page index, and values
 * of bloom filter columns their hashes (writer_index.c): the bloom filters
 * follow each row group, the page indexes of all row groups the last one.
 *
 * Rows are processed in pieces of at most PIECE_ROWS per column: page
 * limits and the dictionary budget are checked between pieces, which keeps
 * the per-value loops free of bookkeeping (parquet-cpp checks at the same
 * granularity). The dictionary budget is exact, though: the dictionary
 * stops at the value that would overflow it, and that value's row starts
 * the first PLAIN page. A dictionary is also judged once, when the chunk's
 * first page fills: if the values so far are nearly all distinct, so that
 * the dictionary would reach its budget before the row group ends anyway,
 * the page is re-encoded PLAIN and so is the rest of the chunk (as
 * parquet-mr judges its first page). Such a dictionary only costs: it
 * holds as many bytes as the values it replaces, and every reader of one
 * of its pages, a point lookup included, must first decompress all of it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parquet/compress.h"
#include "parquet/encoding.h"
#include "parquet/metadata.h"
#include "parquet/writer_internal.h"
#include "tierlake/parquet.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the Parquet writer copies numbers as stored in memory, which must be little-endian"
#endif

#define PIECE_ROWS 1024
#define DEFAULT_CREATED_BY "tierdb version 0.1.0"
/* Thrift i32 fields (page sizes, value counts) bound what one page may hold. */
#define MAX_PAGE_BYTES ((size_t)INT32_MAX)

static const uint8_t parquet_magic[4] = {'P', 'A', 'R', '1'};

typedef struct column_writer {
	const tl_pq_column *col;
	int value_width;          /* bytes per PLAIN value; 0 for BYTE_ARRAY, 1 for BOOLEAN (unpacked) */
	size_t vector_width;      /* bytes per row in the batch's vector */
	bool dictionary_mode;     /* new values go to the dictionary (until it overflows) */
	pq_dict dict;
	pq_chunk_stats stats;     /* the chunk's, merged from each page's */
	pq_chunk_stats page_stats;
	pq_page_index_builder page_index;
	bool bloom;               /* the chunk gets a bloom filter */
	pq_bloom_builder bloom_builder;

	/* The page being filled. */
	tl_buf levels;            /* RLE-encoded definition levels (optional columns) */
	pq_rle_encoder level_encoder;
	tl_buf values;            /* PLAIN values, or uint32 dictionary indices */
	pq_bool_encoder bool_encoder;
	int64_t page_rows;
	int64_t page_values;      /* non-null values */

	/* The chunk's closed data pages, headers included, in file order. */
	tl_buf pages;
	int64_t chunk_rows;
	int64_t data_uncompressed; /* sizes of the data pages, headers included */
	int64_t data_compressed;
	int64_t dictionary_pages;  /* data pages encoded with the dictionary */
	int64_t plain_pages;
} column_writer;

struct tl_pq_writer {
	tl_output *out;
	tl_pq_schema *schema;
	tl_pq_writer_options opts;
	char *created_by;
	tl_pq_kv *metadata;
	column_writer *columns;

	int64_t group_rows;       /* rows in the open row group */
	int64_t rows_written;
	pq_row_group *row_groups; /* finished row groups, for the footer */
	int32_t nrow_groups;
	int32_t row_groups_cap;
	tl_arena footer_arena;    /* arrays and statistics the footer refers to */

	/* Scratch reused by every column. */
	tl_buf gather;            /* a piece's non-null values, made dense */
	uint32_t levels_scratch[PIECE_ROWS];
	tl_buf page;              /* an uncompressed page body */
	tl_buf compressed;
	tl_buf header;

	/* The page index of every chunk written, until the footer (writer_index.c). */
	tl_buf column_indexes;
	tl_buf offset_indexes;
	tl_arena index_scratch;
	tl_buf blooms;            /* the bloom filters of the row group being flushed */
	int *bloom_columns;       /* the options' array, copied */

	bool closed;
	bool failed;
	tl_error error;           /* the first error; every later call repeats it */
};

/* ------------------------------------------------------------ errors */

/* Marks the writer unusable: a half-written row group cannot be finished. */
static int fail(tl_pq_writer *w, tl_error *err)
{
	if (!w->failed) {
		w->failed = true;
		w->error = *err;
		if (w->error.code == TL_OK)
			tl_error_set(&w->error, TL_ERR_INVALID, "the Parquet writer failed");
	}
	return -1;
}

static int repeat_failure(const tl_pq_writer *w, tl_error *err)
{
	return tl_error_set(err, w->error.code, "%s", w->error.message);
}

static int write_out(tl_pq_writer *w, const void *data, size_t len, tl_error *err)
{
	if (len == 0)
		return 0;
	return tl_output_write(w->out, data, len, err);
}

/* ------------------------------------------------------------ columns */

static bool uses_dictionary(const tl_pq_writer *w, const column_writer *c)
{
	/* A dictionary of two values saves nothing over one bit per value. */
	return w->opts.dictionary && c->col->physical != TL_PQ_BOOLEAN;
}

static void start_page(column_writer *c)
{
	tl_buf_reset(&c->levels);
	tl_buf_reset(&c->values);
	pq_rle_encoder_init(&c->level_encoder, &c->levels, 1);
	pq_bool_encoder_init(&c->bool_encoder, &c->values);
	pq_stats_reset(&c->page_stats);
	c->page_rows = 0;
	c->page_values = 0;
}

static void start_chunk(tl_pq_writer *w, column_writer *c)
{
	tl_buf_reset(&c->pages);
	pq_dict_reset(&c->dict);
	pq_stats_reset(&c->stats);
	pq_page_index_reset(&c->page_index);
	c->dictionary_mode = uses_dictionary(w, c);
	c->chunk_rows = 0;
	c->data_uncompressed = 0;
	c->data_compressed = 0;
	c->dictionary_pages = 0;
	c->plain_pages = 0;
	start_page(c);
}

static void column_init(tl_pq_writer *w, column_writer *c, const tl_pq_column *col)
{
	memset(c, 0, sizeof(*c));
	c->col = col;
	c->vector_width = pq_vector_width(col->physical);
	c->value_width = col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY ? col->type_length
	                 : col->physical == TL_PQ_BYTE_ARRAY         ? 0
	                                                             : (int)c->vector_width;
	pq_dict_init(&c->dict, col->physical, col->type_length);
	pq_stats_init(&c->stats, col);
	pq_stats_init(&c->page_stats, col);
	pq_page_index_init(&c->page_index);
	pq_bloom_builder_init(&c->bloom_builder);
	tl_buf_init(&c->levels);
	tl_buf_init(&c->values);
	tl_buf_init(&c->pages);
	start_chunk(w, c);
}

static void column_free(column_writer *c)
{
	pq_dict_free(&c->dict);
	pq_stats_free(&c->stats);
	pq_stats_free(&c->page_stats);
	pq_page_index_free(&c->page_index);
	pq_bloom_builder_free(&c->bloom_builder);
	tl_buf_free(&c->levels);
	tl_buf_free(&c->values);
	tl_buf_free(&c->pages);
}

/* Encoded size of the open page's values, for the page_bytes limit. */
static int64_t page_value_bytes(const column_writer *c)
{
	if (c->dictionary_mode)
		return (c->page_values * pq_dict_index_bit_width(&c->dict) + 7) / 8;
	return (int64_t)c->values.len;
}

/* ------------------------------------------------------------ pages */

/*
 * Compresses body and appends header and stored bytes to dest, filling the
 * header's sizes and CRC. Adds the page's sizes, header included, to the
 * totals the column metadata reports.
 */
static int encode_page(tl_pq_writer *w, const column_writer *c, pq_page_header *h, const uint8_t *body,
                       size_t len, tl_buf *dest, int64_t *uncompressed_total, int64_t *compressed_total,
                       tl_error *err)
{
	if (len > MAX_PAGE_BYTES)
		return tl_error_set(err, TL_ERR_UNSUPPORTED,
		                    "column \"%s\": a page of %zu bytes exceeds Parquet's 2 GiB page limit", c->col->name,
		                    len);
	const uint8_t *stored = body;
	size_t stored_len = len;
	if (w->opts.codec != TL_PQ_UNCOMPRESSED) {
		tl_buf_reset(&w->compressed);
		if (pq_compress(w->opts.codec, w->opts.compression_level, body, len, &w->compressed, err) < 0) {
			tl_error_prefix(err, "column \"%s\"", c->col->name);
			return -1;
		}
		stored = w->compressed.data;
		stored_len = w->compressed.len;
		if (stored_len > MAX_PAGE_BYTES)
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "column \"%s\": a compressed page of %zu bytes exceeds Parquet's 2 GiB page limit",
			                    c->col->name, stored_len);
	}
	h->uncompressed_page_size = (int32_t)len;
	h->compressed_page_size = (int32_t)stored_len;
	if (w->opts.write_page_crc) {
		h->has_crc = true;
		h->crc = (int32_t)pq_crc32(stored, stored_len);
	}
	size_t start = dest->len;
	pq_page_header_encode(h, dest);
	size_t header_len = dest->len - start;
	tl_buf_append(dest, stored, stored_len);
	if (tl_buf_check(dest, err, "writing a Parquet page") < 0)
		return -1;
	*uncompressed_total += (int64_t)(header_len + len);
	*compressed_total += (int64_t)(header_len + stored_len);
	return 0;
}

static int close_page(tl_pq_writer *w, column_writer *c, tl_error *err)
{
	if (c->page_rows == 0)
		return 0;

	/* The page body is levels then values; a required PLAIN page has no
	 * levels, so its values buffer is the body as it stands. */
	tl_buf *page = &w->page;
	tl_buf_reset(page);
	if (!c->col->required) {
		pq_rle_encoder_finish(&c->level_encoder);
		pq_append_u32_le(page, (uint32_t)c->levels.len);
		tl_buf_append(page, c->levels.data, c->levels.len);
	}

	int encoding;
	if (c->dictionary_mode && c->page_values > 0) {
		int bit_width = pq_dict_index_bit_width(&c->dict);
		pq_rle_encoder indices;
		tl_buf_append_byte(page, (uint8_t)bit_width);
		pq_rle_encoder_init(&indices, page, bit_width);
		pq_rle_encode(&indices, (const uint32_t *)c->values.data, c->page_values);
		pq_rle_encoder_finish(&indices);
		encoding = PQ_ENC_RLE_DICTIONARY;
		c->dictionary_pages++;
	} else {
		/* Also the page of a dictionary chunk that holds only nulls: no
		 * indices to write, so no reason to make it depend on a dictionary. */
		if (c->col->physical == TL_PQ_BOOLEAN)
			pq_bool_encoder_finish(&c->bool_encoder);
		if (c->col->required && !c->dictionary_mode)
			page = &c->values;
		else if (!c->dictionary_mode)
			tl_buf_append(page, c->values.data, c->values.len);
		encoding = PQ_ENC_PLAIN;
		c->plain_pages++;
	}

	pq_page_header h;
	memset(&h, 0, sizeof(h));
	h.type = PQ_PAGE_DATA;
	h.has_data_page_header = true;
	h.data_page_header.num_values = (int32_t)c->page_rows;
	h.data_page_header.encoding = encoding;
	h.data_page_header.definition_level_encoding = PQ_ENC_RLE;
	h.data_page_header.repetition_level_encoding = PQ_ENC_RLE;
	/* The encoders append without checking (buf.h): one check covers them. */
	if (tl_buf_failed(page) || tl_buf_failed(&c->levels) || tl_buf_failed(&c->values))
		return tl_error_nomem(err, "encoding a Parquet page");
	size_t offset = c->pages.len;
	if (encode_page(w, c, &h, page->data, page->len, &c->pages, &c->data_uncompressed, &c->data_compressed, err) < 0)
		return -1;
	if (w->opts.write_page_index)
		pq_page_index_add(&c->page_index, (int64_t)offset, (int64_t)(c->pages.len - offset),
		                  c->chunk_rows - c->page_rows, c->page_rows, c->page_rows - c->page_values, &c->page_stats);
	pq_stats_merge(&c->stats, &c->page_stats);
	start_page(c);
	return 0;
}

/* ------------------------------------------------------------ values */

static int value_error(const column_writer *c, int64_t row, tl_error *err, const char *what)
{
	return tl_error_set(err, TL_ERR_INVALID, "column \"%s\", row %lld: %s", c->col->name, (long long)row, what);
}

/*
 * Rows [row, row + n) of vec as dense non-null values. Points into the batch
 * when nothing needs to move; otherwise copies into w->gather. Booleans are
 * always copied so they arrive as 0/1. Returns the value count, or -1 when
 * out of memory.
 */
static int64_t gather_values(tl_pq_writer *w, const column_writer *c, const tl_vector *vec, int64_t row, int64_t n,
                             int64_t nvalid, const void **values)
{
	const size_t width = c->vector_width;
	const uint8_t *base = vec->v.b + (size_t)row * width;
	const uint8_t *valid = vec->valid ? vec->valid + row : NULL;
	bool is_bool = c->col->physical == TL_PQ_BOOLEAN;

	if (nvalid == n && !is_bool) {
		*values = base;
		return n;
	}
	tl_buf_reset(&w->gather);
	uint8_t *dst = tl_buf_extend(&w->gather, (size_t)nvalid * width);
	if (dst == NULL)
		return -1;
	*values = dst;
	if (is_bool) {
		for (int64_t i = 0; i < n; i++)
			if (valid == NULL || valid[i])
				*dst++ = base[i] != 0;
		return nvalid;
	}
	switch (width) {
	case 4:
		for (int64_t i = 0; i < n; i++)
			if (valid[i]) {
				memcpy(dst, base + i * 4, 4);
				dst += 4;
			}
		break;
	case 8:
		for (int64_t i = 0; i < n; i++)
			if (valid[i]) {
				memcpy(dst, base + i * 8, 8);
				dst += 8;
			}
		break;
	default:
		for (int64_t i = 0; i < n; i++)
			if (valid[i]) {
				memcpy(dst, base + (size_t)i * width, width);
				dst += width;
			}
		break;
	}
	return nvalid;
}

/* The batch row holding the k-th non-null value of rows [row, ...). */
static int64_t row_of_value(const tl_vector *vec, int64_t row, int64_t k)
{
	if (vec->valid == NULL)
		return row + k;
	for (;; row++)
		if (vec->valid[row] && k-- == 0)
			return row;
}

/* Byte-array lengths are checked before anything is encoded. */
static int check_byte_values(const column_writer *c, const tl_vector *vec, int64_t row, const tl_bytes *values,
                             int64_t n, tl_error *err)
{
	if (c->col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY) {
		uint32_t width = (uint32_t)c->col->type_length;
		for (int64_t i = 0; i < n; i++)
			if (values[i].len != width) {
				char what[96];
				snprintf(what, sizeof(what), "value of %u bytes in a FIXED_LEN_BYTE_ARRAY(%u) column",
				         values[i].len, width);
				return value_error(c, row_of_value(vec, row, i), err, what);
			}
	} else {
		for (int64_t i = 0; i < n; i++)
			if (values[i].len > (uint32_t)INT32_MAX)
				return value_error(c, row_of_value(vec, row, i), err,
				                   "a BYTE_ARRAY value of 2 GiB or more cannot be stored in Parquet");
	}
	return 0;
}

static void encode_plain(column_writer *c, const void *values, int64_t n)
{
	switch (c->col->physical) {
	case TL_PQ_BOOLEAN:
		pq_bool_encode(&c->bool_encoder, values, n);
		break;
	case TL_PQ_BYTE_ARRAY:
		pq_plain_encode_byte_array(&c->values, values, n);
		break;
	case TL_PQ_FIXED_LEN_BYTE_ARRAY: {
		const tl_bytes *v = values;
		size_t width = (size_t)c->value_width;
		uint8_t *dst = tl_buf_extend(&c->values, (size_t)n * width);
		if (dst == NULL)
			break; /* c->values is failed; the page checks it */
		for (int64_t i = 0; i < n; i++, dst += width)
			memcpy(dst, v[i].ptr, width);
		break;
	}
	default:
		pq_plain_encode_fixed(&c->values, values, c->value_width, n);
		break;
	}
	if (c->bloom)
		pq_bloom_builder_add(&c->bloom_builder, values, n, c->dict.by_bytes ? 0 : c->value_width);
}

/* Hashes dictionary entries [from, to) into the bloom filter: each distinct value of a dictionary-encoded page once. */
static void add_dictionary_hashes(column_writer *c, uint32_t from, uint32_t to)
{
	if (!c->bloom || from == to)
		return;
	if (!c->dict.by_bytes) {
		pq_bloom_builder_add(&c->bloom_builder, c->dict.plain.data + (size_t)from * (size_t)c->dict.width, to - from,
		                     c->dict.width);
		return;
	}
	for (uint32_t i = from; i < to; i++) {
		tl_bytes v = pq_dict_entry_bytes(&c->dict, i);
		pq_bloom_builder_add(&c->bloom_builder, &v, 1, 0);
	}
}

static size_t dictionary_budget(const tl_pq_writer *w)
{
	return w->opts.dictionary_bytes > (int64_t)MAX_PAGE_BYTES ? MAX_PAGE_BYTES : (size_t)w->opts.dictionary_bytes;
}

/* Dictionary-encodes values; returns how many fit before the budget ran out. */
static int64_t encode_dictionary(tl_pq_writer *w, column_writer *c, const void *values, int64_t n)
{
	size_t budget = dictionary_budget(w);
	uint32_t before = c->dict.count;
	uint32_t *indices = (uint32_t *)tl_buf_extend(&c->values, (size_t)n * sizeof(uint32_t));
	if (indices == NULL)
		return 0;
	int64_t done = pq_dict_encode(&c->dict, values, n, indices, budget);
	c->values.len -= (size_t)(n - done) * sizeof(uint32_t);
	add_dictionary_hashes(c, before, c->dict.count);
	return done;
}

/*
 * How many of the n rows from `row` the open page can take before its
 * encoded values reach page_bytes: every row up to the one that crosses the
 * limit. Counting null rows as values makes this conservative, never loose.
 */
static int64_t rows_within_page_bytes(const tl_pq_writer *w, const column_writer *c, const tl_vector *vec,
                                      int64_t row, int64_t n)
{
	int64_t room = w->opts.page_bytes - page_value_bytes(c);
	if (room > INT32_MAX)
		room = INT32_MAX;     /* enough for any piece; keeps room * 8 in range */
	if (room < 1)
		room = 1;
	int64_t rows;
	if (c->dictionary_mode) {
		int64_t bits = pq_dict_index_bit_width(&c->dict);
		rows = (room * 8 + bits - 1) / bits;
	} else if (c->col->physical == TL_PQ_BOOLEAN) {
		rows = room * 8;
	} else if (c->col->physical == TL_PQ_BYTE_ARRAY) {
		int64_t used = 0;
		for (rows = 0; rows < n && used < room; rows++)
			if (vec->valid == NULL || vec->valid[row + rows])
				used += 4 + (int64_t)vec->v.bytes[row + rows].len;
	} else {
		rows = (room + c->value_width - 1) / c->value_width;
	}
	if (rows < 1)
		rows = 1;
	return rows < n ? rows : n;
}

static int64_t count_valid(const uint8_t *valid, int64_t n)
{
	int64_t count = 0;
	for (int64_t i = 0; i < n; i++)
		count += valid[i] != 0;
	return count;
}

static void append_levels(tl_pq_writer *w, column_writer *c, const tl_vector *vec, int64_t row, int64_t n)
{
	uint32_t *levels = w->levels_scratch;
	if (vec->valid == NULL) {
		for (int64_t i = 0; i < n; i++)
			levels[i] = 1;
	} else {
		const uint8_t *valid = vec->valid + row;
		for (int64_t i = 0; i < n; i++)
			levels[i] = valid[i] != 0;
	}
	pq_rle_encode(&c->level_encoder, levels, n);
}

/*
 * Whether an allocation behind the column's encoders failed: they append
 * to sticky buffers (buf.h) and the dictionary marks its own buffer, so one
 * check after each piece of rows finds it.
 */
static bool column_failed(const tl_pq_writer *w, const column_writer *c)
{
	return tl_buf_failed(&c->values) || tl_buf_failed(&c->levels) || tl_buf_failed(&c->dict.plain) ||
	       tl_buf_failed(&c->stats.min_bytes) || tl_buf_failed(&c->stats.max_bytes) ||
	       tl_buf_failed(&c->page_stats.min_bytes) || tl_buf_failed(&c->page_stats.max_bytes) ||
	       tl_buf_failed(&c->page_index.entries) || tl_buf_failed(&c->page_index.bounds) ||
	       tl_buf_failed(&c->bloom_builder.hashes);
}

/* ------------------------------------------------------------ judging a dictionary */

/* A first page with fewer values says too little about the column to judge its dictionary by. */
#define JUDGE_MIN_VALUES 256

/*
 * How many distinct values D a column drawing uniformly from them has when
 * n values show d < n distinct ones: the D with D (1 - e^(-n/D)) = d, by
 * bisection. Columns are rarely uniform, but the estimate only has to
 * tell thousands from hundreds of thousands.
 */
static double distinct_population(double n, double d)
{
	double lo = d, hi = 2.0 * d;
	while (hi * (1.0 - exp(-n / hi)) < d && hi < 1e18)
		hi *= 2.0;
	for (int i = 0; i < 64; i++) {
		double mid = (lo + hi) / 2.0;
		if (mid * (1.0 - exp(-n / mid)) < d)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

/*
 * Whether the dictionary of a chunk whose first page is full would reach
 * its budget before the row group does: the distinct values a full row
 * group is expected to hold, at the entries' mean size, against the
 * budget. Only a page with nearly every value distinct gets there (a
 * column of 10,000 distinct values keeps its dictionary), and a dictionary
 * that would fill its budget is one a chunk falls back from anyway.
 */
static bool dictionary_will_overflow(const tl_pq_writer *w, const column_writer *c)
{
	if (c->page_values < JUDGE_MIN_VALUES || c->dict.count == 0)
		return false;
	double n = (double)c->page_values, d = (double)c->dict.count;
	double chunk_values = (double)w->opts.row_group_rows * n / (double)c->page_rows;
	double expected = chunk_values;
	if (d < n) {
		double population = distinct_population(n, d);
		expected = population * (1.0 - exp(-chunk_values / population));
	}
	double entry_bytes = (double)c->dict.plain.len / d;
	return expected * entry_bytes > (double)dictionary_budget(w);
}

/* Re-encodes the open page's dictionary indices as PLAIN values and leaves the chunk without a dictionary. */
static int drop_dictionary(tl_pq_writer *w, column_writer *c, tl_error *err)
{
	const uint32_t *indices = (const uint32_t *)c->values.data;
	tl_buf *plain = &w->gather;
	tl_buf_reset(plain);
	for (int64_t i = 0; i < c->page_values; i++) {
		if (c->dict.by_bytes) {
			tl_bytes v = pq_dict_entry_bytes(&c->dict, indices[i]);
			if (c->col->physical == TL_PQ_BYTE_ARRAY)
				pq_append_u32_le(plain, v.len);
			tl_buf_append(plain, v.ptr, v.len);
		} else {
			tl_buf_append(plain, c->dict.plain.data + (size_t)indices[i] * (size_t)c->dict.width,
			              (size_t)c->dict.width);
		}
	}
	if (tl_buf_check(plain, err, "re-encoding a Parquet page without its dictionary") < 0)
		return -1;
	/* The page's values become the PLAIN bytes; the index buffer is the next gather scratch. */
	tl_buf swap = c->values;
	c->values = *plain;
	*plain = swap;
	c->dictionary_mode = false;
	pq_dict_reset(&c->dict);
	return 0;
}

/*
 * Closes a page that reached its limits; the chunk's first one decides
 * whether the chunk keeps its dictionary.
 */
static int close_full_page(tl_pq_writer *w, column_writer *c, tl_error *err)
{
	if (c->dictionary_mode && w->opts.dictionary_early_fallback && c->dictionary_pages == 0 &&
	    c->plain_pages == 0 && dictionary_will_overflow(w, c) && drop_dictionary(w, c, err) < 0)
		return -1;
	return close_page(w, c, err);
}

/*
 * Appends rows [row, row + n) of one column (n <= PIECE_ROWS) to its open
 * page, closing pages at their limits and falling back to PLAIN when the
 * dictionary is full.
 */
static int write_column_rows(tl_pq_writer *w, column_writer *c, const tl_vector *vec, int64_t row, int64_t n,
                             tl_error *err)
{
	const tl_pq_column *col = c->col;
	while (n > 0) {
		int64_t take = w->opts.page_rows - c->page_rows;
		if (take > n)
			take = n;
		take = rows_within_page_bytes(w, c, vec, row, take);

		int64_t nvalid = take;
		if (vec->valid != NULL) {
			nvalid = count_valid(vec->valid + row, take);
			if (col->required && nvalid < take) {
				int64_t null_row = row;
				while (vec->valid[null_row])
					null_row++;
				return value_error(c, null_row, err, "null in a required column");
			}
		}
		const void *values;
		int64_t nvalues = gather_values(w, c, vec, row, take, nvalid, &values);
		if (nvalues < 0)
			return tl_error_nomem(err, "gathering values of column \"%s\"", col->name);
		if (col->physical == TL_PQ_BYTE_ARRAY || col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY)
			if (check_byte_values(c, vec, row, values, nvalues, err) < 0)
				return -1;

		int64_t encoded = nvalues;
		if (c->dictionary_mode)
			encoded = encode_dictionary(w, c, values, nvalues);
		else
			encode_plain(c, values, nvalues);
		pq_stats_add(&c->page_stats, values, encoded);
		if (column_failed(w, c))
			return tl_error_nomem(err, "encoding column \"%s\"", col->name);

		/* On a dictionary overflow only the rows before the value that did
		 * not fit belong to this page; the rest are taken again as PLAIN. */
		int64_t rows = encoded == nvalues ? take : row_of_value(vec, row, encoded) - row;
		if (!col->required)
			append_levels(w, c, vec, row, rows);
		c->page_rows += rows;
		c->page_values += encoded;
		c->chunk_rows += rows;
		c->stats.null_count += rows - encoded;

		if (encoded < nvalues) {
			if (close_page(w, c, err) < 0)
				return -1;
			c->dictionary_mode = false;
		} else if (c->page_rows >= w->opts.page_rows || page_value_bytes(c) >= w->opts.page_bytes) {
			if (close_full_page(w, c, err) < 0)
				return -1;
		}
		row += rows;
		n -= rows;
	}
	return 0;
}

/* ------------------------------------------------------------ row groups */

static int64_t buffered_bytes(const tl_pq_writer *w)
{
	int64_t total = 0;
	for (int i = 0; i < w->schema->ncolumns; i++) {
		const column_writer *c = &w->columns[i];
		total += (int64_t)(c->pages.len + c->values.len + c->levels.len + c->dict.plain.len);
	}
	return total;
}

static int column_encodings(const column_writer *c, pq_column_meta *meta, tl_arena *arena)
{
	int32_t *list = tl_arena_alloc(arena, 3 * sizeof(int32_t));
	if (list == NULL)
		return -1;
	int n = 0;
	/* PLAIN for the dictionary page or for PLAIN data pages; RLE for the
	 * levels (listed for required columns too, as parquet-cpp does). */
	if (c->dictionary_pages > 0 || c->plain_pages > 0)
		list[n++] = PQ_ENC_PLAIN;
	list[n++] = PQ_ENC_RLE;
	if (c->dictionary_pages > 0)
		list[n++] = PQ_ENC_RLE_DICTIONARY;
	meta->encodings = list;
	meta->nencodings = n;
	return 0;
}

static int flush_column_chunk(tl_pq_writer *w, column_writer *c, pq_column_chunk *chunk, tl_error *err)
{
	pq_column_meta *meta = &chunk->meta_data;
	int64_t chunk_start = (int64_t)w->out->offset;
	int64_t uncompressed = 0, compressed = 0;

	if (c->dictionary_pages > 0) {
		pq_page_header h;
		memset(&h, 0, sizeof(h));
		h.type = PQ_PAGE_DICTIONARY;
		h.has_dictionary_page_header = true;
		h.dictionary_page_header.num_values = (int32_t)c->dict.count;
		h.dictionary_page_header.encoding = PQ_ENC_PLAIN;
		tl_buf_reset(&w->header);
		if (encode_page(w, c, &h, c->dict.plain.data, c->dict.plain.len, &w->header, &uncompressed, &compressed,
		                err) < 0)
			return -1;
		if (write_out(w, w->header.data, w->header.len, err) < 0)
			return -1;
		meta->has_dictionary_page_offset = true;
		meta->dictionary_page_offset = chunk_start;
	}
	meta->data_page_offset = (int64_t)w->out->offset;
	if (write_out(w, c->pages.data, c->pages.len, err) < 0)
		return -1;
	uncompressed += c->data_uncompressed;
	compressed += c->data_compressed;

	chunk->file_offset = chunk_start;
	chunk->has_meta_data = true;
	meta->type = c->col->physical;
	meta->npath = 1;
	meta->path_in_schema = tl_arena_alloc(&w->footer_arena, sizeof(tl_bytes));
	if (column_encodings(c, meta, &w->footer_arena) < 0 || meta->path_in_schema == NULL)
		return tl_error_nomem(err, "for a Parquet footer");
	meta->path_in_schema[0].ptr = (const uint8_t *)c->col->name;
	meta->path_in_schema[0].len = (uint32_t)strlen(c->col->name);
	meta->codec = w->opts.codec;
	meta->num_values = c->chunk_rows;
	meta->total_uncompressed_size = uncompressed;
	meta->total_compressed_size = compressed;
	meta->has_statistics = true;
	if (pq_stats_to_thrift(&c->stats, &meta->statistics, &w->footer_arena) < 0)
		return tl_error_nomem(err, "for column statistics");
	if (w->opts.write_page_index) {
		tl_arena_reset(&w->index_scratch);
		if (pq_page_index_encode(&c->page_index, &c->stats, meta->data_page_offset, chunk, &w->column_indexes,
		                         &w->offset_indexes, &w->index_scratch) < 0)
			return tl_error_nomem(err, "for a Parquet page index");
	}
	return 0;
}

/*
 * Writes the bloom filters of the row group's chunks just flushed, after
 * its last chunk, so the chunks stay contiguous for readers that fetch
 * neighbouring chunks in one request.
 */
static int write_bloom_filters(tl_pq_writer *w, pq_row_group *rg, tl_error *err)
{
	for (int i = 0; i < w->schema->ncolumns; i++) {
		column_writer *c = &w->columns[i];
		if (!c->bloom)
			continue;
		tl_buf_reset(&w->blooms);
		int64_t len = pq_bloom_builder_finish(&c->bloom_builder, w->opts.bloom_fpp, w->opts.bloom_max_bytes, &w->blooms);
		if (len < 0 || tl_buf_failed(&w->blooms))
			return tl_error_nomem(err, "building a bloom filter for column \"%s\"", c->col->name);
		if (len == 0)
			continue; /* only nulls: nothing to look up */
		pq_column_meta *meta = &rg->columns[i].meta_data;
		meta->has_bloom_filter = meta->has_bloom_filter_length = true;
		meta->bloom_filter_offset = (int64_t)w->out->offset;
		meta->bloom_filter_length = (int32_t)len;
		if (write_out(w, w->blooms.data, w->blooms.len, err) < 0)
			return -1;
	}
	return 0;
}

static int flush_row_group(tl_pq_writer *w, tl_error *err)
{
	if (w->group_rows == 0)
		return 0;
	int ncolumns = w->schema->ncolumns;
	for (int i = 0; i < ncolumns; i++)
		if (close_page(w, &w->columns[i], err) < 0)
			return -1;

	if (w->nrow_groups == w->row_groups_cap) {
		if (w->row_groups_cap == INT32_MAX)
			return tl_error_set(err, TL_ERR_UNSUPPORTED, "too many row groups for one Parquet file");
		int cap = w->row_groups_cap ? w->row_groups_cap * 2 : 8;
		pq_row_group *grown = tl_realloc(w->row_groups, (size_t)cap * sizeof(pq_row_group));
		if (grown == NULL)
			return tl_error_nomem(err, "for a Parquet row group");
		w->row_groups = grown;
		w->row_groups_cap = cap;
	}
	pq_row_group *rg = &w->row_groups[w->nrow_groups];
	memset(rg, 0, sizeof(*rg));
	rg->ncolumns = ncolumns;
	rg->columns = tl_arena_alloc(&w->footer_arena, (size_t)ncolumns * sizeof(pq_column_chunk));
	if (rg->columns == NULL)
		return tl_error_nomem(err, "for a Parquet row group");
	memset(rg->columns, 0, (size_t)ncolumns * sizeof(pq_column_chunk));
	rg->num_rows = w->group_rows;
	rg->has_file_offset = true;
	rg->file_offset = (int64_t)w->out->offset;

	for (int i = 0; i < ncolumns; i++) {
		pq_column_chunk *chunk = &rg->columns[i];
		if (flush_column_chunk(w, &w->columns[i], chunk, err) < 0)
			return -1;
		rg->total_byte_size += chunk->meta_data.total_uncompressed_size;
		rg->total_compressed_size += chunk->meta_data.total_compressed_size;
	}
	if (write_bloom_filters(w, rg, err) < 0)
		return -1;
	for (int i = 0; i < ncolumns; i++)
		start_chunk(w, &w->columns[i]);
	rg->has_total_compressed_size = true;
	if (w->nrow_groups <= INT16_MAX) {
		rg->has_ordinal = true;
		rg->ordinal = (int16_t)w->nrow_groups;
	}
	w->nrow_groups++;
	w->group_rows = 0;
	return 0;
}

/* ------------------------------------------------------------ footer */

/*
 * Writes every chunk's ColumnIndex, then every OffsetIndex, and points the
 * chunks at where they landed.
 */
static int write_page_indexes(tl_pq_writer *w, tl_error *err)
{
	int64_t column_base = (int64_t)w->out->offset;
	if (write_out(w, w->column_indexes.data, w->column_indexes.len, err) < 0)
		return -1;
	int64_t offset_base = (int64_t)w->out->offset;
	if (write_out(w, w->offset_indexes.data, w->offset_indexes.len, err) < 0)
		return -1;
	for (int32_t g = 0; g < w->nrow_groups; g++) {
		for (int i = 0; i < w->row_groups[g].ncolumns; i++) {
			pq_column_chunk *chunk = &w->row_groups[g].columns[i];
			if (chunk->has_column_index)
				chunk->column_index_offset += column_base;
			if (chunk->has_offset_index)
				chunk->offset_index_offset += offset_base;
		}
	}
	return 0;
}

static int write_footer(tl_pq_writer *w, tl_error *err)
{
	if (write_page_indexes(w, err) < 0)
		return -1;
	tl_buf footer;
	tl_buf_init(&footer);
	int rc = pq_footer_encode(w->schema, w->rows_written, w->row_groups, w->nrow_groups, w->metadata,
	                          w->opts.nmetadata, w->created_by, &w->footer_arena, &footer);
	if (rc < 0)
		tl_error_nomem(err, "for a Parquet footer");
	else
		rc = write_out(w, footer.data, footer.len, err);
	tl_buf_free(&footer);
	return rc;
}

/* ------------------------------------------------------------ public API */

static int check_options(const tl_pq_writer_options *opts, int ncolumns, tl_error *err)
{
	if (opts->codec < TL_PQ_UNCOMPRESSED || opts->codec > TL_PQ_LZ4_RAW || !pq_codec_can_write(opts->codec))
		return tl_error_set(err, TL_ERR_UNSUPPORTED, "cannot write Parquet with codec %s (%d)",
		                    tl_pq_codec_name(opts->codec), (int)opts->codec);
	if (opts->row_group_rows <= 0 || opts->row_group_bytes <= 0)
		return tl_error_set(err, TL_ERR_INVALID, "row group limits must be positive (rows %lld, bytes %lld)",
		                    (long long)opts->row_group_rows, (long long)opts->row_group_bytes);
	if (opts->page_rows <= 0 || opts->page_rows > INT32_MAX || opts->page_bytes <= 0)
		return tl_error_set(err, TL_ERR_INVALID,
		                    "page limits must be positive and rows at most 2^31-1 (rows %lld, bytes %lld)",
		                    (long long)opts->page_rows, (long long)opts->page_bytes);
	if (opts->dictionary_bytes < 0)
		return tl_error_set(err, TL_ERR_INVALID, "the dictionary budget cannot be negative (%lld)",
		                    (long long)opts->dictionary_bytes);
	if (opts->nmetadata < 0 || (opts->nmetadata > 0 && opts->metadata == NULL))
		return tl_error_set(err, TL_ERR_INVALID, "key-value metadata count %d without entries", opts->nmetadata);
	for (int i = 0; i < opts->nmetadata; i++)
		if (opts->metadata[i].key == NULL)
			return tl_error_set(err, TL_ERR_INVALID, "key-value metadata entry %d has no key", i);
	if (opts->nbloom_columns < 0 || (opts->nbloom_columns > 0 && opts->bloom_columns == NULL))
		return tl_error_set(err, TL_ERR_INVALID, "bloom filter column count %d without columns", opts->nbloom_columns);
	for (int i = 0; i < opts->nbloom_columns; i++)
		if (opts->bloom_columns[i] < 0 || opts->bloom_columns[i] >= ncolumns)
			return tl_error_set(err, TL_ERR_INVALID, "bloom filter column %d is out of range (the schema has %d)",
			                    opts->bloom_columns[i], ncolumns);
	if (opts->nbloom_columns > 0 && !(opts->bloom_fpp > 0.0 && opts->bloom_fpp < 1.0))
		return tl_error_set(err, TL_ERR_INVALID, "the bloom filter false positive probability must be in (0, 1), not %g",
		                    opts->bloom_fpp);
	return 0;
}

tl_pq_writer *tl_pq_writer_open(tl_output *out, const tl_pq_schema *schema, const tl_pq_writer_options *opts,
                                tl_error *err)
{
	tl_pq_writer_options defaults;
	if (opts == NULL) {
		tl_pq_writer_options_init(&defaults);
		opts = &defaults;
	}
	if (tl_pq_schema_validate(schema, err) < 0 || check_options(opts, schema->ncolumns, err) < 0)
		return NULL;

	tl_pq_writer *w = tl_calloc(1, sizeof(*w));
	if (w == NULL) {
		tl_error_nomem(err, "opening a Parquet writer");
		return NULL;
	}
	w->out = out;
	w->opts = *opts;
	w->opts.nmetadata = 0; /* counts the copies made so far, for tl_pq_writer_free */
	tl_arena_init(&w->footer_arena, 0);
	tl_buf_init(&w->gather);
	tl_buf_init(&w->page);
	tl_buf_init(&w->compressed);
	tl_buf_init(&w->header);
	tl_buf_init(&w->column_indexes);
	tl_buf_init(&w->offset_indexes);
	tl_buf_init(&w->blooms);
	tl_arena_init(&w->index_scratch, 0);
	w->opts.bloom_columns = NULL;
	w->opts.nbloom_columns = 0;
	w->schema = tl_pq_schema_new();
	w->created_by = tl_strdup(opts->created_by ? opts->created_by : DEFAULT_CREATED_BY);
	w->metadata = tl_calloc((size_t)opts->nmetadata + 1, sizeof(tl_pq_kv));
	w->opts.metadata = w->metadata;
	w->opts.created_by = w->created_by;
	if (w->schema == NULL || w->created_by == NULL || w->metadata == NULL)
		goto nomem;
	for (int i = 0; i < schema->ncolumns; i++)
		if (tl_pq_schema_add(w->schema, &schema->columns[i]) < 0)
			goto nomem;
	for (int i = 0; i < opts->nmetadata; i++) {
		w->metadata[i].key = tl_strdup(opts->metadata[i].key);
		w->metadata[i].value = opts->metadata[i].value ? tl_strdup(opts->metadata[i].value) : NULL;
		w->opts.nmetadata = i + 1;
		if (w->metadata[i].key == NULL || (opts->metadata[i].value != NULL && w->metadata[i].value == NULL))
			goto nomem;
	}
	w->columns = tl_calloc((size_t)schema->ncolumns, sizeof(column_writer));
	if (w->columns == NULL)
		goto nomem;
	for (int i = 0; i < schema->ncolumns; i++)
		column_init(w, &w->columns[i], &w->schema->columns[i]);
	if (opts->nbloom_columns > 0) {
		w->bloom_columns = tl_malloc(sizeof(int) * (size_t)opts->nbloom_columns);
		if (w->bloom_columns == NULL)
			goto nomem;
		memcpy(w->bloom_columns, opts->bloom_columns, sizeof(int) * (size_t)opts->nbloom_columns);
		w->opts.bloom_columns = w->bloom_columns;
		w->opts.nbloom_columns = opts->nbloom_columns;
		for (int i = 0; i < opts->nbloom_columns; i++) {
			column_writer *c = &w->columns[opts->bloom_columns[i]];
			c->bloom = c->col->physical != TL_PQ_BOOLEAN;
		}
	}

	if (write_out(w, parquet_magic, sizeof(parquet_magic), err) < 0) {
		tl_pq_writer_free(w);
		return NULL;
	}
	return w;
nomem:
	tl_error_nomem(err, "opening a Parquet writer");
	tl_pq_writer_free(w);
	return NULL;
}

/* Whether the writer can take another call: not failed, not closed. */
static int check_usable(const tl_pq_writer *w, tl_error *err)
{
	if (w->failed)
		return repeat_failure(w, err);
	if (w->closed)
		return tl_error_set(err, TL_ERR_INVALID, "the Parquet writer is already closed");
	return 0;
}

/* Callers may pass no tl_error; the writer still needs one to remember its failure. */
static tl_error *error_or_local(tl_error *err, tl_error *local)
{
	if (err != NULL)
		return err;
	tl_error_clear(local);
	return local;
}

int tl_pq_writer_write(tl_pq_writer *w, const tl_pq_batch *batch, tl_error *err)
{
	tl_error local;
	err = error_or_local(err, &local);
	if (check_usable(w, err) < 0)
		return -1;
	if (batch->ncolumns != w->schema->ncolumns) {
		tl_error_set(err, TL_ERR_INVALID, "batch has %d columns, the schema %d", batch->ncolumns,
		             w->schema->ncolumns);
		return fail(w, err);
	}
	/* A capacity of 0 means the caller built the batch by hand and did not say. */
	if (batch->nrows < 0 || (batch->capacity > 0 && batch->nrows > batch->capacity)) {
		tl_error_set(err, TL_ERR_INVALID, "batch has %lld rows but room for %lld", (long long)batch->nrows,
		             (long long)batch->capacity);
		return fail(w, err);
	}

	int ncolumns = w->schema->ncolumns;
	int64_t row = 0;
	while (row < batch->nrows) {
		int64_t n = batch->nrows - row;
		if (n > PIECE_ROWS)
			n = PIECE_ROWS;
		if (n > w->opts.row_group_rows - w->group_rows)
			n = w->opts.row_group_rows - w->group_rows;
		if (tl_check_interrupt(err) < 0)
			return fail(w, err);
		for (int i = 0; i < ncolumns; i++)
			if (write_column_rows(w, &w->columns[i], &batch->columns[i], row, n, err) < 0)
				return fail(w, err);
		row += n;
		w->group_rows += n;
		w->rows_written += n;
		if (w->group_rows >= w->opts.row_group_rows || buffered_bytes(w) >= w->opts.row_group_bytes)
			if (flush_row_group(w, err) < 0)
				return fail(w, err);
	}
	return 0;
}

int tl_pq_writer_close(tl_pq_writer *w, tl_error *err)
{
	tl_error local;
	err = error_or_local(err, &local);
	if (check_usable(w, err) < 0)
		return -1;
	if (flush_row_group(w, err) < 0 || write_footer(w, err) < 0)
		return fail(w, err);
	w->closed = true;
	return 0;
}

void tl_pq_writer_free(tl_pq_writer *w)
{
	if (w == NULL)
		return;
	for (int i = 0; w->columns != NULL && i < w->schema->ncolumns; i++)
		column_free(&w->columns[i]);
	tl_free(w->columns);
	for (int i = 0; i < w->opts.nmetadata; i++) {
		tl_free((char *)w->metadata[i].key);
		tl_free((char *)w->metadata[i].value);
	}
	tl_free(w->metadata);
	tl_free(w->created_by);
	tl_free(w->row_groups);
	tl_arena_free(&w->footer_arena);
	tl_buf_free(&w->gather);
	tl_buf_free(&w->page);
	tl_buf_free(&w->compressed);
	tl_buf_free(&w->header);
	tl_buf_free(&w->column_indexes);
	tl_buf_free(&w->offset_indexes);
	tl_buf_free(&w->blooms);
	tl_arena_free(&w->index_scratch);
	tl_free(w->bloom_columns);
	tl_pq_schema_free(w->schema);
	tl_free(w);
}

int64_t tl_pq_writer_rows_written(const tl_pq_writer *w)
{
	return w->rows_written;
}
