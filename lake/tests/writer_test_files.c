/*
 * writer_test_files.c: see writer_test_files.h.
 */
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "writer_test_files.h"

/* ------------------------------------------------------------ scratch files */

#define MAX_SCRATCH 256
static char scratch_dir[64];
static char *scratch_files[MAX_SCRATCH];
static int nscratch;

static void remove_scratch(void)
{
	for (int i = 0; i < nscratch; i++) {
		unlink(scratch_files[i]);
		free(scratch_files[i]);
	}
	if (scratch_dir[0])
		rmdir(scratch_dir);
}

void wt_scratch_path(const char *name, char *out, size_t len)
{
	if (scratch_dir[0] == '\0') {
		strcpy(scratch_dir, "/tmp/tierdb-writer-XXXXXX");
		if (mkdtemp(scratch_dir) == NULL) {
			perror("mkdtemp");
			exit(2);
		}
		atexit(remove_scratch);
	}
	snprintf(out, len, "%s/%s.parquet", scratch_dir, name);
	for (int i = 0; i < nscratch; i++)
		if (strcmp(scratch_files[i], out) == 0)
			return;
	if (nscratch < MAX_SCRATCH)
		scratch_files[nscratch++] = tl_strdup(out);
}

/* ------------------------------------------------------------ helpers */

tl_pq_column wt_column(const char *name, tl_pq_physical physical, bool required)
{
	tl_pq_column c;
	memset(&c, 0, sizeof(c));
	c.name = (char *)name;
	c.physical = physical;
	c.required = required;
	c.field_id = -1;
	return c;
}

tl_pq_schema *wt_one_column_schema(tl_pq_column c)
{
	tl_pq_schema *schema = tl_pq_schema_new();
	tl_pq_schema_add(schema, &c);
	return schema;
}

tl_pq_writer_options wt_uncompressed_options(void)
{
	tl_pq_writer_options o;
	tl_pq_writer_options_init(&o);
	o.codec = TL_PQ_UNCOMPRESSED;
	return o;
}


void wt_written_free(written *f)
{
	tl_buf_free(&f->bytes);
	pq_file_metadata_free(&f->md);
}

int wt_load_file(written *f, tl_error *err)
{
	tl_input *in = tl_input_open_file(f->path, err);
	if (in == NULL)
		return -1;
	size_t size = (size_t)in->size;
	int rc = tl_input_read(in, 0, tl_buf_extend(&f->bytes, size), size, err);
	tl_input_close(in);
	if (rc < 0)
		return -1;
	const uint8_t *d = f->bytes.data;
	if (size < 12 || memcmp(d, "PAR1", 4) != 0 || memcmp(d + size - 4, "PAR1", 4) != 0)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: no PAR1 magic at both ends", f->path);
	uint32_t footer_len = (uint32_t)d[size - 8] | (uint32_t)d[size - 7] << 8 | (uint32_t)d[size - 6] << 16 |
	                      (uint32_t)d[size - 5] << 24;
	if (footer_len > size - 12)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: footer length %u too large", f->path, footer_len);
	f->footer_start = size - 8 - footer_len;
	if (pq_file_metadata_decode(d + f->footer_start, footer_len, &f->md, err) < 0)
		return -1;
	f->data_end = f->footer_start;
	for (int32_t g = 0; g < f->md.nrow_groups; g++)
		for (int32_t c = 0; c < f->md.row_groups[g].ncolumns; c++) {
			const pq_column_chunk *cc = &f->md.row_groups[g].columns[c];
			if (cc->has_column_index && (size_t)cc->column_index_offset < f->data_end)
				f->data_end = (size_t)cc->column_index_offset;
			if (cc->has_offset_index && (size_t)cc->offset_index_offset < f->data_end)
				f->data_end = (size_t)cc->offset_index_offset;
		}
	return 0;
}

/* Yields the next batch to write, or NULL at the end. */
typedef const tl_pq_batch *(*batch_source)(void *state);

/* Streams the source's batches into a scratch file, then loads the file. */
static int write_from(const char *name, const tl_pq_schema *schema, const tl_pq_writer_options *opts,
                      batch_source next, void *state, written *f, tl_error *err)
{
	memset(f, 0, sizeof(*f));
	tl_buf_init(&f->bytes);
	wt_scratch_path(name, f->path, sizeof(f->path));
	tl_output *out = tl_output_create_file(f->path, 0, err);
	if (out == NULL)
		return -1;
	tl_pq_writer *w = tl_pq_writer_open(out, schema, opts, err);
	int rc = w ? 0 : -1;
	int64_t rows = 0;
	const tl_pq_batch *batch;
	while (rc == 0 && (batch = next(state)) != NULL) {
		rc = tl_pq_writer_write(w, batch, err);
		rows += batch->nrows;
	}
	if (rc == 0 && tl_pq_writer_rows_written(w) != rows)
		rc = tl_error_set(err, TL_ERR_INVALID, "rows_written %lld, expected %lld",
		                  (long long)tl_pq_writer_rows_written(w), (long long)rows);
	if (rc == 0)
		rc = tl_pq_writer_close(w, err);
	if (rc == 0)
		rc = out->finish(out, err);
	tl_pq_writer_free(w);
	tl_output_close(out);
	if (rc < 0)
		return -1;
	return wt_load_file(f, err);
}

typedef struct batch_list {
	tl_pq_batch *const *batches;
	int nbatches;
	int next;
} batch_list;

static const tl_pq_batch *next_listed(void *state)
{
	batch_list *list = state;
	return list->next < list->nbatches ? list->batches[list->next++] : NULL;
}

int wt_write_file(const char *name, const tl_pq_schema *schema, const tl_pq_writer_options *opts,
                  tl_pq_batch *const *batches, int nbatches, written *f, tl_error *err)
{
	batch_list list = {batches, nbatches, 0};
	return write_from(name, schema, opts, next_listed, &list, f, err);
}

typedef struct generated {
	tl_pq_batch *batch;       /* refilled for every write, as a streaming caller would */
	int64_t rows;
	int64_t next_row;
	wt_fill fill;
	const void *arg;
} generated;

static const tl_pq_batch *next_generated(void *state)
{
	generated *g = state;
	if (g->next_row >= g->rows)
		return NULL;
	int64_t n = g->rows - g->next_row;
	if (n > g->batch->capacity)
		n = g->batch->capacity;
	g->fill(g->batch, g->next_row, n, g->arg);
	g->next_row += n;
	return g->batch;
}

int wt_write_generated(const char *name, const tl_pq_schema *schema, const tl_pq_writer_options *opts, int64_t rows,
                       int64_t batch_rows, wt_fill fill, const void *arg, written *f, tl_error *err)
{
	generated g = {tl_pq_batch_new(schema, batch_rows), rows, 0, fill, arg};
	int rc = write_from(name, schema, opts, next_generated, &g, f, err);
	tl_pq_batch_free(g.batch);
	return rc;
}

int wt_write_one(const char *name, const tl_pq_schema *schema, const tl_pq_writer_options *opts,
                     tl_pq_batch *batch, written *f, tl_error *err)
{
	return wt_write_file(name, schema, opts, &batch, 1, f, err);
}



/*
 * Decodes every page header of a chunk, checking that the pages tile the
 * chunk exactly and that the chunk's totals count headers and bodies as the
 * spec says.
 */
int wt_chunk_pages(const written *f, const pq_column_meta *m, page_view *pages, int *npages, tl_error *err)
{
	int64_t start = m->has_dictionary_page_offset ? m->dictionary_page_offset : m->data_page_offset;
	int64_t end = start + m->total_compressed_size;
	if (start < 4 || end > (int64_t)f->data_end)
		return tl_error_set(err, TL_ERR_CORRUPT, "chunk [%lld, %lld) outside the data", (long long)start,
		                    (long long)end);
	int64_t pos = start, uncompressed = 0;
	int n = 0;
	while (pos < end) {
		if (n == MAX_PAGES)
			return tl_error_set(err, TL_ERR_CORRUPT, "too many pages");
		page_view *p = &pages[n++];
		size_t consumed;
		if (pq_page_header_decode(f->bytes.data + pos, (size_t)(end - pos), &p->h, &consumed, err) < 0)
			return -1;
		p->offset = pos;
		p->body = f->bytes.data + pos + consumed;
		p->body_len = (size_t)p->h.compressed_page_size;
		uncompressed += (int64_t)consumed + p->h.uncompressed_page_size;
		pos += (int64_t)consumed + p->h.compressed_page_size;
	}
	if (pos != end)
		return tl_error_set(err, TL_ERR_CORRUPT, "pages end at %lld, chunk at %lld", (long long)pos,
		                    (long long)end);
	if (uncompressed != m->total_uncompressed_size)
		return tl_error_set(err, TL_ERR_CORRUPT, "uncompressed total %lld, pages sum to %lld",
		                    (long long)m->total_uncompressed_size, (long long)uncompressed);
	*npages = n;
	return 0;
}

page_view *wt_page_buffer(void)
{
	return tl_calloc(MAX_PAGES, sizeof(page_view));
}

bool wt_has_encoding(const pq_column_meta *m, int encoding)
{
	for (int i = 0; i < m->nencodings; i++)
		if (m->encodings[i] == encoding)
			return true;
	return false;
}

int32_t wt_stat_i32(tl_bytes b)
{
	int32_t v = 0;
	if (b.len == 4)
		memcpy(&v, b.ptr, 4);
	return v;
}

int64_t wt_stat_i64(tl_bytes b)
{
	int64_t v = 0;
	if (b.len == 8)
		memcpy(&v, b.ptr, 8);
	return v;
}

float wt_stat_f32(tl_bytes b)
{
	float v = NAN;
	if (b.len == 4)
		memcpy(&v, b.ptr, 4);
	return v;
}

double wt_stat_f64(tl_bytes b)
{
	double v = NAN;
	if (b.len == 8)
		memcpy(&v, b.ptr, 8);
	return v;
}

bool wt_bytes_equal(tl_bytes b, const void *data, size_t len)
{
	return b.len == len && (len == 0 || memcmp(b.ptr, data, len) == 0);
}

const pq_statistics *wt_chunk_stats(const written *f, int row_group, int column)
{
	return &f->md.row_groups[row_group].columns[column].meta_data.statistics;
}

const pq_column_meta *wt_chunk_meta(const written *f, int row_group, int column)
{
	return &f->md.row_groups[row_group].columns[column].meta_data;
}

tl_bytes wt_text(const char *s)
{
	tl_bytes b;
	b.ptr = (const uint8_t *)s;
	b.len = (uint32_t)strlen(s);
	return b;
}

uint64_t wt_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

int wt_read_back(const char *path, int64_t rows, int64_t batch_rows, wt_row_check check, const void *arg,
                 tl_error *err)
{
	tl_input *in = tl_input_open_file(path, err);
	if (in == NULL)
		return -1;
	tl_pq_reader *r = tl_pq_reader_open(in, err);
	int rc = r ? 0 : -1;
	tl_pq_batch *batch = r ? tl_pq_reader_batch_new(r, batch_rows) : NULL;
	int64_t row = 0, n = 0;
	while (rc == 0 && (n = tl_pq_reader_next(r, batch, err)) > 0)
		for (int64_t i = 0; i < n && rc == 0; i++, row++)
			rc = check(batch, i, row, arg, err);
	if (rc == 0 && n < 0)
		rc = -1;
	if (rc == 0 && row != rows)
		rc = tl_error_set(err, TL_ERR_CORRUPT, "read %lld rows, wrote %lld", (long long)row, (long long)rows);
	tl_pq_batch_free(batch);
	tl_pq_reader_free(r);
	tl_input_close(in);
	return rc;
}

typedef struct int64_expectation {
	int64_t (*value)(int64_t row);
	bool (*present)(int64_t row);
} int64_expectation;

static int check_int64_row(const tl_pq_batch *batch, int64_t slot, int64_t row, const void *arg, tl_error *err)
{
	const int64_expectation *e = arg;
	bool present = e->present ? e->present(row) : true;
	const tl_vector *vec = &batch->columns[0];
	if (tl_vector_is_null(vec, slot) == present || (present && vec->v.i64[slot] != e->value(row)))
		return tl_error_set(err, TL_ERR_CORRUPT, "row %lld differs", (long long)row);
	return 0;
}

int wt_read_back_int64(const char *path, int64_t rows, int64_t (*value)(int64_t), bool (*present)(int64_t),
                       tl_error *err)
{
	int64_expectation e = {value, present};
	return wt_read_back(path, rows, 1000, check_int64_row, &e, err);
}
