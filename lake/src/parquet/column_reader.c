/*
 * column_reader.c: page-by-page decoding of one Parquet column chunk.
 *
 * A chunk is a dictionary page (optional) followed by data pages (v1 or v2),
 * possibly with index pages we skip. Pages are found by walking the chunk
 * header after header, or, when only some were fetched, by the slots the
 * chunk's OffsetIndex gave (each fetched page's header still says what it
 * is). For each batch we decode the rows' definition levels, then exactly
 * as many values as there are non-null rows, densely at the start of the
 * batch slot range, and finally spread them backwards over their rows so
 * no scratch copy is needed.
 *
 * The dictionary page is only noted when met, and decompressed, checked
 * and decoded when the first dictionary-encoded page is started: writers
 * fall back to PLAIN once a chunk's dictionary fills, so the pages a
 * point lookup decodes often need none, and a dictionary is typically the
 * largest page of its chunk.
 *
 * Everything read from the file is checked before use; see the limits in
 * column_reader.h.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "parquet/column_reader.h"
#include "parquet/compress.h"
#include "parquet/metadata.h"

struct pq_page_buffer {
	pq_page_buffer *next;
	size_t capacity;
	_Alignas(16) uint8_t data[];
};

static int corrupt(pq_column_reader *cr, tl_error *err, const char *what)
{
	return tl_error_set(err, TL_ERR_CORRUPT, "%s: column \"%s\": %s", cr->file_name, cr->column->name, what);
}

static void free_buffer_list(pq_page_buffer *b)
{
	while (b) {
		pq_page_buffer *next = b->next;
		tl_free(b);
		b = next;
	}
}

/* A buffer of at least `size` bytes, reusing the spare one when it fits. */
static pq_page_buffer *take_buffer(pq_column_reader *cr, size_t size)
{
	pq_page_buffer *b = cr->spare;
	if (b && b->capacity >= size) {
		cr->spare = b->next;
		b->next = NULL;
		return b;
	}
	b = tl_malloc(sizeof(*b) + size);
	if (b == NULL)
		return NULL;
	b->next = NULL;
	b->capacity = size;
	return b;
}

static void retire_page(pq_column_reader *cr)
{
	if (cr->page) {
		cr->page->next = cr->retired;
		cr->retired = cr->page;
		cr->page = NULL;
	}
	if (cr->bytes_decoder_active) {
		pq_bytes_decoder_free(&cr->bytes_decoder);
		cr->bytes_decoder_active = false;
	}
}

static int value_width_of(const tl_pq_column *col)
{
	switch (col->physical) {
	case TL_PQ_BOOLEAN: return 1;
	case TL_PQ_INT32:
	case TL_PQ_FLOAT: return 4;
	case TL_PQ_INT64:
	case TL_PQ_INT96:
	case TL_PQ_DOUBLE: return 8;
	case TL_PQ_BYTE_ARRAY:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY: return (int)sizeof(tl_bytes);
	}
	return 8;
}

/* Bytes one value takes in a PLAIN-encoded page (0 for BYTE_ARRAY, which varies). */
static int plain_width_of(const tl_pq_column *col)
{
	switch (col->physical) {
	case TL_PQ_INT96: return 12;
	case TL_PQ_FIXED_LEN_BYTE_ARRAY: return col->type_length;
	case TL_PQ_BYTE_ARRAY: return 0;
	default: return value_width_of(col);
	}
}

void pq_column_reader_init(pq_column_reader *cr, const tl_pq_column *column, const char *file_name,
                           int row_group, int64_t chunk_offset, tl_pq_codec codec, const uint8_t *chunk,
                           size_t chunk_len, int64_t rows)
{
	memset(cr, 0, sizeof(*cr));
	cr->column = column;
	cr->file_name = file_name;
	cr->row_group = row_group;
	cr->chunk_offset = chunk_offset;
	cr->codec = codec;
	cr->max_definition = column->required ? 0 : 1;
	cr->value_width = value_width_of(column);
	cr->chunk = chunk;
	cr->chunk_len = chunk_len;
	cr->rows_expected = rows;
}

void pq_column_reader_use_pages(pq_column_reader *cr, const pq_page_slot *slots, int nslots,
                                const uint8_t *dictionary, size_t dictionary_len, int64_t dictionary_offset)
{
	cr->slots = slots;
	cr->nslots = nslots;
	cr->next_slot = 0;
	/* Whatever precedes the first data page (a dictionary page) is page 0 in messages. */
	cr->pages_seen = nslots > 0 && slots[0].offset > cr->chunk_offset ? 1 : 0;
	cr->pending_dictionary = dictionary;
	cr->pending_dictionary_room = dictionary != NULL ? dictionary_len : 0;
	cr->pending_dictionary_offset = dictionary_offset;
	cr->pending_dictionary_number = 0;
}

void pq_column_reader_free(pq_column_reader *cr)
{
	retire_page(cr);
	free_buffer_list(cr->retired);
	free_buffer_list(cr->spare);
	tl_free(cr->dictionary_page);
	tl_free(cr->dictionary_values);
	tl_free(cr->dictionary_bytes);
	tl_free(cr->scratch_u32);
	tl_free(cr->scratch_bytes);
	memset(cr, 0, sizeof(*cr));
}

void pq_column_reader_begin_batch(pq_column_reader *cr)
{
	/* Keep one retired buffer as the spare; the rest go back to malloc. */
	if (cr->retired) {
		free_buffer_list(cr->spare);
		cr->spare = cr->retired;
		free_buffer_list(cr->spare->next);
		cr->spare->next = NULL;
		cr->retired = NULL;
	}
}

int64_t pq_int96_to_nanos(const uint8_t bytes[12])
{
	uint64_t nanos_of_day;
	uint32_t julian_day;
	memcpy(&nanos_of_day, bytes, 8);
	memcpy(&julian_day, bytes + 8, 4);
	/* Julian day 2440588 is 1970-01-01. Unsigned arithmetic: hostile values wrap, never trap. */
	uint64_t days = (uint64_t)((int64_t)julian_day - 2440588);
	return (int64_t)(days * UINT64_C(86400000000000) + nanos_of_day);
}

static int ensure_scratch(pq_column_reader *cr, int64_t n, tl_error *err)
{
	if (n > cr->scratch_capacity) {
		tl_free(cr->scratch_u32);
		cr->scratch_capacity = 0;
		cr->scratch_u32 = tl_malloc((size_t)n * sizeof(uint32_t));
		if (cr->scratch_u32 == NULL)
			return tl_error_nomem(err, "decoding a Parquet page");
		cr->scratch_capacity = n;
	}
	return 0;
}

/* NULL with err set when out of memory (never for n = 0: callers take NULL as the failure). */
static uint8_t *ensure_scratch_bytes(pq_column_reader *cr, size_t n, tl_error *err)
{
	if (n == 0)
		n = 1;
	if (n > cr->scratch_bytes_capacity) {
		tl_free(cr->scratch_bytes);
		cr->scratch_bytes_capacity = 0;
		cr->scratch_bytes = tl_malloc(n);
		if (cr->scratch_bytes == NULL) {
			tl_error_nomem(err, "decoding a Parquet page");
			return NULL;
		}
		cr->scratch_bytes_capacity = n;
	}
	return cr->scratch_bytes;
}

/*
 * Makes a page body readable uncompressed. Uncompressed bodies are used in
 * place (the chunk outlives the batch); others are decompressed into a
 * buffer that the caller owns.
 */
static int page_body(pq_column_reader *cr, const uint8_t *body, size_t compressed_len, size_t uncompressed_len,
                     bool compressed, pq_page_buffer **buffer, const uint8_t **out, tl_error *err)
{
	*buffer = NULL;
	if (!compressed || cr->codec == TL_PQ_UNCOMPRESSED) {
		if (compressed_len != uncompressed_len)
			return corrupt(cr, err, "an uncompressed page's stored and uncompressed sizes differ");
		*out = body;
		return 0;
	}
	pq_page_buffer *b = take_buffer(cr, uncompressed_len);
	if (b == NULL)
		return tl_error_nomem(err, "decompressing a Parquet page");
	if (pq_decompress(cr->codec, body, compressed_len, b->data, uncompressed_len, err) < 0) {
		tl_free(b);
		tl_error_prefix(err, "%s: column \"%s\"", cr->file_name, cr->column->name);
		return -1;
	}
	*buffer = b;
	*out = b->data;
	return 0;
}

static int read_dictionary(pq_column_reader *cr, const pq_page_header *h, const uint8_t *body, tl_error *err)
{
	const tl_pq_column *col = cr->column;
	if (!h->has_dictionary_page_header)
		return corrupt(cr, err, "dictionary page without a dictionary page header");
	const pq_dictionary_page_header *dh = &h->dictionary_page_header;
	if (dh->encoding != PQ_ENC_PLAIN && dh->encoding != PQ_ENC_PLAIN_DICTIONARY)
		return tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: column \"%s\": dictionary page encoding %s is not supported",
		                    cr->file_name, col->name, tl_pq_encoding_name(dh->encoding));
	if (col->physical == TL_PQ_BOOLEAN)
		return corrupt(cr, err, "a BOOLEAN column cannot have a dictionary");

	size_t len = (size_t)h->uncompressed_page_size;
	const uint8_t *data;
	pq_page_buffer *buffer;
	if (page_body(cr, body, (size_t)h->compressed_page_size, len, true, &buffer, &data, err) < 0)
		return -1;
	cr->dictionary_page = buffer;

	int64_t n = dh->num_values;
	int width = plain_width_of(col);
	/* Every value takes at least its width (4 length bytes for BYTE_ARRAY),
	 * so the page size bounds the count before we allocate by it. */
	int64_t min_bytes = width > 0 ? width : 4;
	if (n < 0 || (uint64_t)n * (uint64_t)min_bytes > len)
		return corrupt(cr, err, "dictionary page value count does not fit the page");

	int64_t consumed;
	if (col->physical == TL_PQ_BYTE_ARRAY || col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY) {
		cr->dictionary_bytes = tl_malloc((size_t)n * sizeof(tl_bytes));
		if (cr->dictionary_bytes == NULL)
			return tl_error_nomem(err, "reading a Parquet dictionary page");
		consumed = col->physical == TL_PQ_BYTE_ARRAY
			? pq_plain_decode_byte_array(data, len, cr->dictionary_bytes, n, err)
			: pq_plain_decode_flba(data, len, col->type_length, cr->dictionary_bytes, n, err);
	} else if (col->physical == TL_PQ_INT96) {
		uint8_t *raw = ensure_scratch_bytes(cr, (size_t)n * 12, err);
		if (raw == NULL)
			return -1;
		consumed = pq_plain_decode_fixed(data, len, 12, raw, n, err);
		if (consumed >= 0) {
			int64_t *values = tl_malloc((size_t)n * sizeof(int64_t));
			if (values == NULL)
				return tl_error_nomem(err, "reading a Parquet dictionary page");
			for (int64_t i = 0; i < n; i++)
				values[i] = pq_int96_to_nanos(raw + 12 * i);
			cr->dictionary_values = values;
		}
	} else {
		cr->dictionary_values = tl_malloc((size_t)n * (size_t)width);
		if (cr->dictionary_values == NULL)
			return tl_error_nomem(err, "reading a Parquet dictionary page");
		consumed = pq_plain_decode_fixed(data, len, width, cr->dictionary_values, n, err);
	}
	if (consumed < 0) {
		tl_error_prefix(err, "%s: column \"%s\": dictionary page", cr->file_name, col->name);
		return -1;
	}
	cr->dictionary_count = n;
	cr->has_dictionary = true;
	return 0;
}

static bool encoding_fits(int encoding, tl_pq_physical t)
{
	switch (encoding) {
	case PQ_ENC_PLAIN: return true;
	case PQ_ENC_PLAIN_DICTIONARY:
	case PQ_ENC_RLE_DICTIONARY: return t != TL_PQ_BOOLEAN;
	case PQ_ENC_RLE: return t == TL_PQ_BOOLEAN;
	case PQ_ENC_DELTA_BINARY_PACKED: return t == TL_PQ_INT32 || t == TL_PQ_INT64;
	case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY: return t == TL_PQ_BYTE_ARRAY;
	case PQ_ENC_DELTA_BYTE_ARRAY: return t == TL_PQ_BYTE_ARRAY || t == TL_PQ_FIXED_LEN_BYTE_ARRAY;
	case PQ_ENC_BYTE_STREAM_SPLIT:
		return t == TL_PQ_FLOAT || t == TL_PQ_DOUBLE || t == TL_PQ_INT32 || t == TL_PQ_INT64 ||
		       t == TL_PQ_FIXED_LEN_BYTE_ARRAY;
	}
	return false;
}

static int load_dictionary(pq_column_reader *cr, tl_error *err);

/* Prepares the decoder for the page's values section. */
static int start_values(pq_column_reader *cr, int64_t max_values, tl_error *err)
{
	const tl_pq_column *col = cr->column;
	cr->values_pos = 0;
	cr->bool_bit = 0;
	cr->split_position = 0;
	if (!encoding_fits(cr->encoding, col->physical))
		return tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: column \"%s\": encoding %s is not supported for %s",
		                    cr->file_name, col->name, tl_pq_encoding_name(cr->encoding),
		                    tl_pq_physical_name(col->physical));

	switch (cr->encoding) {
	case PQ_ENC_PLAIN_DICTIONARY:
	case PQ_ENC_RLE_DICTIONARY: {
		if (!cr->has_dictionary && cr->pending_dictionary != NULL && load_dictionary(cr, err) < 0)
			return -1;
		if (!cr->has_dictionary)
			return corrupt(cr, err, "dictionary-encoded page without a dictionary page");
		if (cr->values_len < 1) {
			if (max_values == 0)
				return 0;
			return corrupt(cr, err, "dictionary-encoded page has no index bit width");
		}
		int bit_width = cr->values[0];
		if (bit_width > 32)
			return corrupt(cr, err, "dictionary index bit width is over 32");
		pq_rle_decoder_init(&cr->index_decoder, cr->values + 1, cr->values_len - 1, bit_width);
		return 0;
	}
	case PQ_ENC_RLE: {
		uint32_t len;
		if (cr->values_len < 4)
			return corrupt(cr, err, "RLE boolean page is shorter than its length prefix");
		memcpy(&len, cr->values, 4);
		if (len > cr->values_len - 4)
			return corrupt(cr, err, "RLE boolean run length is past the end of the page");
		pq_rle_decoder_init(&cr->index_decoder, cr->values + 4, len, 1);
		return 0;
	}
	case PQ_ENC_DELTA_BINARY_PACKED:
		if (pq_delta_decoder_init(&cr->delta_decoder, cr->values, cr->values_len, err) < 0) {
			tl_error_prefix(err, "%s: column \"%s\"", cr->file_name, col->name);
			return -1;
		}
		return 0;
	case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
	case PQ_ENC_DELTA_BYTE_ARRAY:
		if (pq_bytes_decoder_init(&cr->bytes_decoder, cr->encoding, cr->values, cr->values_len, max_values, err) < 0) {
			tl_error_prefix(err, "%s: column \"%s\"", cr->file_name, col->name);
			return -1;
		}
		cr->bytes_decoder_active = true;
		return 0;
	case PQ_ENC_BYTE_STREAM_SPLIT: {
		size_t width = (size_t)plain_width_of(col);
		if (cr->values_len % width != 0)
			return corrupt(cr, err, "BYTE_STREAM_SPLIT page size is not a multiple of the value width");
		cr->split_total = (int64_t)(cr->values_len / width);
		return 0;
	}
	default:
		return 0;
	}
}

static int start_data_page_v1(pq_column_reader *cr, const pq_page_header *h, const uint8_t *body, tl_error *err)
{
	if (!h->has_data_page_header)
		return corrupt(cr, err, "data page without a data page header");
	const pq_data_page_header *dp = &h->data_page_header;
	const uint8_t *data;
	size_t len = (size_t)h->uncompressed_page_size;
	if (page_body(cr, body, (size_t)h->compressed_page_size, len, true, &cr->page, &data, err) < 0)
		return -1;
	if (cr->max_definition > 0) {
		if (dp->definition_level_encoding != PQ_ENC_RLE)
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "%s: column \"%s\": definition level encoding %s is not supported",
			                    cr->file_name, cr->column->name,
			                    tl_pq_encoding_name(dp->definition_level_encoding));
		uint32_t levels_len;
		if (len < 4)
			return corrupt(cr, err, "data page is too short for its definition levels");
		memcpy(&levels_len, data, 4);
		if (levels_len > len - 4)
			return corrupt(cr, err, "definition levels run past the end of the data page");
		cr->levels = data + 4;
		cr->levels_len = levels_len;
		data += 4 + levels_len;
		len -= 4 + (size_t)levels_len;
	}
	cr->values = data;
	cr->values_len = len;
	cr->encoding = dp->encoding;
	cr->page_values_left = dp->num_values;
	return start_values(cr, dp->num_values, err);
}

static int start_data_page_v2(pq_column_reader *cr, const pq_page_header *h, const uint8_t *body, tl_error *err)
{
	if (!h->has_data_page_header_v2)
		return corrupt(cr, err, "data page v2 without its header");
	const pq_data_page_header_v2 *dp = &h->data_page_header_v2;
	int64_t rep_len = dp->repetition_levels_byte_length, def_len = dp->definition_levels_byte_length;
	if (rep_len < 0 || def_len < 0 || rep_len + def_len > h->compressed_page_size ||
	    rep_len + def_len > h->uncompressed_page_size)
		return corrupt(cr, err, "data page v2 level lengths do not fit the page");
	if (dp->num_nulls < 0 || dp->num_nulls > dp->num_values)
		return corrupt(cr, err, "data page v2 null count is out of range");
	if (dp->num_nulls > 0 && cr->max_definition == 0)
		return corrupt(cr, err, "a required column's page has nulls");

	/* Levels are never compressed in v2 pages; flat columns have no repetition levels to read. */
	cr->levels = body + rep_len;
	cr->levels_len = (size_t)def_len;
	const uint8_t *values;
	size_t stored = (size_t)(h->compressed_page_size - rep_len - def_len);
	size_t values_len = (size_t)(h->uncompressed_page_size - rep_len - def_len);
	if (page_body(cr, body + rep_len + def_len, stored, values_len, dp->is_compressed, &cr->page, &values, err) < 0)
		return -1;
	cr->values = values;
	cr->values_len = values_len;
	cr->encoding = dp->encoding;
	cr->page_values_left = dp->num_values;
	return start_values(cr, dp->num_values - dp->num_nulls, err);
}

/*
 * A page that carries a CRC must match it: the CRC-32 of the page's bytes as
 * stored after its header (compressed, and for v2 pages the uncompressed
 * levels too), so one flipped bit anywhere in them is refused instead of
 * decoding into a different value. Pages without a CRC are read as they are.
 * `at` is the page's offset in the file and `number` its place in the chunk.
 */
static int check_crc(pq_column_reader *cr, const pq_page_header *h, const uint8_t *body, int64_t at, int number,
                     tl_error *err)
{
	if (!h->has_crc)
		return 0;
	uint32_t computed = pq_crc32(body, (size_t)h->compressed_page_size);
	if (computed == (uint32_t)h->crc)
		return 0;
	return tl_error_set(err, TL_ERR_CORRUPT,
	                    "%s: row group %d, column \"%s\", page %d at byte %lld: page CRC does not match its contents "
	                    "(stored 0x%08x, computed 0x%08x)",
	                    cr->file_name, cr->row_group, cr->column->name, number, (long long)at, (uint32_t)h->crc,
	                    computed);
}

/*
 * Decodes the page header at `at` (`room` bytes from there may belong to
 * the page) and checks the page fits: *body is set past the header.
 */
static int page_header(pq_column_reader *cr, const uint8_t *at, size_t room, pq_page_header *h,
                       const uint8_t **body, tl_error *err)
{
	size_t header_len;
	if (pq_page_header_decode(at, room, h, &header_len, err) < 0) {
		tl_error_prefix(err, "%s: column \"%s\": page header", cr->file_name, cr->column->name);
		return -1;
	}
	if (h->compressed_page_size < 0 || (size_t)h->compressed_page_size > room - header_len)
		return corrupt(cr, err, "page is larger than the rest of its column chunk");
	if (h->uncompressed_page_size < 0 || h->uncompressed_page_size > PQ_MAX_PAGE_BYTES)
		return corrupt(cr, err, "page's uncompressed size is out of range");
	*body = at + header_len;
	return 0;
}

/* Checks and decodes the dictionary page noted when it was met, now that a page needs it. */
static int load_dictionary(pq_column_reader *cr, tl_error *err)
{
	const uint8_t *at = cr->pending_dictionary, *body;
	cr->pending_dictionary = NULL;
	pq_page_header h;
	if (page_header(cr, at, cr->pending_dictionary_room, &h, &body, err) < 0)
		return -1;
	if (h.type != PQ_PAGE_DICTIONARY)
		return corrupt(cr, err, "the page before the first data page is not a dictionary page");
	if (check_crc(cr, &h, body, cr->pending_dictionary_offset, cr->pending_dictionary_number, err) < 0)
		return -1;
	return read_dictionary(cr, &h, body, err);
}

/* Whether h is a data page (v1 or v2), with *values its value count. */
static bool data_page_values(const pq_page_header *h, int64_t *values)
{
	switch (h->type) {
	case PQ_PAGE_DATA:
		*values = h->has_data_page_header ? h->data_page_header.num_values : 0;
		return true;
	case PQ_PAGE_DATA_V2:
		*values = h->has_data_page_header_v2 ? h->data_page_header_v2.num_values : 0;
		return true;
	default:
		return false;
	}
}

/* Checks and starts the data page whose header is h and body `body` (at `at` in the file). */
static int start_page(pq_column_reader *cr, const pq_page_header *h, const uint8_t *body, int64_t at, tl_error *err)
{
	cr->pages_read++;
	if (check_crc(cr, h, body, at, cr->pages_seen - 1, err) < 0)
		return -1;
	int rc = h->type == PQ_PAGE_DATA ? start_data_page_v1(cr, h, body, err) : start_data_page_v2(cr, h, body, err);
	if (rc < 0)
		return -1;
	pq_rle_decoder_init(&cr->definition_decoder, cr->levels, cr->levels_len, 1);
	return 0;
}

static int chunk_ends_early(pq_column_reader *cr, tl_error *err)
{
	char what[160];
	snprintf(what, sizeof(what), "column chunk ends after %lld of %lld rows", (long long)cr->rows_read,
	         (long long)cr->rows_expected);
	return corrupt(cr, err, what);
}

/* next_data_page over the slots of the chunk's OffsetIndex: skipped pages are never looked at. */
static int next_slot_page(pq_column_reader *cr, int64_t *skip, tl_error *err)
{
	for (;;) {
		if (skip != NULL && *skip == 0)
			return 0;
		if (cr->next_slot >= cr->nslots)
			return chunk_ends_early(cr, err);
		const pq_page_slot *slot = &cr->slots[cr->next_slot++];
		int64_t end = cr->next_slot < cr->nslots ? cr->slots[cr->next_slot].first_row : cr->rows_expected;
		int64_t values = end - slot->first_row;
		cr->pages_seen++;
		if (slot->first_row != cr->rows_read || values <= 0 || values > PQ_MAX_PAGE_VALUES)
			return corrupt(cr, err, "the page index places a page at a row it does not start at");
		if (skip != NULL && values <= *skip) {
			*skip -= values;
			cr->rows_read += values;
			cr->pages_skipped++;
			continue;
		}
		if (slot->bytes == NULL)
			return tl_error_set(err, TL_ERR_INVALID, "%s: column \"%s\": page %d (rows %lld to %lld) was not fetched",
			                    cr->file_name, cr->column->name, cr->pages_seen - 1, (long long)slot->first_row,
			                    (long long)end);
		pq_page_header h;
		const uint8_t *body;
		if (page_header(cr, slot->bytes, (size_t)slot->size, &h, &body, err) < 0)
			return -1;
		/* The fetch checked this; it is what keeps rows at their positions. */
		int64_t stated;
		if (!data_page_values(&h, &stated) || stated != values)
			return corrupt(cr, err, "a page holds another number of rows than its page index says");
		if (start_page(cr, &h, body, slot->offset, err) < 0)
			return -1;
		if (cr->page_values_left > 0)
			return 0;
		retire_page(cr);
	}
}

/*
 * Moves to the next data page, noting any dictionary page on the way.
 * With `skip`, data pages holding no more rows than *skip are passed over
 * without being checked or decompressed, their rows counted off *skip; it
 * returns with no page started once *skip reaches 0.
 */
static int next_data_page(pq_column_reader *cr, int64_t *skip, tl_error *err)
{
	retire_page(cr);
	if (cr->slots != NULL)
		return next_slot_page(cr, skip, err);
	for (;;) {
		if (skip != NULL && *skip == 0)
			return 0;
		if (cr->chunk_pos >= cr->chunk_len)
			return chunk_ends_early(cr, err);
		pq_page_header h;
		const uint8_t *at = cr->chunk + cr->chunk_pos, *body;
		int64_t offset = cr->chunk_offset + (int64_t)cr->chunk_pos;
		cr->pages_seen++;
		if (page_header(cr, at, cr->chunk_len - cr->chunk_pos, &h, &body, err) < 0)
			return -1;
		cr->chunk_pos = (size_t)(body - cr->chunk) + (size_t)h.compressed_page_size;

		if (h.type == PQ_PAGE_DICTIONARY) {
			if (cr->has_dictionary || cr->pending_dictionary != NULL)
				return corrupt(cr, err, "a second dictionary page in one column chunk");
			if (cr->rows_read > 0 || cr->page_values_left > 0)
				return corrupt(cr, err, "dictionary page after data pages");
			cr->pending_dictionary = at;
			cr->pending_dictionary_room = cr->chunk_len - (size_t)(at - cr->chunk);
			cr->pending_dictionary_offset = offset;
			cr->pending_dictionary_number = cr->pages_seen - 1;
			continue;
		}
		int64_t values;
		if (!data_page_values(&h, &values))
			continue; /* index pages and kinds we do not know carry no rows */
		if (values < 0 || values > PQ_MAX_PAGE_VALUES)
			return corrupt(cr, err, "page value count is out of range");
		if (values > cr->rows_expected - cr->rows_read)
			return corrupt(cr, err, "page holds more values than its row group has rows left");
		if (skip != NULL && values <= *skip) {
			*skip -= values;
			cr->rows_read += values;
			cr->pages_skipped++;
			continue;
		}
		if (start_page(cr, &h, body, offset, err) < 0)
			return -1;
		if (cr->page_values_left > 0)
			return 0;
		retire_page(cr);
	}
}

/* Copies views of bytes that die with the decoder into the batch's arena. */
static int own_bytes(tl_bytes *values, int64_t n, tl_arena *arena, tl_error *err)
{
	for (int64_t i = 0; i < n; i++) {
		values[i] = tl_arena_copy(arena, values[i].ptr, values[i].len);
		if (values[i].ptr == NULL)
			return tl_error_nomem(err, "copying Parquet byte-array values");
	}
	return 0;
}

static int gather_dictionary(pq_column_reader *cr, uint8_t *dst, int64_t k, tl_error *err)
{
	if (ensure_scratch(cr, k, err) < 0)
		return -1;
	uint32_t *idx = cr->scratch_u32;
	int64_t got = pq_rle_decode(&cr->index_decoder, idx, k, err);
	if (got < 0) {
		tl_error_prefix(err, "%s: column \"%s\": dictionary indexes", cr->file_name, cr->column->name);
		return -1;
	}
	if (got < k)
		return corrupt(cr, err, "dictionary indexes end before the page's values do");
	uint32_t count = (uint32_t)cr->dictionary_count;
	for (int64_t i = 0; i < k; i++)
		if (idx[i] >= count)
			return corrupt(cr, err, "dictionary index is past the end of the dictionary");

	switch (cr->value_width) {
	case 4: {
		const uint32_t *dict = cr->dictionary_values;
		uint32_t *out = (uint32_t *)dst;
		for (int64_t i = 0; i < k; i++)
			out[i] = dict[idx[i]];
		break;
	}
	case 8: {
		const uint64_t *dict = cr->dictionary_values;
		uint64_t *out = (uint64_t *)dst;
		for (int64_t i = 0; i < k; i++)
			out[i] = dict[idx[i]];
		break;
	}
	default: {
		const tl_bytes *dict = cr->dictionary_bytes;
		tl_bytes *out = (tl_bytes *)dst;
		for (int64_t i = 0; i < k; i++)
			out[i] = dict[idx[i]];
		break;
	}
	}
	return 0;
}

static int decode_plain(pq_column_reader *cr, uint8_t *dst, int64_t k, tl_error *err)
{
	const tl_pq_column *col = cr->column;
	const uint8_t *p = cr->values + cr->values_pos;
	size_t left = cr->values_len - cr->values_pos;
	int64_t consumed;
	switch (col->physical) {
	case TL_PQ_BOOLEAN:
		if (pq_plain_decode_bool(cr->values, cr->values_len, cr->bool_bit, dst, k, err) < 0)
			return -1;
		cr->bool_bit += (uint64_t)k;
		return 0;
	case TL_PQ_INT96: {
		uint8_t *raw = ensure_scratch_bytes(cr, (size_t)k * 12, err);
		if (raw == NULL)
			return -1;
		consumed = pq_plain_decode_fixed(p, left, 12, raw, k, err);
		if (consumed >= 0) {
			int64_t *out = (int64_t *)dst;
			for (int64_t i = 0; i < k; i++)
				out[i] = pq_int96_to_nanos(raw + 12 * i);
		}
		break;
	}
	case TL_PQ_BYTE_ARRAY:
		consumed = pq_plain_decode_byte_array(p, left, (tl_bytes *)dst, k, err);
		break;
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
		consumed = pq_plain_decode_flba(p, left, col->type_length, (tl_bytes *)dst, k, err);
		break;
	default:
		consumed = pq_plain_decode_fixed(p, left, cr->value_width, dst, k, err);
		break;
	}
	if (consumed < 0)
		return -1;
	cr->values_pos += (size_t)consumed;
	return 0;
}

static int decode_byte_stream_split(pq_column_reader *cr, uint8_t *dst, int64_t k, tl_arena *arena, tl_error *err)
{
	const tl_pq_column *col = cr->column;
	if (k > cr->split_total - cr->split_position)
		return corrupt(cr, err, "BYTE_STREAM_SPLIT page holds fewer values than its rows need");
	if (col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY) {
		int width = col->type_length;
		uint8_t *raw = tl_arena_alloc(arena, (size_t)k * (size_t)width);
		if (raw == NULL)
			return tl_error_nomem(err, "decoding BYTE_STREAM_SPLIT values");
		if (pq_byte_stream_split_decode(cr->values, cr->values_len, width, raw, cr->split_position, k,
		                                cr->split_total, err) < 0)
			return -1;
		tl_bytes *out = (tl_bytes *)dst;
		for (int64_t i = 0; i < k; i++) {
			out[i].ptr = raw + i * width;
			out[i].len = (uint32_t)width;
		}
	} else if (pq_byte_stream_split_decode(cr->values, cr->values_len, cr->value_width, dst, cr->split_position, k,
	                                       cr->split_total, err) < 0) {
		return -1;
	}
	cr->split_position += k;
	return 0;
}

/* Decodes k non-null values densely into dst. */
static int decode_values(pq_column_reader *cr, uint8_t *dst, int64_t k, tl_arena *arena, tl_error *err)
{
	const tl_pq_column *col = cr->column;
	int64_t got;
	int rc = 0;
	switch (cr->encoding) {
	case PQ_ENC_PLAIN:
		rc = decode_plain(cr, dst, k, err);
		break;
	case PQ_ENC_PLAIN_DICTIONARY:
	case PQ_ENC_RLE_DICTIONARY:
		return gather_dictionary(cr, dst, k, err);
	case PQ_ENC_RLE:
		if (ensure_scratch(cr, k, err) < 0)
			return -1;
		got = pq_rle_decode(&cr->index_decoder, cr->scratch_u32, k, err);
		if (got < 0)
			rc = -1;
		else if (got < k)
			return corrupt(cr, err, "RLE booleans end before the page's values do");
		else
			for (int64_t i = 0; i < k; i++)
				dst[i] = (uint8_t)(cr->scratch_u32[i] & 1);
		break;
	case PQ_ENC_DELTA_BINARY_PACKED:
		got = col->physical == TL_PQ_INT32 ? pq_delta_decode_i32(&cr->delta_decoder, (int32_t *)dst, k, err)
		                                   : pq_delta_decode_i64(&cr->delta_decoder, (int64_t *)dst, k, err);
		if (got < 0)
			rc = -1;
		else if (got < k)
			return corrupt(cr, err, "DELTA_BINARY_PACKED values end before the page's rows do");
		break;
	case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
	case PQ_ENC_DELTA_BYTE_ARRAY:
		got = pq_bytes_decode(&cr->bytes_decoder, (tl_bytes *)dst, k, err);
		if (got < 0) {
			rc = -1;
			break;
		}
		if (got < k)
			return corrupt(cr, err, "byte-array values end before the page's rows do");
		if (col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY) {
			const tl_bytes *v = (const tl_bytes *)dst;
			for (int64_t i = 0; i < k; i++)
				if (v[i].len != (uint32_t)col->type_length)
					return corrupt(cr, err, "a fixed-length value has the wrong length");
		}
		if (cr->encoding == PQ_ENC_DELTA_BYTE_ARRAY && own_bytes((tl_bytes *)dst, k, arena, err) < 0)
			return -1;
		break;
	case PQ_ENC_BYTE_STREAM_SPLIT:
		return decode_byte_stream_split(cr, dst, k, arena, err);
	}
	if (rc < 0)
		tl_error_prefix(err, "%s: column \"%s\"", cr->file_name, cr->column->name);
	return rc;
}

/*
 * Moves k dense values at the start of base[0..m) to the rows marked valid,
 * walking backwards so nothing is overwritten before it moves. Null slots
 * are zeroed, so a byte-array view there is empty rather than dangling.
 */
#define SPREAD(type)                                                     \
	do {                                                                 \
		type *v = (type *)base;                                          \
		int64_t src = k - 1;                                             \
		for (int64_t i = m - 1; i >= 0 && src < i; i--) {              \
			if (valid[i])                                                \
				v[i] = v[src--];                                         \
			else                                                         \
				memset(&v[i], 0, sizeof(type));                          \
		}                                                                \
	} while (0)

static void spread(uint8_t *base, int width, const uint8_t *valid, int64_t k, int64_t m)
{
	switch (width) {
	case 1: SPREAD(uint8_t); break;
	case 4: SPREAD(uint32_t); break;
	case 8: SPREAD(uint64_t); break;
	default: SPREAD(tl_bytes); break;
	}
}

/* Decodes m definition levels into valid[] (NULL: only counted); returns the number of non-null rows or -1. */
static int64_t read_definitions(pq_column_reader *cr, uint8_t *valid, int64_t m, tl_error *err)
{
	if (ensure_scratch(cr, m, err) < 0)
		return -1;
	uint32_t *levels = cr->scratch_u32;
	int64_t got = pq_rle_decode(&cr->definition_decoder, levels, m, err);
	if (got < 0) {
		tl_error_prefix(err, "%s: column \"%s\": definition levels", cr->file_name, cr->column->name);
		return -1;
	}
	if (got < m)
		return corrupt(cr, err, "definition levels end before the page's values do");
	int64_t present = 0;
	uint32_t bad = 0;
	if (valid != NULL) {
		for (int64_t i = 0; i < m; i++) {
			bad |= levels[i] & ~1u;
			valid[i] = (uint8_t)levels[i];
			present += levels[i];
		}
	} else {
		for (int64_t i = 0; i < m; i++) {
			bad |= levels[i] & ~1u;
			present += levels[i];
		}
	}
	if (bad)
		return corrupt(cr, err, "definition level is above the column's maximum of 1");
	return present;
}

int pq_column_reader_read(pq_column_reader *cr, tl_vector *vec, int64_t offset, int64_t n, tl_arena *arena,
                          tl_error *err)
{
	uint8_t *base = (uint8_t *)vec->v.b;
	int width = cr->value_width;
	while (n > 0) {
		if (cr->page_values_left == 0 && next_data_page(cr, NULL, err) < 0)
			return -1;
		int64_t m = n < cr->page_values_left ? n : cr->page_values_left;
		uint8_t *dst = base + (size_t)offset * (size_t)width;
		int64_t k = m;
		if (cr->max_definition > 0) {
			if (vec->valid == NULL)
				return tl_error_set(err, TL_ERR_INVALID, "column \"%s\" is optional but the batch has no validity array",
				                    cr->column->name);
			k = read_definitions(cr, vec->valid + offset, m, err);
			if (k < 0)
				return -1;
		} else if (vec->valid) {
			memset(vec->valid + offset, 1, (size_t)m);
		}
		if (k > 0 && decode_values(cr, dst, k, arena, err) < 0)
			return -1;
		if (k < m)
			spread(dst, width, vec->valid + offset, k, m);
		cr->page_values_left -= m;
		cr->rows_read += m;
		offset += m;
		n -= m;
	}
	return 0;
}

/*
 * Passes over k non-null values of the page: by arithmetic where the
 * encoding allows, else decoded into scratch and dropped (never gathered
 * from the dictionary, copied or owned).
 */
static int skip_values(pq_column_reader *cr, int64_t k, tl_error *err)
{
	const tl_pq_column *col = cr->column;
	switch (cr->encoding) {
	case PQ_ENC_PLAIN:
		if (col->physical == TL_PQ_BOOLEAN || col->physical == TL_PQ_BYTE_ARRAY)
			break;
		if ((uint64_t)k > (cr->values_len - cr->values_pos) / (size_t)plain_width_of(col))
			return corrupt(cr, err, "PLAIN page holds fewer values than its rows need");
		cr->values_pos += (size_t)k * (size_t)plain_width_of(col);
		return 0;
	case PQ_ENC_BYTE_STREAM_SPLIT:
		if (k > cr->split_total - cr->split_position)
			return corrupt(cr, err, "BYTE_STREAM_SPLIT page holds fewer values than its rows need");
		cr->split_position += k;
		return 0;
	case PQ_ENC_PLAIN_DICTIONARY:
	case PQ_ENC_RLE_DICTIONARY: {
		if (ensure_scratch(cr, k, err) < 0)
			return -1;
		int64_t got = pq_rle_decode(&cr->index_decoder, cr->scratch_u32, k, err);
		if (got < 0) {
			tl_error_prefix(err, "%s: column \"%s\": dictionary indexes", cr->file_name, col->name);
			return -1;
		}
		return got < k ? corrupt(cr, err, "dictionary indexes end before the page's values do") : 0;
	}
	case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
	case PQ_ENC_DELTA_BYTE_ARRAY: {
		tl_bytes *views = (tl_bytes *)ensure_scratch_bytes(cr, (size_t)k * sizeof(tl_bytes), err);
		if (views == NULL)
			return -1;
		int64_t got = pq_bytes_decode(&cr->bytes_decoder, views, k, err);
		if (got < 0) {
			tl_error_prefix(err, "%s: column \"%s\"", cr->file_name, col->name);
			return -1;
		}
		return got < k ? corrupt(cr, err, "byte-array values end before the page's rows do") : 0;
	}
	default:
		break;
	}
	/* PLAIN booleans and byte arrays, RLE booleans, DELTA_BINARY_PACKED: none of them own bytes, so no arena. */
	uint8_t *scratch = ensure_scratch_bytes(cr, (size_t)k * sizeof(tl_bytes), err);
	if (scratch == NULL)
		return -1;
	return decode_values(cr, scratch, k, NULL, err);
}

int pq_column_reader_skip(pq_column_reader *cr, int64_t n, tl_error *err)
{
	if (n < 0 || n > cr->rows_expected - cr->rows_read)
		return tl_error_set(err, TL_ERR_INVALID, "%s: column \"%s\": cannot skip %lld rows with %lld left",
		                    cr->file_name, cr->column->name, (long long)n,
		                    (long long)(cr->rows_expected - cr->rows_read));
	while (n > 0) {
		if (cr->page_values_left == 0) {
			if (next_data_page(cr, &n, err) < 0)
				return -1;
			if (n == 0)
				break;
		}
		int64_t m = n < cr->page_values_left ? n : cr->page_values_left;
		int64_t k = cr->max_definition > 0 ? read_definitions(cr, NULL, m, err) : m;
		if (k < 0 || (k > 0 && skip_values(cr, k, err) < 0))
			return -1;
		cr->page_values_left -= m;
		cr->rows_read += m;
		n -= m;
	}
	return 0;
}
