/*
 * reader_index.c: a column chunk's page index (PageIndex.md) and bloom
 * filter (BloomFilter.md), read and checked for reader.c.
 *
 * The page index is two structs the footer points at. Each is read with
 * one request when first asked for: the OffsetIndex alone when a reader
 * only wants to fetch some pages, both to judge pages by their bounds. It
 * is used only if it is consistent with the footer: as many pages in
 * both, the first starting at row 0, rows strictly ascending within the
 * row group, every page inside its chunk in ascending order. A page's
 * bounds are decoded as the chunk statistics are (a NaN bound, or one of
 * the wrong size, is no bound).
 *
 * Writers put every chunk's ColumnIndex and OffsetIndex together before
 * the footer, so when that region is small it is read whole at the first
 * index a reader asks for (pq_index_window): a point lookup then costs one
 * read for the indexes of all the chunks it touches, instead of one per
 * struct, each a round trip on object storage.
 *
 * A bloom filter is a BloomFilterHeader and a bitset of 32-byte blocks, of
 * which a value's hash picks one. A probe reads the header, then only the
 * blocks its values fall in (a few dozen bytes instead of a bitset of
 * hundreds of KiB), merged into one read where the input prefers that.
 */
#include <math.h>
#include <string.h>

#include "parquet/bloom.h"
#include "parquet/fetch.h"
#include "parquet/reader_index.h"

/* Index structs past this size are not believed (a few bytes per page is usual). */
#define MAX_INDEX_BYTES (64 * 1024 * 1024)

static bool within_file(const tl_input *in, int64_t offset, int64_t len)
{
	return offset >= 4 && len > 0 && len <= MAX_INDEX_BYTES && (uint64_t)offset <= in->size - 8 &&
	       (uint64_t)len <= in->size - 8 - (uint64_t)offset;
}

/* ------------------------------------------------------------ the index region */

/* Regions up to this size (or the input's coalesce_gap) are read whole. */
#define INDEX_REGION_MAX (256 * 1024)

/* Widens [*start, *end) to cover the struct at offset of len bytes, if it lies in the file. */
static void cover(const tl_input *in, bool present, int64_t offset, int32_t len, uint64_t *start, uint64_t *end)
{
	if (!present || !within_file(in, offset, len))
		return;
	if ((uint64_t)offset < *start)
		*start = (uint64_t)offset;
	if ((uint64_t)offset + (uint64_t)len > *end)
		*end = (uint64_t)offset + (uint64_t)len;
}

/* Reads the region of every chunk's page index when it is small; failing to is no error (reads go to the file). */
static void read_region(pq_index_window *w)
{
	w->tried = true;
	uint64_t start = UINT64_MAX, end = 0;
	for (int g = 0; g < w->md->nrow_groups; g++) {
		const pq_row_group *rg = &w->md->row_groups[g];
		for (int c = 0; c < rg->ncolumns; c++) {
			const pq_column_chunk *cc = &rg->columns[c];
			cover(w->file, cc->has_column_index, cc->column_index_offset, cc->column_index_length, &start, &end);
			cover(w->file, cc->has_offset_index, cc->offset_index_offset, cc->offset_index_length, &start, &end);
		}
	}
	uint64_t limit = w->file->coalesce_gap > INDEX_REGION_MAX ? w->file->coalesce_gap : INDEX_REGION_MAX;
	if (end <= start || end - start > limit)
		return;
	uint8_t *bytes = tl_malloc((size_t)(end - start));
	tl_error ignored;
	tl_error_clear(&ignored);
	if (bytes == NULL || tl_input_read(w->file, start, bytes, (size_t)(end - start), &ignored) < 0) {
		tl_free(bytes);
		return;
	}
	w->bytes = bytes;
	w->start = start;
	w->len = end - start;
}

static int window_read_at(tl_input *in, uint64_t offset, void *buf, size_t len, tl_error *err)
{
	pq_index_window *w = (pq_index_window *)in;
	if (!w->tried)
		read_region(w);
	if (w->bytes != NULL && offset >= w->start && len <= w->len && offset - w->start <= w->len - len) {
		memcpy(buf, w->bytes + (offset - w->start), len);
		return 0;
	}
	return tl_input_read(w->file, offset, buf, len, err);
}

void pq_index_window_init(pq_index_window *w, tl_input *file, const pq_file_metadata *md)
{
	memset(w, 0, sizeof(*w));
	w->base.read_at = window_read_at;
	w->base.size = file->size;
	w->base.name = file->name;
	w->base.coalesce_gap = file->coalesce_gap;
	w->file = file;
	w->md = md;
}

void pq_index_window_free(pq_index_window *w)
{
	tl_free(w->bytes);
	w->bytes = NULL;
}

/* ------------------------------------------------------------ page indexes */

/* Reads len bytes at offset into the arena; NULL with err set when the input fails. */
static uint8_t *read_range(tl_input *in, int64_t offset, int32_t len, tl_arena *arena, tl_error *err)
{
	uint8_t *buf = tl_arena_alloc(arena, (size_t)len);
	if (buf == NULL) {
		tl_error_nomem(err, "reading a Parquet page index");
		return NULL;
	}
	if (tl_input_read(in, (uint64_t)offset, buf, (size_t)len, err) < 0)
		return NULL;
	return buf;
}

static bool offset_index_fits(const pq_offset_index *oi, const pq_column_meta *m, int64_t rows)
{
	int64_t chunk_start = m->data_page_offset;
	if (m->has_dictionary_page_offset && m->dictionary_page_offset > 0 && m->dictionary_page_offset < chunk_start)
		chunk_start = m->dictionary_page_offset;
	int64_t chunk_end = chunk_start + m->total_compressed_size;
	if (oi->npages < 1 || oi->pages[0].first_row_index != 0)
		return false;
	int64_t prev_end = chunk_start;
	for (int32_t i = 0; i < oi->npages; i++) {
		const pq_page_location *p = &oi->pages[i];
		if (p->offset < prev_end || p->compressed_page_size <= 0 || p->offset > chunk_end ||
		    p->compressed_page_size > chunk_end - p->offset)
			return false;
		if (p->first_row_index >= rows || (i > 0 && p->first_row_index <= oi->pages[i - 1].first_row_index))
			return false;
		prev_end = p->offset + p->compressed_page_size;
	}
	return true;
}

static bool column_index_fits(const pq_column_index *ci, int32_t npages)
{
	return ci->npages == npages && ci->nmin == npages && ci->nmax == npages &&
	       (ci->nnull_counts == 0 || ci->nnull_counts == npages);
}

/* Whether bounds written before column orders existed can be trusted for this column. */
static bool order_is_signed_legacy_safe(const tl_pq_column *col)
{
	if (col->physical == TL_PQ_BYTE_ARRAY || col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY)
		return false;
	return !(col->logical == TL_PQ_LOGICAL_INT && !col->int_signed);
}

static void page_bounds(const tl_pq_column *col, tl_bytes min, tl_bytes max, tl_pq_stats *out)
{
	if (!pq_decode_stat_value(col, min, &out->min) || !pq_decode_stat_value(col, max, &out->max))
		return;
	if (col->physical == TL_PQ_FLOAT && (isnan(out->min.f32) || isnan(out->max.f32)))
		return;
	if (col->physical == TL_PQ_DOUBLE && (isnan(out->min.f64) || isnan(out->max.f64)))
		return;
	out->has_min_max = true;
}

int pq_offset_index_read(tl_input *in, const pq_column_chunk *cc, int64_t rows, tl_arena *arena,
                         const pq_page_location **pages, tl_error *err)
{
	*pages = NULL;
	if (!cc->has_offset_index || !cc->has_meta_data || rows <= 0 ||
	    !within_file(in, cc->offset_index_offset, cc->offset_index_length))
		return 0;
	uint8_t *bytes = read_range(in, cc->offset_index_offset, cc->offset_index_length, arena, err);
	if (bytes == NULL)
		return -1;
	tl_error ignored;
	tl_error_clear(&ignored);
	pq_offset_index oi;
	/* Out of memory decoding counts as malformed: the index is only a hint. */
	if (pq_offset_index_decode(bytes, (size_t)cc->offset_index_length, arena, &oi, &ignored) < 0 ||
	    !offset_index_fits(&oi, &cc->meta_data, rows))
		return 0;
	*pages = oi.pages;
	return oi.npages;
}

int pq_page_index_read(tl_input *in, const pq_column_chunk *cc, const pq_page_location *locations, int npages,
                       int64_t rows, const tl_pq_column *col, bool typed_order, tl_arena *arena,
                       tl_pq_page_info **pages, tl_error *err)
{
	*pages = NULL;
	if (npages <= 0 || !cc->has_column_index || !within_file(in, cc->column_index_offset, cc->column_index_length))
		return 0;
	uint8_t *ci_bytes = read_range(in, cc->column_index_offset, cc->column_index_length, arena, err);
	if (ci_bytes == NULL)
		return -1;

	tl_error ignored;
	tl_error_clear(&ignored);
	pq_column_index ci;
	if (pq_column_index_decode(ci_bytes, (size_t)cc->column_index_length, arena, &ci, &ignored) < 0 ||
	    !column_index_fits(&ci, npages))
		return 0;

	tl_pq_page_info *out = tl_arena_alloc(arena, (size_t)npages * sizeof(tl_pq_page_info));
	if (out == NULL)
		return 0;
	bool bounds_usable = typed_order || order_is_signed_legacy_safe(col);
	for (int32_t i = 0; i < npages; i++) {
		tl_pq_page_info *p = &out[i];
		memset(p, 0, sizeof(*p));
		p->first_row = locations[i].first_row_index;
		p->rows = (i + 1 < npages ? locations[i + 1].first_row_index : rows) - p->first_row;
		if (ci.nnull_counts > 0) {
			if (ci.null_counts[i] < 0 || ci.null_counts[i] > p->rows)
				return 0;
			p->stats.has_null_count = true;
			p->stats.null_count = ci.null_counts[i];
		}
		if (ci.null_pages[i]) {
			/* Every value null; the counts, when given, must agree. */
			if (p->stats.has_null_count && p->stats.null_count != p->rows)
				return 0;
			p->stats.has_null_count = true;
			p->stats.null_count = p->rows;
		} else if (bounds_usable) {
			page_bounds(col, ci.min_values[i], ci.max_values[i], &p->stats);
		}
	}
	*pages = out;
	return npages;
}

/* ------------------------------------------------------------ bloom filters */

/* A header is a few bytes; this much always holds one. */
#define BLOOM_HEADER_PROBE 64

bool pq_has_bloom_filter(const pq_column_meta *m, uint64_t file_size)
{
	return m->has_bloom_filter && m->bloom_filter_offset >= 4 && (uint64_t)m->bloom_filter_offset < file_size;
}

int pq_bloom_filter_probe(tl_input *in, const pq_column_meta *m, const tl_bytes *values, int nvalues, tl_error *err)
{
	if (!pq_has_bloom_filter(m, in->size))
		return 1;
	uint64_t offset = (uint64_t)m->bloom_filter_offset;
	uint64_t room = in->size - offset;
	uint8_t head[BLOOM_HEADER_PROBE];
	size_t head_len = room < sizeof(head) ? (size_t)room : sizeof(head);
	if (m->has_bloom_filter_length && m->bloom_filter_length > 0 && (uint64_t)m->bloom_filter_length < head_len)
		head_len = (size_t)m->bloom_filter_length;
	if (tl_input_read(in, offset, head, head_len, err) < 0)
		return -1;

	pq_bloom_header h;
	size_t header_len;
	tl_error ignored;
	tl_error_clear(&ignored);
	if (pq_bloom_header_decode(head, head_len, &h, &header_len, &ignored) < 0)
		return 1;
	uint64_t num_bytes = (uint64_t)h.num_bytes;
	if (!h.split_block || !h.xxhash || !h.uncompressed || num_bytes < PQ_BLOOM_MIN_BYTES ||
	    num_bytes > PQ_BLOOM_MAX_BYTES || num_bytes % 32 != 0 || header_len + num_bytes > room)
		return 1;
	if (m->has_bloom_filter_length && (uint64_t)m->bloom_filter_length != header_len + num_bytes)
		return 1;

	/* Only the blocks the values fall in. */
	pq_range *blocks = tl_malloc(sizeof(pq_range) * (size_t)(nvalues > 0 ? nvalues : 1));
	uint64_t *hashes = tl_malloc(sizeof(uint64_t) * (size_t)(nvalues > 0 ? nvalues : 1));
	if (blocks == NULL || hashes == NULL) {
		tl_free(blocks);
		tl_free(hashes);
		return 1; /* a hint we cannot afford to read: assume the value may be there */
	}
	for (int i = 0; i < nvalues; i++) {
		hashes[i] = pq_xxhash64(values[i].ptr, values[i].len, 0);
		uint64_t block = pq_bloom_block_index((size_t)num_bytes, hashes[i]);
		blocks[i] = (pq_range){.offset = offset + header_len + 32 * block, .len = 32};
	}
	tl_arena arena;
	tl_arena_init(&arena, 1024);
	int found = 0;
	if (pq_fetch_ranges(in, blocks, nvalues, &arena, err) < 0)
		found = -1;
	for (int i = 0; found == 0 && i < nvalues; i++)
		found = pq_bloom_block_may_contain(blocks[i].bytes, hashes[i]);
	tl_arena_free(&arena);
	tl_free(blocks);
	tl_free(hashes);
	return found;
}
