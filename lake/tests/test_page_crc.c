/*
 * test_page_crc.c: Parquet page CRCs on read. Our writer stamps every page
 * by default (test_writer.c checks what it stamps); the reader refuses a
 * page whose bytes no longer match (one flipped bit is enough), naming the
 * file, row group, column and page; files without CRCs still read. The CRC covers a page's bytes as stored:
 * for v1 pages the compressed levels and values, for dictionary pages the
 * dictionary, for v2 pages (written by pyarrow, see
 * data/reader/make-fixtures.py) the uncompressed levels and the compressed
 * values together.
 */
#include <stdio.h>
#include <stdlib.h>

#include "test.h"
#include "tierlake/parquet.h"
#include "writer_test_files.h"

#define ROWS 1000
#define ROW_GROUP_ROWS 500
#define PAGE_ROWS 100
#define OPTIONAL_V2_FILE "lake/tests/data/reader/optional_v2_crc.parquet"

static int64_t value_of(int64_t row)
{
	return row * 7919 - 123456;
}

static bool present_of(int64_t row)
{
	return row % 9 != 4;
}

static void fill_values(tl_pq_batch *batch, int64_t first_row, int64_t n, const void *arg)
{
	(void)arg;
	batch->nrows = n;
	for (int64_t i = 0; i < n; i++) {
		batch->columns[0].v.i64[i] = value_of(first_row + i);
		batch->columns[0].valid[i] = present_of(first_row + i);
	}
}

/*
 * One optional int64 column "v", uncompressed so that a flipped bit is not
 * caught by a codec first: two row groups of five pages each. Only the
 * codec, the page layout and `dictionary` differ from the writer's defaults.
 */
static int write_values(const char *name, bool dictionary, const bool *crc, written *f, tl_error *err)
{
	tl_pq_schema *schema = wt_one_column_schema(wt_column("v", TL_PQ_INT64, false));
	tl_pq_writer_options o;
	tl_pq_writer_options_init(&o);
	o.codec = TL_PQ_UNCOMPRESSED;
	o.dictionary = dictionary;
	o.page_rows = PAGE_ROWS;
	o.row_group_rows = ROW_GROUP_ROWS;
	if (crc != NULL)
		o.write_page_crc = *crc;
	int rc = wt_write_generated(name, schema, &o, ROWS, 250, fill_values, NULL, f, err);
	tl_pq_schema_free(schema);
	return rc;
}

/* Writes `len` bytes to a scratch file named `name`; its path goes to `path`. */
static int save_bytes(const char *name, const uint8_t *data, size_t len, char *path, size_t path_len,
                      tl_error *err)
{
	wt_scratch_path(name, path, path_len);
	FILE *fp = fopen(path, "wb");
	if (fp == NULL)
		return tl_error_set(err, TL_ERR_IO, "cannot create %s", path);
	size_t put = fwrite(data, 1, len, fp);
	if (fclose(fp) != 0 || put != len)
		return tl_error_set(err, TL_ERR_IO, "cannot write %s", path);
	return 0;
}

/*
 * Copies f's bytes with one bit of byte `at` flipped into a scratch file and
 * reads it back as f's values; returns the read's result (err holds why it
 * failed).
 */
static int read_with_flip(const written *f, size_t at, int bit, char *path, size_t path_len, tl_error *err)
{
	uint8_t *copy = malloc(f->bytes.len);
	memcpy(copy, f->bytes.data, f->bytes.len);
	copy[at] ^= (uint8_t)(1u << bit);
	int rc = save_bytes("flipped", copy, f->bytes.len, path, path_len, err);
	free(copy);
	if (rc < 0)
		return -1;
	return wt_read_back_int64(path, ROWS, value_of, present_of, err);
}

/* Checks that err is the CRC error for page `page` of `column` in row group `row_group` at `offset`. */
static bool is_crc_error(const tl_error *err, const char *path, int row_group, const char *column, int page,
                         int64_t offset)
{
	char where[512];
	snprintf(where, sizeof(where), "%s: row group %d, column \"%s\", page %d at byte %lld: page CRC does not match", path,
	         row_group, column, page, (long long)offset);
	if (err->code == TL_ERR_CORRUPT && strstr(err->message, where) != NULL)
		return true;
	tl_test_fail(__FILE__, __LINE__, "expected \"%s\", got \"%s\"", where, err->message);
	return false;
}

/*
 * One flipped bit at the start, middle or end of any page (levels, values
 * or dictionary) is refused, and the error says where: file, row group,
 * column, page number within the chunk and the page's byte offset.
 */
TEST(page_crc_refuses_a_flipped_bit_in_any_page)
{
	tl_error err;
	tl_error_clear(&err);
	page_view *pages = wt_page_buffer();
	for (int dictionary = 0; dictionary < 2; dictionary++) {
		written f;
		CHECK_OK(write_values(dictionary ? "crc_dictionary" : "crc_plain", dictionary, NULL, &f, &err), &err);
		int flips = 0;
		for (int g = 0; g < 2; g++) {
			int npages;
			CHECK_OK(wt_chunk_pages(&f, wt_chunk_meta(&f, g, 0), pages, &npages, &err), &err);
			CHECK_INT(pages[0].h.type == PQ_PAGE_DICTIONARY, dictionary);
			for (int p = 0; p < npages; p++) {
				size_t body_at = (size_t)(pages[p].body - f.bytes.data);
				size_t spots[] = {0, pages[p].body_len / 2, pages[p].body_len - 1};
				for (int s = 0; s < 3; s++) {
					char path[256];
					tl_error_clear(&err);
					CHECK(read_with_flip(&f, body_at + spots[s], (p + s) % 8, path, sizeof(path), &err) < 0);
					CHECK(is_crc_error(&err, path, g, "v", p, pages[p].offset));
					flips++;
				}
			}
		}
		CHECK(flips >= 2 * 5 * 3);
		wt_written_free(&f);
	}
	free(pages);
}

/*
 * Without CRCs (files of writers that leave them out) the file still reads,
 * and a bit flipped inside a value decodes into a different value: exactly
 * what the CRC is there to refuse.
 */
TEST(page_crc_absent_files_still_read)
{
	tl_error err;
	tl_error_clear(&err);
	bool off = false;
	written f;
	CHECK_OK(write_values("crc_off", false, &off, &f, &err), &err);
	page_view *pages = wt_page_buffer();
	int npages;
	CHECK_OK(wt_chunk_pages(&f, wt_chunk_meta(&f, 0, 0), pages, &npages, &err), &err);
	for (int p = 0; p < npages; p++)
		CHECK(!pages[p].h.has_crc);
	CHECK_OK(wt_read_back_int64(f.path, ROWS, value_of, present_of, &err), &err);

	/* The last byte of a PLAIN page is the high byte of its last value. */
	char path[256];
	size_t last = (size_t)(pages[0].body - f.bytes.data) + pages[0].body_len - 1;
	CHECK(read_with_flip(&f, last, 0, path, sizeof(path), &err) < 0);
	CHECK(strstr(err.message, "differs") != NULL);
	CHECK(strstr(err.message, "CRC") == NULL);
	free(pages);
	wt_written_free(&f);
}

/*
 * pyarrow's v2 pages of an optional column: uncompressed definition levels,
 * then snappy-compressed values, one CRC over both. The file reads; a flip
 * in either part is refused.
 */
TEST(page_crc_of_v2_pages_covers_levels_and_values)
{
	tl_error err;
	tl_error_clear(&err);
	written f;
	memset(&f, 0, sizeof(f));
	tl_buf_init(&f.bytes);
	snprintf(f.path, sizeof(f.path), "%s", OPTIONAL_V2_FILE);
	CHECK_OK(wt_load_file(&f, &err), &err);
	page_view *pages = wt_page_buffer();
	int npages;
	CHECK_OK(wt_chunk_pages(&f, wt_chunk_meta(&f, 0, 0), pages, &npages, &err), &err);
	CHECK(npages >= 2);

	/* Every page checks out as it is; k is null every fifth row, else 3 * row. */
	tl_input *in = tl_input_from_memory(f.bytes.data, f.bytes.len, OPTIONAL_V2_FILE);
	tl_pq_reader *r = tl_pq_reader_open(in, &err);
	CHECK(r != NULL);
	tl_pq_batch *batch = tl_pq_reader_batch_new(r, 300);
	int64_t row = 0, n;
	while ((n = tl_pq_reader_next(r, batch, &err)) > 0)
		for (int64_t i = 0; i < n; i++, row++) {
			CHECK_INT(tl_vector_is_null(&batch->columns[0], i), row % 5 == 0);
			if (row % 5 != 0)
				CHECK_INT(batch->columns[0].v.i64[i], row * 3);
		}
	CHECK_OK(n, &err);
	CHECK_INT(row, 2000);
	tl_pq_batch_free(batch);
	tl_pq_reader_free(r);
	tl_input_close(in);

	for (int p = 0; p < npages; p++) {
		CHECK_INT(pages[p].h.type, PQ_PAGE_DATA_V2);
		CHECK(pages[p].h.has_crc);
		const pq_data_page_header_v2 *v2 = &pages[p].h.data_page_header_v2;
		CHECK(v2->definition_levels_byte_length > 0);
		size_t body_at = (size_t)(pages[p].body - f.bytes.data);
		size_t spots[] = {0, (size_t)v2->definition_levels_byte_length, pages[p].body_len - 1};
		for (int s = 0; s < 3; s++) {
			uint8_t *copy = malloc(f.bytes.len);
			memcpy(copy, f.bytes.data, f.bytes.len);
			copy[body_at + spots[s]] ^= 0x10;
			tl_input *bad = tl_input_from_memory(copy, f.bytes.len, "flipped_v2.parquet");
			tl_pq_reader *br = tl_pq_reader_open(bad, &err);
			CHECK(br != NULL);
			tl_pq_batch *bb = tl_pq_reader_batch_new(br, 300);
			tl_error_clear(&err);
			while ((n = tl_pq_reader_next(br, bb, &err)) > 0)
				;
			tl_pq_batch_free(bb);
			tl_pq_reader_free(br);
			tl_input_close(bad);
			free(copy);
			CHECK(n < 0);
			CHECK(is_crc_error(&err, "flipped_v2.parquet", 0, "k", p, pages[p].offset));
		}
	}
	free(pages);
	wt_written_free(&f);
}
