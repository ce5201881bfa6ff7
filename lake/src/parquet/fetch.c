/*
 * fetch.c: reading byte ranges of a Parquet file, and the column chunks of
 * a row group whole or page by page.
 *
 * Every read costs a system call locally and a round trip on object
 * storage, so ranges are sorted and those that overlap, touch, or lie
 * within the input's coalesce_gap of each other are read as one.
 *
 * A row selection (a point lookup keeps one page of the 64 in each chunk
 * of a 262,144-row row group) needs only some pages of a chunk, and the
 * chunk's OffsetIndex says where each data page is and which rows it
 * holds. So such a chunk is fetched by the byte ranges of the pages
 * holding the selected rows, and its dictionary page (which precedes the
 * first data page) in a second round only when one of those pages is
 * dictionary-encoded, which their headers tell: writers fall back to PLAIN
 * once a chunk's dictionary fills, and the dictionary is usually the
 * largest page of its chunk. The column reader then passes over the pages
 * not fetched by the rows the index gives them.
 *
 * The OffsetIndex was written by someone else and is only trusted where it
 * can be checked: every fetched page must be a data page whose header
 * fills exactly the bytes the index gives it and states the rows the index
 * gives it, and the bytes before the first data page must be exactly one
 * dictionary page. A chunk where anything disagrees is read whole instead,
 * as if it had no index: slower, never different.
 */
#include <stdlib.h>
#include <string.h>

#include "parquet/fetch.h"

/* ------------------------------------------------------------ ranges */

typedef struct range_order {
	uint64_t offset;
	int index;
} range_order;

static int by_offset(const void *a, const void *b)
{
	uint64_t x = ((const range_order *)a)->offset, y = ((const range_order *)b)->offset;
	return x < y ? -1 : x > y;
}

int pq_fetch_ranges(tl_input *in, pq_range *ranges, int nranges, tl_arena *arena, tl_error *err)
{
	if (nranges <= 0)
		return 0;
	range_order *sorted = tl_malloc(sizeof(range_order) * (size_t)nranges);
	if (sorted == NULL)
		return tl_error_nomem(err, "reading a Parquet file");
	for (int i = 0; i < nranges; i++)
		sorted[i] = (range_order){.offset = ranges[i].offset, .index = i};
	qsort(sorted, (size_t)nranges, sizeof(range_order), by_offset);

	uint64_t gap = in->coalesce_gap;
	int rc = 0;
	for (int first = 0; first < nranges && rc == 0;) {
		uint64_t start = sorted[first].offset, end = start + ranges[sorted[first].index].len;
		int last = first;
		while (last + 1 < nranges) {
			const pq_range *next = &ranges[sorted[last + 1].index];
			if (next->offset > end && next->offset - end > gap)
				break;
			last++;
			if (next->offset + next->len > end)
				end = next->offset + next->len;
		}
		uint8_t *run = tl_arena_alloc(arena, end > start ? (size_t)(end - start) : 1);
		if (run == NULL)
			rc = tl_error_nomem(err, "reading %llu bytes of a Parquet file", (unsigned long long)(end - start));
		else if (end > start)
			rc = tl_input_read(in, start, run, (size_t)(end - start), err);
		for (int k = first; rc == 0 && k <= last; k++)
			ranges[sorted[k].index].bytes = run + (sorted[k].offset - start);
		first = last + 1;
	}
	tl_free(sorted);
	return rc;
}

/* ------------------------------------------------------------ chunks */

enum {
	CHUNK_WHOLE,        /* to read whole */
	CHUNK_PAGES,        /* its needed pages to read */
	CHUNK_DICTIONARY,   /* its dictionary page to read */
	CHUNK_READY         /* fetched */
};

/* Which chunk, and which part of it, a range was asked for. */
typedef struct request_owner {
	int chunk;
	int slot;           /* a page's slot, or one of: */
} request_owner;

#define WHOLE_CHUNK (-1)
#define DICTIONARY_PAGE (-2)

typedef struct fetch_round {
	pq_range *ranges;
	request_owner *owners;
	int n;
} fetch_round;

static void ask(fetch_round *round, uint64_t offset, uint64_t len, int chunk, int slot)
{
	round->ranges[round->n] = (pq_range){.offset = offset, .len = len};
	round->owners[round->n] = (request_owner){.chunk = chunk, .slot = slot};
	round->n++;
}

/* The row where page p of c ends. */
static int64_t page_end(const pq_chunk_fetch *c, int p)
{
	return p + 1 < c->npages ? c->pages[p + 1].first_row_index : c->rows;
}

/*
 * Sets needed[p] for each page of c holding a row of `ranges` at or after
 * `from`; returns how many.
 */
static int needed_pages(const pq_chunk_fetch *c, const tl_pq_row_range *ranges, int nranges, int64_t from,
                        bool *needed)
{
	int count = 0, r = 0;
	for (int p = 0; p < c->npages; p++) {
		int64_t start = c->pages[p].first_row_index, end = page_end(c, p);
		if (start < from)
			start = from;
		while (r < nranges && ranges[r].end <= start)
			r++;
		needed[p] = start < end && r < nranges && ranges[r].start < end;
		count += needed[p];
	}
	return count;
}

/*
 * Asks for chunk i's needed pages when its OffsetIndex leaves some page
 * unneeded, else for the chunk whole.
 */
static int plan_chunk(pq_chunk_fetch *c, int i, const tl_pq_row_range *ranges, int nranges, int64_t from,
                      fetch_round *round, tl_arena *arena, tl_error *err)
{
	c->state = CHUNK_WHOLE;
	if (ranges == NULL || c->pages == NULL || c->npages <= 0)
		return 0;
	bool *needed = tl_malloc((size_t)c->npages);
	if (needed == NULL)
		return tl_error_nomem(err, "planning the pages to read");
	int count = needed_pages(c, ranges, nranges, from, needed);
	if (count < c->npages) {
		c->slots = tl_arena_alloc(arena, sizeof(pq_page_slot) * (size_t)c->npages);
		if (c->slots == NULL) {
			tl_free(needed);
			return tl_error_nomem(err, "planning the pages to read");
		}
		for (int p = 0; p < c->npages; p++) {
			c->slots[p] = (pq_page_slot){.offset = c->pages[p].offset,
			                             .size = c->pages[p].compressed_page_size,
			                             .first_row = c->pages[p].first_row_index};
			if (needed[p])
				ask(round, (uint64_t)c->pages[p].offset, (uint64_t)c->pages[p].compressed_page_size, i, p);
		}
		c->state = CHUNK_PAGES;
	}
	tl_free(needed);
	return 0;
}

/*
 * Whether the bytes fetched for slot s are the data page the OffsetIndex
 * says: a header that, with the body it states, fills the slot exactly,
 * and the rows the index gives the page. *dictionary_encoded is set when
 * its values refer to a dictionary.
 */
static bool page_agrees(const pq_page_slot *s, int64_t rows, bool *dictionary_encoded)
{
	pq_page_header h;
	size_t header_len;
	tl_error ignored;
	if (pq_page_header_decode(s->bytes, (size_t)s->size, &h, &header_len, &ignored) < 0 ||
	    h.compressed_page_size < 0 || (int64_t)header_len + h.compressed_page_size != s->size)
		return false;
	int64_t values;
	int32_t encoding;
	if (h.type == PQ_PAGE_DATA && h.has_data_page_header) {
		values = h.data_page_header.num_values;
		encoding = h.data_page_header.encoding;
	} else if (h.type == PQ_PAGE_DATA_V2 && h.has_data_page_header_v2) {
		values = h.data_page_header_v2.num_values;
		encoding = h.data_page_header_v2.encoding;
	} else {
		return false;
	}
	if (encoding == PQ_ENC_PLAIN_DICTIONARY || encoding == PQ_ENC_RLE_DICTIONARY)
		*dictionary_encoded = true;
	return values == rows;
}

/* Whether bytes[0..len) are exactly one dictionary page. */
static bool dictionary_agrees(const uint8_t *bytes, size_t len)
{
	pq_page_header h;
	size_t header_len;
	tl_error ignored;
	return pq_page_header_decode(bytes, len, &h, &header_len, &ignored) == 0 && h.type == PQ_PAGE_DICTIONARY &&
	       h.compressed_page_size >= 0 && header_len + (size_t)h.compressed_page_size == len;
}

/*
 * After its pages arrived: checks them, and moves chunk i on to its
 * dictionary (asked for in `next`) when one needs it, to being read whole
 * when anything disagrees, or to ready.
 */
static void check_pages(pq_chunk_fetch *c, int i, fetch_round *next)
{
	bool dictionary_encoded = false;
	for (int p = 0; p < c->npages; p++) {
		if (c->slots[p].bytes != NULL && !page_agrees(&c->slots[p], page_end(c, p) - c->slots[p].first_row,
		                                              &dictionary_encoded)) {
			c->state = CHUNK_WHOLE;
			return;
		}
	}
	if (!dictionary_encoded) {
		c->state = CHUNK_READY;
	} else if (c->pages[0].offset > c->start) {
		c->state = CHUNK_DICTIONARY;
		ask(next, (uint64_t)c->start, (uint64_t)(c->pages[0].offset - c->start), i, DICTIONARY_PAGE);
	} else {
		c->state = CHUNK_WHOLE; /* no room for the dictionary its pages need: let the whole chunk tell */
	}
}

/* Hands the bytes of a round to the chunks that asked for them. */
static void deliver(pq_chunk_fetch *chunks, const fetch_round *round)
{
	for (int k = 0; k < round->n; k++) {
		pq_chunk_fetch *c = &chunks[round->owners[k].chunk];
		const uint8_t *bytes = round->ranges[k].bytes;
		switch (round->owners[k].slot) {
		case WHOLE_CHUNK:
			c->chunk = bytes;
			c->slots = NULL;
			c->state = CHUNK_READY;
			break;
		case DICTIONARY_PAGE:
			c->dictionary = bytes;
			c->dictionary_len = (size_t)round->ranges[k].len;
			break;
		default:
			c->slots[round->owners[k].slot].bytes = bytes;
			break;
		}
	}
}

int pq_fetch_chunks(tl_input *in, pq_chunk_fetch *chunks, int nchunks, const tl_pq_row_range *ranges, int nranges,
                    int64_t from, tl_arena *arena, tl_error *err)
{
	/* A chunk asks for at most all its pages, or once for itself or its dictionary. */
	int most = 0;
	for (int i = 0; i < nchunks; i++) {
		chunks[i].chunk = NULL;
		chunks[i].slots = NULL;
		chunks[i].dictionary = NULL;
		chunks[i].dictionary_len = 0;
		most += (chunks[i].pages != NULL && chunks[i].npages > 0 ? chunks[i].npages : 0) + 1;
	}
	fetch_round round = {.ranges = tl_malloc(sizeof(pq_range) * (size_t)(most ? most : 1)),
	                     .owners = tl_malloc(sizeof(request_owner) * (size_t)(most ? most : 1))};
	int rc = round.ranges != NULL && round.owners != NULL ? 0 : tl_error_nomem(err, "reading a Parquet row group");
	for (int i = 0; rc == 0 && i < nchunks; i++)
		rc = plan_chunk(&chunks[i], i, ranges, nranges, from, &round, arena, err);

	/* Three rounds at most: pages (and whole chunks), dictionaries, chunks whose pages disagreed. */
	for (int pass = 0; rc == 0 && pass < 3; pass++) {
		for (int i = 0; i < nchunks; i++)
			if (chunks[i].state == CHUNK_WHOLE)
				ask(&round, (uint64_t)chunks[i].start, (uint64_t)chunks[i].size, i, WHOLE_CHUNK);
		if (round.n == 0)
			break;
		rc = pq_fetch_ranges(in, round.ranges, round.n, arena, err);
		if (rc < 0)
			break;
		deliver(chunks, &round);
		round.n = 0;
		for (int i = 0; i < nchunks; i++) {
			pq_chunk_fetch *c = &chunks[i];
			if (c->state == CHUNK_PAGES) {
				check_pages(c, i, &round);
			} else if (c->state == CHUNK_DICTIONARY) {
				c->state = dictionary_agrees(c->dictionary, c->dictionary_len) ? CHUNK_READY : CHUNK_WHOLE;
				if (c->state == CHUNK_WHOLE)
					c->dictionary = NULL;
			}
		}
	}
	tl_free(round.ranges);
	tl_free(round.owners);
	return rc;
}
