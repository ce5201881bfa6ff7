/*
 * writer_index.c: what the writer adds to a file so readers can skip what
 * a filter rules out below the row group: the page index (parquet-format
 * PageIndex.md) and split block bloom filters (BloomFilter.md).
 *
 * The page index of a column chunk is two structs. The OffsetIndex lists
 * each data page's place in the file, stored size and first row, so a
 * reader can go straight to the pages holding given rows. The ColumnIndex
 * lists each page's min and max (encoded and ordered as the chunk's
 * statistics are), whether it holds only nulls, its null count, and
 * whether the mins and maxes ascend or descend from page to page. Both are
 * written for every chunk after the last row group, all ColumnIndexes then
 * all OffsetIndexes, as parquet-cpp and parquet-mr place them.
 *
 * A bloom filter answers "may this chunk hold value v?" for = and IN,
 * where min/max cannot help (a key in the middle of an unsorted chunk).
 * The writer keeps the xxHash64 of each value and sizes the filter, when
 * the chunk closes, for the distinct hashes it saw at the requested false
 * positive rate, which costs 8 bytes per value (in dictionary mode, per
 * distinct value) while the chunk is open.
 */
#include <stdlib.h>
#include <string.h>

#include "parquet/bloom.h"
#include "parquet/writer_internal.h"

/* ------------------------------------------------------------ page index */

void pq_page_index_init(pq_page_index_builder *b)
{
	tl_buf_init(&b->entries);
	tl_buf_init(&b->bounds);
	b->column_index_ok = true;
}

void pq_page_index_reset(pq_page_index_builder *b)
{
	tl_buf_reset(&b->entries);
	tl_buf_reset(&b->bounds);
	b->column_index_ok = true;
}

void pq_page_index_free(pq_page_index_builder *b)
{
	tl_buf_free(&b->entries);
	tl_buf_free(&b->bounds);
}

void pq_page_index_add(pq_page_index_builder *b, int64_t offset, int64_t size, int64_t first_row, int64_t rows,
                       int64_t null_count, const pq_chunk_stats *page_stats)
{
	pq_page_entry e;
	memset(&e, 0, sizeof(e));
	e.offset = offset;
	e.size = (int32_t)size;
	e.first_row = first_row;
	e.null_count = null_count;
	e.null_page = null_count == rows;
	e.bounds_offset = (uint32_t)b->bounds.len;
	if (!e.null_page) {
		e.has_bounds = pq_stats_append_bounds(page_stats, &b->bounds, &e.min_len, &e.max_len);
		if (!e.has_bounds)
			b->column_index_ok = false;
	}
	tl_buf_append(&b->entries, &e, sizeof(e));
}

static tl_bytes entry_bound(const pq_page_index_builder *b, const pq_page_entry *e, bool max)
{
	tl_bytes v;
	v.ptr = b->bounds.data + e->bounds_offset + (max ? e->min_len : 0);
	v.len = max ? e->max_len : e->min_len;
	return v;
}

/* ASCENDING or DESCENDING when the non-null pages' mins and maxes both go that way, else UNORDERED. */
static int32_t boundary_order(const pq_page_index_builder *b, const pq_page_entry *pages, int32_t n,
                              const pq_chunk_stats *order)
{
	bool ascending = true, descending = true;
	const pq_page_entry *prev = NULL;
	for (int32_t i = 0; i < n && (ascending || descending); i++) {
		if (pages[i].null_page)
			continue;
		if (prev != NULL) {
			int mins = pq_stats_compare_bounds(order, entry_bound(b, prev, false), entry_bound(b, &pages[i], false));
			int maxes = pq_stats_compare_bounds(order, entry_bound(b, prev, true), entry_bound(b, &pages[i], true));
			if (mins > 0 || maxes > 0)
				ascending = false;
			if (mins < 0 || maxes < 0)
				descending = false;
		}
		prev = &pages[i];
	}
	return ascending ? PQ_BOUNDARY_ASCENDING : descending ? PQ_BOUNDARY_DESCENDING : PQ_BOUNDARY_UNORDERED;
}

int pq_page_index_encode(const pq_page_index_builder *b, const pq_chunk_stats *order, int64_t data_offset,
                         pq_column_chunk *chunk, tl_buf *column_indexes, tl_buf *offset_indexes, tl_arena *scratch)
{
	const pq_page_entry *pages = (const pq_page_entry *)b->entries.data;
	int32_t n = (int32_t)(b->entries.len / sizeof(pq_page_entry));
	if (tl_buf_failed(&b->entries) || tl_buf_failed(&b->bounds))
		return -1;
	if (n == 0)
		return 0;

	pq_offset_index oi;
	oi.npages = n;
	oi.pages = tl_arena_alloc(scratch, (size_t)n * sizeof(pq_page_location));
	if (oi.pages == NULL)
		return -1;
	for (int32_t i = 0; i < n; i++) {
		oi.pages[i].offset = data_offset + pages[i].offset;
		oi.pages[i].compressed_page_size = pages[i].size;
		oi.pages[i].first_row_index = pages[i].first_row;
	}
	chunk->has_offset_index = true;
	chunk->offset_index_offset = (int64_t)offset_indexes->len;
	pq_offset_index_encode(&oi, offset_indexes);
	chunk->offset_index_length = (int32_t)((int64_t)offset_indexes->len - chunk->offset_index_offset);

	if (!b->column_index_ok)
		return tl_buf_failed(offset_indexes) ? -1 : 0;
	pq_column_index ci;
	memset(&ci, 0, sizeof(ci));
	ci.npages = ci.nmin = ci.nmax = ci.nnull_counts = n;
	ci.null_pages = tl_arena_alloc(scratch, (size_t)n * sizeof(bool));
	ci.min_values = tl_arena_alloc(scratch, (size_t)n * sizeof(tl_bytes));
	ci.max_values = tl_arena_alloc(scratch, (size_t)n * sizeof(tl_bytes));
	ci.null_counts = tl_arena_alloc(scratch, (size_t)n * sizeof(int64_t));
	if (ci.null_pages == NULL || ci.min_values == NULL || ci.max_values == NULL || ci.null_counts == NULL)
		return -1;
	for (int32_t i = 0; i < n; i++) {
		const pq_page_entry *e = &pages[i];
		ci.null_pages[i] = e->null_page;
		ci.null_counts[i] = e->null_count;
		/* A null page's min and max are empty (PageIndex.md). */
		ci.min_values[i] = e->null_page ? (tl_bytes){(const uint8_t *)"", 0} : entry_bound(b, e, false);
		ci.max_values[i] = e->null_page ? (tl_bytes){(const uint8_t *)"", 0} : entry_bound(b, e, true);
	}
	ci.boundary_order = boundary_order(b, pages, n, order);
	chunk->has_column_index = true;
	chunk->column_index_offset = (int64_t)column_indexes->len;
	pq_column_index_encode(&ci, column_indexes);
	chunk->column_index_length = (int32_t)((int64_t)column_indexes->len - chunk->column_index_offset);
	return tl_buf_failed(column_indexes) || tl_buf_failed(offset_indexes) ? -1 : 0;
}

/* ------------------------------------------------------------ bloom filters */

void pq_bloom_builder_init(pq_bloom_builder *b)
{
	tl_buf_init(&b->hashes);
}

void pq_bloom_builder_free(pq_bloom_builder *b)
{
	tl_buf_free(&b->hashes);
}

void pq_bloom_builder_add(pq_bloom_builder *b, const void *values, int64_t n, int width)
{
	if (n <= 0)
		return;
	uint64_t *out = (uint64_t *)tl_buf_extend(&b->hashes, (size_t)n * sizeof(uint64_t));
	if (out == NULL)
		return; /* b->hashes is failed; finishing reports it */
	if (width == 0) {
		const tl_bytes *v = values;
		for (int64_t i = 0; i < n; i++)
			out[i] = pq_xxhash64(v[i].ptr, v[i].len, 0);
	} else {
		const uint8_t *p = values;
		for (int64_t i = 0; i < n; i++)
			out[i] = pq_xxhash64(p + (size_t)i * (size_t)width, (size_t)width, 0);
	}
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int64_t pq_bloom_builder_finish(pq_bloom_builder *b, double fpp, int64_t max_bytes, tl_buf *out)
{
	if (tl_buf_failed(&b->hashes)) {
		tl_buf_free(&b->hashes);
		tl_buf_init(&b->hashes);
		return -1;
	}
	uint64_t *hashes = (uint64_t *)b->hashes.data;
	size_t n = b->hashes.len / sizeof(uint64_t);
	if (n == 0)
		return 0;
	qsort(hashes, n, sizeof(uint64_t), compare_u64);
	size_t distinct = 1;
	for (size_t i = 1; i < n; i++)
		if (hashes[i] != hashes[distinct - 1])
			hashes[distinct++] = hashes[i];
	int64_t num_bytes = pq_bloom_optimal_bytes((int64_t)distinct, fpp, max_bytes);

	size_t start = out->len;
	pq_bloom_header_encode((int32_t)num_bytes, out);
	uint8_t *bitset = tl_buf_extend(out, (size_t)num_bytes);
	if (bitset == NULL)
		return -1;
	memset(bitset, 0, (size_t)num_bytes);
	for (size_t i = 0; i < distinct; i++)
		pq_bloom_insert(bitset, (size_t)num_bytes, hashes[i]);
	tl_buf_reset(&b->hashes);
	return (int64_t)(out->len - start);
}
