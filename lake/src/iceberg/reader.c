/*
 * reader.c: reading the rows of planned Iceberg scan tasks, with their
 * position and equality deletes applied, as column batches.
 *
 * One data file is open at a time. For each task the reader loads the
 * positions its position deletes name for that file and the key sets of
 * its equality deletes (cached by path for the reader's life, since a
 * global equality delete applies to many data files), then reads the file
 * batch by batch: each Parquet batch lies within one row group and row
 * groups follow each other, so a row's file position is the count of rows
 * read before it. Surviving rows are compacted into the caller's batch in
 * the table's Parquet form; strings stay views into the file batch, valid
 * until the next call.
 *
 * Output columns may be deferred (tl_ice_reader_defer): a batch then
 * arrives without them, and tl_ice_reader_load decodes them for that
 * batch when the caller's filter kept some of its rows. A batch that
 * deletes touch is compacted row by row, so it is loaded whole at once;
 * so is every batch of a file with equality deletes, whose keys may be
 * among the deferred columns.
 *
 * Row groups whose statistics rule the scan's filter out are skipped. The
 * Parquet reader can restrict itself to one row group only, so a file with
 * skipped row groups is read through one Parquet reader per kept row group
 * (the footer is parsed again each time); a file with none skipped is
 * read through one reader.
 */
#include <stdlib.h>
#include <string.h>

#include "iceberg/reader_internal.h"

/* Equality deletes of one task sharing the same equality_ids. */
typedef struct eq_group {
	int nids;
	const int32_t *ids;
	int *columns;            /* their columns in the data file projection */
	int nsets;
	ice_eq_set **sets;       /* owned by the reader's cache */
} eq_group;

struct tl_ice_reader {
	const tl_ice_schema *schema;
	const tl_ice_expr *filter;
	const tl_ice_scan_task **tasks;
	int ntasks;
	int next_task;
	int nout;
	const tl_ice_field **out_fields;
	tl_pq_schema *out_schema;
	tl_ice_reader_stats stats;
	ice_eq_set **eq_cache;       /* every equality delete file loaded so far */
	int neq_cache;
	tl_buf key;
	bool *deferred;              /* per output column, or NULL */
	bool failed;
	tl_error failure;

	/* The data file being read (in == NULL between files). */
	const tl_ice_scan_task *task;
	tl_input *in;
	tl_pq_reader *pq;
	ice_file_projection fp;
	tl_pq_batch *src;
	int64_t next_position;       /* file position of the next row read */
	int row_group;               /* the row group rows come from, -1 before the first */
	int64_t *row_group_start;    /* file position of each row group's first row */
	int64_t pages_read_before;   /* by the Parquet readers closed so far */
	int64_t pages_skipped_before;
	int64_t bytes_read_before;
	bool *keep_row_group;        /* not empty, not ruled out by the filter */
	bool per_row_group;          /* some row group is skipped: one Parquet reader per kept one */
	int narrowed_to;             /* the row group that reader reads */
	int nkept;                   /* row groups to read */
	bool *source_deferred;       /* per file projection column: deferred in the Parquet reader */
	bool load_pending;           /* the last batch still lacks its deferred columns */
	int64_t *deleted;            /* sorted positions to drop */
	size_t ndeleted;
	size_t deleted_cursor;
	eq_group *groups;
	int ngroups;
};

/* ------------------------------------------------------------ the output */

static int check_output_fields(tl_ice_reader *r, const int32_t *field_ids, int nfields, tl_error *err)
{
	for (int i = 0; i < nfields; i++) {
		const tl_ice_field *f = ice_top_level_field(r->schema, field_ids[i]);
		if (f == NULL)
			return tl_error_set(err, TL_ERR_NOT_FOUND, "field id %d is not a top-level field of the scanned schema",
			                    field_ids[i]);
		for (int k = 0; k < i; k++)
			if (field_ids[k] == field_ids[i])
				return tl_error_set(err, TL_ERR_INVALID, "field id %d is requested twice", field_ids[i]);
		r->out_fields[i] = f;
	}
	return 0;
}

static int build_output(tl_ice_reader *r, const int32_t *field_ids, int nfields, tl_error *err)
{
	if (field_ids == NULL)
		nfields = r->schema->nfields;
	r->nout = nfields;
	r->out_fields = tl_calloc((size_t)(nfields ? nfields : 1), sizeof(*r->out_fields));
	if (r->out_fields == NULL)
		return tl_error_nomem(err, "opening a reader");
	if (field_ids == NULL) {
		for (int i = 0; i < nfields; i++)
			r->out_fields[i] = &r->schema->fields[i];
	} else if (check_output_fields(r, field_ids, nfields, err) < 0) {
		return -1;
	}
	r->out_schema = tl_pq_schema_new();
	if (r->out_schema == NULL)
		return tl_error_nomem(err, "opening a reader");
	for (int i = 0; i < nfields; i++) {
		tl_pq_column col;
		if (tl_ice_field_to_pq_column(r->out_fields[i], &col, err) < 0)
			return -1;
		if (tl_pq_schema_add(r->out_schema, &col) < 0)
			return tl_error_nomem(err, "opening a reader");
	}
	/* No columns is fine (counting rows); the validator wants at least one. */
	return nfields == 0 ? 0 : tl_pq_schema_validate(r->out_schema, err);
}

tl_ice_reader *ice_reader_new(const tl_ice_schema *schema, const tl_ice_expr *filter,
                              const tl_ice_scan_task *const *tasks, int ntasks, const int32_t *field_ids,
                              int nfields, tl_error *err)
{
	if (schema == NULL || ntasks < 0 || (field_ids != NULL && nfields < 0)) {
		tl_error_set(err, TL_ERR_INVALID, "a reader needs a schema, a task count and a field count of at least 0");
		return NULL;
	}
	tl_ice_reader *r = tl_calloc(1, sizeof(*r));
	if (r == NULL) {
		tl_error_nomem(err, "opening a reader");
		return NULL;
	}
	r->schema = schema;
	r->filter = filter;
	r->ntasks = ntasks;
	r->row_group = -1;
	tl_buf_init(&r->key);
	r->tasks = tl_malloc(sizeof(*r->tasks) * (size_t)(ntasks ? ntasks : 1));
	if (r->tasks == NULL) {
		tl_ice_reader_free(r);
		tl_error_nomem(err, "opening a reader");
		return NULL;
	}
	if (ntasks > 0)
		memcpy(r->tasks, tasks, sizeof(*r->tasks) * (size_t)ntasks);
	if (build_output(r, field_ids, nfields, err) < 0) {
		tl_ice_reader_free(r);
		return NULL;
	}
	return r;
}

tl_ice_reader *tl_ice_reader_open(const tl_ice_scan *scan, const int32_t *field_ids, int nfields, tl_error *err)
{
	int ntasks = tl_ice_scan_ntasks(scan);
	const tl_ice_scan_task **tasks = tl_malloc(sizeof(*tasks) * (size_t)(ntasks > 0 ? ntasks : 1));
	if (tasks == NULL) {
		tl_error_nomem(err, "opening a reader");
		return NULL;
	}
	for (int i = 0; i < ntasks; i++)
		tasks[i] = tl_ice_scan_task_at(scan, i);
	tl_ice_reader *r = ice_reader_new(tl_ice_scan_schema(scan), tl_ice_scan_filter(scan), tasks, ntasks, field_ids, nfields, err);
	tl_free(tasks);
	return r;
}

tl_ice_reader *tl_ice_reader_open_task(const tl_ice_scan *scan, int task, const int32_t *field_ids, int nfields,
                                       tl_error *err)
{
	int ntasks = tl_ice_scan_ntasks(scan);
	if (task < 0 || task >= ntasks) {
		tl_error_set(err, TL_ERR_INVALID, "task %d is out of range (the scan has %d)", task, ntasks);
		return NULL;
	}
	const tl_ice_scan_task *one = tl_ice_scan_task_at(scan, task);
	return ice_reader_new(tl_ice_scan_schema(scan), tl_ice_scan_filter(scan), &one, 1, field_ids, nfields, err);
}

int tl_ice_reader_defer(tl_ice_reader *r, const bool *deferred, tl_error *err)
{
	if (r->next_task > 0)
		return tl_error_set(err, TL_ERR_INVALID, "deferred columns must be chosen before reading starts");
	tl_free(r->deferred);
	r->deferred = NULL;
	if (deferred != NULL && r->nout > 0) {
		r->deferred = tl_malloc(sizeof(bool) * (size_t)r->nout);
		if (r->deferred == NULL)
			return tl_error_nomem(err, "choosing deferred columns");
		memcpy(r->deferred, deferred, sizeof(bool) * (size_t)r->nout);
	}
	return 0;
}

const tl_pq_schema *tl_ice_reader_schema(const tl_ice_reader *r)
{
	return r->out_schema;
}

tl_pq_batch *tl_ice_reader_batch_new(const tl_ice_reader *r, int64_t capacity)
{
	return tl_pq_batch_new(r->out_schema, capacity);
}

const tl_ice_reader_stats *tl_ice_reader_stats_get(const tl_ice_reader *r)
{
	return &r->stats;
}

const char *tl_ice_reader_current_file(const tl_ice_reader *r)
{
	return r->task != NULL ? r->task->file.file_path : NULL;
}

int64_t tl_ice_reader_current_file_sequence(const tl_ice_reader *r)
{
	return r->task != NULL ? r->task->sequence_number : -1;
}

/* ------------------------------------------------------- opening a task */

/* Index of the field with this id among fields[0..n), or -1. */
static int find_field(const tl_ice_field *const *fields, int n, int32_t id)
{
	for (int i = 0; i < n; i++)
		if (fields[i]->id == id)
			return i;
	return -1;
}

/*
 * The fields to read from the task's data file: the output's, then any
 * equality delete field not among them. *fields is malloc'd.
 */
static int needed_fields(const tl_ice_reader *r, const tl_ice_scan_task *t, const tl_ice_field ***fields, int *n,
                         tl_error *err)
{
	/* Every field added is a distinct top-level field of the schema. */
	int cap = r->nout + r->schema->nfields;
	const tl_ice_field **out = tl_malloc(sizeof(*out) * (size_t)(cap ? cap : 1));
	if (out == NULL)
		return tl_error_nomem(err, "opening %s", t->file.file_path);
	int count = r->nout;
	memcpy(out, r->out_fields, sizeof(*out) * (size_t)r->nout);
	for (int d = 0; d < t->ndeletes; d++) {
		const tl_ice_data_file *df = &t->deletes[d]->file;
		if (df->content != TL_ICE_CONTENT_EQUALITY_DELETES)
			continue;
		for (uint32_t k = 0; k < df->n_equality_ids; k++) {
			const tl_ice_field *f = ice_top_level_field(r->schema, df->equality_ids[k]);
			if (f == NULL) {
				tl_free(out);
				return tl_error_set(err, TL_ERR_UNSUPPORTED,
				                    "reading delete file %s: equality field id %d is not a top-level field of "
				                    "the scanned schema",
				                    df->file_path, df->equality_ids[k]);
			}
			if (find_field(out, count, f->id) < 0)
				out[count++] = f;
		}
	}
	*fields = out;
	*n = count;
	return 0;
}

/* The cached key set of an equality delete file, loading it on first use. */
static ice_eq_set *eq_set_for(tl_ice_reader *r, const tl_ice_delete_file *df, tl_error *err)
{
	for (int i = 0; i < r->neq_cache; i++) {
		const ice_eq_set *set = r->eq_cache[i];
		if (strcmp(ice_eq_set_path(set), df->file.file_path) != 0)
			continue;
		/* The data file projection was built from this task's equality_ids. */
		if ((uint32_t)ice_eq_set_nids(set) != df->file.n_equality_ids ||
		    memcmp(ice_eq_set_ids(set), df->file.equality_ids, sizeof(int32_t) * df->file.n_equality_ids) != 0) {
			tl_error_set(err, TL_ERR_CORRUPT, "delete file %s is listed twice with different equality_ids",
			             df->file.file_path);
			return NULL;
		}
		return r->eq_cache[i];
	}
	ice_eq_set *set = ice_eq_set_load(r->schema, df, err);
	if (set == NULL)
		return NULL;
	ice_eq_set **cache = tl_realloc(r->eq_cache, sizeof(*r->eq_cache) * (size_t)(r->neq_cache + 1));
	if (cache == NULL) {
		ice_eq_set_free(set);
		tl_error_nomem(err, "loading equality deletes");
		return NULL;
	}
	r->eq_cache = cache;
	r->eq_cache[r->neq_cache++] = set;
	return set;
}

/* NULL when out of memory. */
static eq_group *group_for(tl_ice_reader *r, const ice_eq_set *set, const tl_ice_field *const *fields, int nfields)
{
	int nids = ice_eq_set_nids(set);
	const int32_t *ids = ice_eq_set_ids(set);
	for (int g = 0; g < r->ngroups; g++)
		if (r->groups[g].nids == nids && memcmp(r->groups[g].ids, ids, sizeof(int32_t) * (size_t)nids) == 0)
			return &r->groups[g];
	int *columns = tl_malloc(sizeof(int) * (size_t)nids);
	eq_group *groups = columns ? tl_realloc(r->groups, sizeof(*r->groups) * (size_t)(r->ngroups + 1)) : NULL;
	if (groups == NULL) {
		tl_free(columns);
		return NULL;
	}
	r->groups = groups;
	eq_group *g = &r->groups[r->ngroups++];
	memset(g, 0, sizeof(*g));
	g->nids = nids;
	g->ids = ids;
	g->columns = columns;
	for (int k = 0; k < nids; k++)
		g->columns[k] = find_field(fields, nfields, ids[k]);
	return g;
}

/* Loads the task's equality deletes into groups keyed by their equality ids. */
static int load_equality_deletes(tl_ice_reader *r, const tl_ice_field *const *fields, int nfields, tl_error *err)
{
	const tl_ice_scan_task *t = r->task;
	for (int d = 0; d < t->ndeletes; d++) {
		if (t->deletes[d]->file.content != TL_ICE_CONTENT_EQUALITY_DELETES)
			continue;
		ice_eq_set *set = eq_set_for(r, t->deletes[d], err);
		if (set == NULL)
			return -1;
		eq_group *g = group_for(r, set, fields, nfields);
		ice_eq_set **sets = g ? tl_realloc(g->sets, sizeof(*g->sets) * (size_t)(g->nsets + 1)) : NULL;
		if (sets == NULL)
			return tl_error_nomem(err, "loading equality deletes");
		g->sets = sets;
		g->sets[g->nsets++] = set;
	}
	return 0;
}

/* Adds the page and byte counts of the open Parquet reader to the ones kept, before it goes. */
static void keep_page_counts(tl_ice_reader *r)
{
	if (r->pq == NULL)
		return;
	int64_t read, skipped, reads, bytes;
	tl_pq_reader_page_counts(r->pq, &read, &skipped);
	tl_pq_reader_io_counts(r->pq, &reads, &bytes);
	r->pages_read_before += read;
	r->pages_skipped_before += skipped;
	r->bytes_read_before += bytes;
	r->stats.pages_read = r->pages_read_before;
	r->stats.pages_skipped = r->pages_skipped_before;
	r->stats.bytes_read = r->bytes_read_before;
}

/* Brings the page and byte counts in the statistics up to date with the open Parquet reader. */
static void update_page_counts(tl_ice_reader *r)
{
	int64_t read, skipped, reads, bytes;
	tl_pq_reader_page_counts(r->pq, &read, &skipped);
	tl_pq_reader_io_counts(r->pq, &reads, &bytes);
	r->stats.pages_read = r->pages_read_before + read;
	r->stats.pages_skipped = r->pages_skipped_before + skipped;
	r->stats.bytes_read = r->bytes_read_before + bytes;
}

static void close_file(tl_ice_reader *r)
{
	tl_pq_batch_free(r->src);
	r->src = NULL;
	ice_fp_free(&r->fp);
	keep_page_counts(r);
	tl_pq_reader_free(r->pq);
	r->pq = NULL;
	tl_input_close(r->in);
	r->in = NULL;
	tl_free(r->row_group_start);
	r->row_group_start = NULL;
	tl_free(r->keep_row_group);
	r->keep_row_group = NULL;
	tl_free(r->source_deferred);
	r->source_deferred = NULL;
	r->load_pending = false;
	tl_free(r->deleted);
	r->deleted = NULL;
	r->ndeleted = 0;
	r->deleted_cursor = 0;
	for (int g = 0; g < r->ngroups; g++) {
		tl_free(r->groups[g].columns);
		tl_free(r->groups[g].sets);
	}
	tl_free(r->groups);
	r->groups = NULL;
	r->ngroups = 0;
	r->task = NULL;
}

/*
 * Restricts the read of row group g to the rows its page indexes say the
 * filter may match. Pruning is an optimisation: when it cannot be judged,
 * every row is read.
 */
static int select_pages(tl_ice_reader *r, int g, tl_error *err)
{
	tl_pq_row_range *ranges;
	int nranges;
	if (ice_page_ranges(r->pq, &r->task->file, g, r->schema, r->filter, &ranges, &nranges) == 0)
		return 0;
	int rc = tl_pq_reader_select_rows(r->pq, g, ranges, nranges, err);
	tl_free(ranges);
	return rc;
}

/*
 * Decides which row groups to read and where each starts, and which of
 * their pages. Returns how many row groups will be read; with some
 * skipped, the reader is narrowed to the first.
 */
static int plan_row_groups(tl_ice_reader *r, tl_error *err)
{
	int ngroups = tl_pq_reader_num_row_groups(r->pq);
	size_t count = (size_t)(ngroups ? ngroups : 1);
	r->row_group_start = tl_malloc(sizeof(int64_t) * count);
	r->keep_row_group = tl_malloc(sizeof(bool) * count);
	if (r->row_group_start == NULL || r->keep_row_group == NULL)
		return tl_error_nomem(err, "planning row groups");
	int64_t start = 0;
	for (int g = 0; g < ngroups; g++) {
		r->row_group_start[g] = start;
		start += tl_pq_reader_row_group_rows(r->pq, g);
	}
	int skipped = ice_row_groups_to_read(r->pq, &r->task->file, r->schema, r->filter, r->keep_row_group);
	int by_bloom = ice_row_groups_by_bloom(r->pq, r->schema, r->filter, r->keep_row_group);
	r->stats.row_groups_skipped += skipped;
	r->stats.row_groups_skipped_by_bloom += by_bloom;
	r->per_row_group = skipped + by_bloom > 0;
	int first = -1, kept = 0;
	for (int g = 0; g < ngroups; g++) {
		if (r->keep_row_group[g]) {
			kept++;
			if (first < 0)
				first = g;
		}
	}
	r->narrowed_to = first;
	if (r->per_row_group && first >= 0 &&
	    (tl_pq_reader_select_row_group(r->pq, first, err) < 0 || select_pages(r, first, err) < 0))
		return -1;
	for (int g = 0; !r->per_row_group && g < ngroups; g++)
		if (r->keep_row_group[g] && select_pages(r, g, err) < 0)
			return -1;
	return kept;
}

/*
 * Defers, in the file's Parquet reader, the file columns of the deferred
 * output columns; none when the file has equality deletes.
 */
static int defer_sources(tl_ice_reader *r, tl_error *err)
{
	if (r->deferred == NULL || r->ngroups > 0)
		return 0;
	if (r->source_deferred == NULL) {
		int nsources = r->fp.nprojection;
		r->source_deferred = tl_calloc((size_t)(nsources ? nsources : 1), sizeof(bool));
		if (r->source_deferred == NULL)
			return tl_error_nomem(err, "choosing deferred columns");
		for (int c = 0; c < r->nout; c++)
			if (r->deferred[c] && r->fp.columns[c].source >= 0)
				r->source_deferred[r->fp.columns[c].source] = true;
	}
	return tl_pq_reader_defer(r->pq, r->source_deferred, err);
}

static int open_task(tl_ice_reader *r, const tl_ice_scan_task *t, tl_error *err)
{
	const char *path = t->file.file_path;
	const tl_ice_field **fields = NULL;
	int nfields = 0;
	if (needed_fields(r, t, &fields, &nfields, err) < 0)
		return -1;
	r->task = t;
	r->next_position = 0;
	r->row_group = -1;
	if (ice_fp_open_file(path, t->file.file_format, fields, nfields, &r->in, &r->pq, &r->fp, err) < 0) {
		ice_error_name_file(err, "data file", path);
		tl_free(fields);
		r->task = NULL;
		return -1;
	}
	r->stats.files_read++;
	int kept = plan_row_groups(r, err);
	r->nkept = kept;
	if (kept < 0) {
		ice_error_name_file(err, "data file", path);
		tl_free(fields);
		close_file(r);
		return -1;
	}
	/* Deletes matter only when rows are read. */
	const tl_ice_delete_file *const *deletes = t->deletes;
	if (kept > 0 && (ice_positions_load(path, deletes, t->ndeletes, &r->deleted, &r->ndeleted, err) < 0 ||
	                 load_equality_deletes(r, fields, nfields, err) < 0 || defer_sources(r, err) < 0)) {
		tl_free(fields);
		close_file(r);
		return -1;
	}
	tl_free(fields);
	return 0;
}

/* --------------------------------------------------------------- reading */

static bool position_deleted(tl_ice_reader *r, int64_t pos)
{
	while (r->deleted_cursor < r->ndeleted && r->deleted[r->deleted_cursor] < pos)
		r->deleted_cursor++;
	return r->deleted_cursor < r->ndeleted && r->deleted[r->deleted_cursor] == pos;
}

/* 1 when row `row` of the file batch matches an equality delete, 0 if not, -1 on error. */
static int equality_deleted(tl_ice_reader *r, int64_t row, tl_error *err)
{
	for (int g = 0; g < r->ngroups; g++) {
		const eq_group *group = &r->groups[g];
		tl_buf_reset(&r->key);
		for (int k = 0; k < group->nids; k++) {
			const ice_fp_column *c = &r->fp.columns[group->columns[k]];
			ice_value v;
			if (ice_fp_read(c, r->src, row, &v, err) < 0)
				return -1;
			ice_value_key(&c->out, &v, &r->key);
		}
		if (tl_buf_check(&r->key, err, "matching equality deletes") < 0)
			return -1;
		for (int s = 0; s < group->nsets; s++)
			if (ice_eq_set_contains(group->sets[s], r->key.data, r->key.len))
				return 1;
	}
	return 0;
}

/*
 * Whether a column's values go from the file batch to the output as they
 * are: the same physical type and no unit scaling (the common case of a
 * file written with the table's own schema). Byte arrays qualify too: both
 * batches hold views, and what they view lives until the next batch.
 */
static bool column_is_verbatim(const ice_fp_column *c)
{
	if (c->source < 0 || c->source_physical != c->out.physical)
		return false;
	switch (c->conv) {
	case ICE_CONV_INTEGER: return c->mul == 1 && c->div == 1;
	case ICE_CONV_BOOLEAN:
	case ICE_CONV_FLOAT:
	case ICE_CONV_TO_DOUBLE:
	case ICE_CONV_BYTES: return true;
	default: return false;
	}
}

/* Bytes per value in a batch vector of physical type p. */
static size_t physical_width(tl_pq_physical p)
{
	switch (p) {
	case TL_PQ_BOOLEAN: return 1;
	case TL_PQ_INT32:
	case TL_PQ_FLOAT: return 4;
	case TL_PQ_BYTE_ARRAY:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY: return sizeof(tl_bytes);
	default: return 8;
	}
}

/*
 * Copies a verbatim column's n values and validity with memcpy; false when
 * it holds nulls the output cannot take (a required field, whose null the
 * row-by-row path reports as an error).
 */
static bool copy_verbatim(const ice_fp_column *c, const tl_vector *src, tl_vector *dst, int64_t n)
{
	if (src->valid != NULL && memchr(src->valid, 0, (size_t)n) != NULL) {
		if (dst->valid == NULL || c->field->required)
			return false;
		memcpy(dst->valid, src->valid, (size_t)n);
	} else if (dst->valid != NULL) {
		memset(dst->valid, 1, (size_t)n);
	}
	/* The value arrays of the union share one pointer; the width says how many bytes. */
	memcpy(dst->v.i64, src->v.i64, (size_t)n * physical_width(c->out.physical));
	return true;
}

/*
 * Output column c of a batch no delete touches: every row survives, so the
 * column is copied whole, with memcpy when verbatim, else value by value.
 */
static int copy_column(tl_ice_reader *r, tl_pq_batch *out, int c, tl_error *err)
{
	const ice_fp_column *col = &r->fp.columns[c];
	int64_t n = r->src->nrows;
	if (column_is_verbatim(col) && copy_verbatim(col, &r->src->columns[col->source], &out->columns[c], n))
		return 0;
	for (int64_t row = 0; row < n; row++) {
		ice_value v;
		if (ice_fp_read(col, r->src, row, &v, err) < 0)
			return -1;
		if (!ice_value_store(&r->out_schema->columns[c], &v, &out->columns[c], row, &out->arena))
			return tl_error_nomem(err, "reading a value");
	}
	return 0;
}

static bool is_deferred(const tl_ice_reader *r, int c)
{
	return r->source_deferred != NULL && r->deferred[c];
}

/* Decodes the file columns of deferred output columns for the current file batch. */
static int load_sources(tl_ice_reader *r, tl_error *err)
{
	for (int c = 0; c < r->nout; c++) {
		int source = r->fp.columns[c].source;
		if (is_deferred(r, c) && source >= 0 && tl_pq_reader_load_column(r->pq, r->src, source, err) < 0)
			return -1;
	}
	return 0;
}

/* Whether any delete applies to a row of the current file batch. */
static bool deletes_touch_batch(const tl_ice_reader *r)
{
	return r->ngroups > 0 || (r->deleted_cursor < r->ndeleted &&
	                          r->deleted[r->deleted_cursor] < r->next_position + r->src->nrows);
}

/*
 * Fills the output batch from the file batch: the columns that are not
 * deferred when no delete touches it (the rest wait for
 * tl_ice_reader_load), else the rows no delete removes, every column.
 * Returns the output's row count.
 */
static int64_t fill_output(tl_ice_reader *r, tl_pq_batch *out, tl_error *err)
{
	if (!deletes_touch_batch(r)) {
		for (int c = 0; c < r->nout; c++) {
			if (is_deferred(r, c))
				r->load_pending = true;
			else if (copy_column(r, out, c, err) < 0)
				return -1;
		}
		return r->src->nrows;
	}
	if (r->source_deferred != NULL && load_sources(r, err) < 0)
		return -1;
	int64_t kept = 0;
	int64_t base = r->next_position;
	for (int64_t row = 0; row < r->src->nrows; row++) {
		if (position_deleted(r, base + row)) {
			r->stats.rows_deleted++;
			continue;
		}
		int eq = equality_deleted(r, row, err);
		if (eq < 0)
			return -1;
		if (eq) {
			r->stats.rows_deleted++;
			continue;
		}
		for (int c = 0; c < r->nout; c++) {
			ice_value v;
			if (ice_fp_read(&r->fp.columns[c], r->src, row, &v, err) < 0)
				return -1;
			if (!ice_value_store(&r->out_schema->columns[c], &v, &out->columns[c], kept, &out->arena))
				return tl_error_nomem(err, "reading a value");
		}
		kept++;
	}
	return kept;
}

/* The next row group to read after g, or the row group count. */
static int next_kept_row_group(const tl_ice_reader *r, int g)
{
	int ngroups = tl_pq_reader_num_row_groups(r->pq);
	do
		g++;
	while (g < ngroups && !r->keep_row_group[g]);
	return g;
}

/*
 * Sets the file position of the batch just read from where the Parquet
 * reader says it starts (a batch's rows are consecutive, but pages the
 * filter rules out leave gaps between batches), so position deletes and
 * callers see each row's exact position.
 */
static int account_rows(tl_ice_reader *r, tl_error *err)
{
	int g;
	int64_t first;
	tl_pq_reader_batch_position(r->pq, &g, &first);
	if (g < 0 || g >= tl_pq_reader_num_row_groups(r->pq) || !r->keep_row_group[g])
		return tl_error_set(err, TL_ERR_CORRUPT, "rows came from row group %d, which was not to be read", g);
	if (g != r->row_group) {
		r->row_group = g;
		r->stats.row_groups_read++;
	}
	r->next_position = r->row_group_start[g] + first;
	/* Deletes of rows passed over are of no more use. */
	while (r->deleted_cursor < r->ndeleted && r->deleted[r->deleted_cursor] < r->next_position)
		r->deleted_cursor++;
	update_page_counts(r);
	return 0;
}

/* Replaces the Parquet reader with one narrowed to row group g of the same file. */
static int reopen_at_row_group(tl_ice_reader *r, int g, tl_error *err)
{
	keep_page_counts(r);
	tl_pq_reader_free(r->pq);
	r->pq = tl_pq_reader_open(r->in, err);
	if (r->pq == NULL)
		return -1;
	if (ice_fp_project(&r->fp, r->pq, err) < 0 || tl_pq_reader_select_row_group(r->pq, g, err) < 0 ||
	    select_pages(r, g, err) < 0 || defer_sources(r, err) < 0)
		return -1;
	r->row_group = -1;  /* the narrowed reader reports row group g from its first batch */
	return 0;
}

/* The next batch of the open file: rows (> 0), 0 at its end, -1 on error. */
static int64_t next_file_batch(tl_ice_reader *r, tl_error *err)
{
	for (;;) {
		int64_t n = tl_pq_reader_next(r->pq, r->src, err);
		if (n != 0 || !r->per_row_group)
			return n;
		int g = next_kept_row_group(r, r->narrowed_to);
		if (g >= tl_pq_reader_num_row_groups(r->pq))
			return 0;
		if (reopen_at_row_group(r, g, err) < 0)
			return -1;
		r->narrowed_to = g;
	}
}

/* Reads from the open file: survivors (> 0), 0 at its end, -1 on error. */
static int64_t read_open_file(tl_ice_reader *r, tl_pq_batch *out, tl_error *err)
{
	if (r->nkept == 0)
		return 0;
	if (r->src == NULL || r->src->capacity != out->capacity) {
		tl_pq_batch_free(r->src);
		r->src = tl_pq_reader_batch_new(r->pq, out->capacity);
		if (r->src == NULL)
			return tl_error_nomem(err, "reading %s", r->task->file.file_path);
	}
	for (;;) {
		int64_t n = next_file_batch(r, err);
		if (n <= 0)
			return n;
		if (account_rows(r, err) < 0)
			return -1;
		r->load_pending = false;
		int64_t kept = fill_output(r, out, err);
		r->next_position += n;
		if (kept != 0)
			return kept;
	}
}

static int64_t fail(tl_ice_reader *r, tl_error *err)
{
	r->failed = true;
	r->failure = *err;
	return -1;
}

/* fail() for an error while reading the open data file, which the message then names. */
static int64_t fail_in_file(tl_ice_reader *r, tl_error *err)
{
	ice_error_name_file(err, "data file", r->task->file.file_path);
	return fail(r, err);
}

/*
 * The start of every reading call: points *err at `local` when the caller
 * passed none, and returns false with the earlier failure once the reader
 * has failed.
 */
static bool still_reading(const tl_ice_reader *r, tl_error **err, tl_error *local)
{
	if (*err == NULL) {
		tl_error_clear(local);
		*err = local;
	}
	if (r->failed)
		**err = r->failure;
	return !r->failed;
}

int64_t tl_ice_reader_next(tl_ice_reader *r, tl_pq_batch *batch, tl_error *err)
{
	tl_error local;
	if (!still_reading(r, &err, &local))
		return -1;
	if (batch->ncolumns != r->nout)
		return tl_error_set(err, TL_ERR_INVALID, "the batch has %d columns but the reader yields %d",
		                    batch->ncolumns, r->nout);
	if (batch->capacity <= 0)
		return tl_error_set(err, TL_ERR_INVALID, "the batch has no room for rows");
	batch->nrows = 0;
	tl_arena_reset(&batch->arena);
	for (;;) {
		if (tl_check_interrupt(err) < 0)
			return -1;
		if (r->in == NULL) {
			if (r->next_task >= r->ntasks)
				return 0;
			if (open_task(r, r->tasks[r->next_task++], err) < 0)
				return fail(r, err);
		}
		int64_t n = read_open_file(r, batch, err);
		if (n < 0)
			return fail_in_file(r, err);
		if (n > 0) {
			batch->nrows = n;
			return n;
		}
		close_file(r);
	}
}

int tl_ice_reader_load(tl_ice_reader *r, tl_pq_batch *batch, tl_error *err)
{
	tl_error local;
	if (!still_reading(r, &err, &local))
		return -1;
	if (!r->load_pending)
		return 0;
	if (batch->nrows != r->src->nrows)
		return tl_error_set(err, TL_ERR_INVALID, "the batch is not the one the reader returned last");
	if (load_sources(r, err) < 0)
		return (int)fail_in_file(r, err);
	update_page_counts(r);
	for (int c = 0; c < r->nout; c++)
		if (is_deferred(r, c) && copy_column(r, batch, c, err) < 0)
			return (int)fail_in_file(r, err);
	r->load_pending = false;
	return 0;
}

void tl_ice_reader_free(tl_ice_reader *r)
{
	if (r == NULL)
		return;
	close_file(r);
	for (int i = 0; i < r->neq_cache; i++)
		ice_eq_set_free(r->eq_cache[i]);
	tl_free(r->eq_cache);
	tl_buf_free(&r->key);
	tl_free(r->deferred);
	tl_pq_schema_free(r->out_schema);
	tl_free(r->out_fields);
	tl_free(r->tasks);
	tl_free(r);
}
