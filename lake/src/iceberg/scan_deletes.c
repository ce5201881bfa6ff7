/*
 * scan_deletes.c: pairing each planned data file with the delete files
 * that apply to it.
 *
 * The rules (iceberg_scan.h, from the Iceberg spec's "Scan Planning"):
 * position deletes apply to data files with a data sequence number <= the
 * delete's, equality deletes to those with a strictly smaller one; both
 * only within the same spec and partition tuple, unless the delete file
 * belongs to an unpartitioned spec, which makes it global.
 *
 * Checking every delete against every data file is quadratic and a table
 * with 10,000 data files and a few thousand deletes would feel it. So the
 * deletes are grouped by (spec id, partition key) in a hash table, each
 * group sorted by content and sequence number, and a data file binary
 * searches its own group and the global one for the deletes that are new
 * enough.
 */
#include <stdlib.h>
#include <string.h>

#include "iceberg/scan_internal.h"

/* The reserved field id of a position delete file's file_path column. */
#define DELETE_FILE_PATH_ID 2147483546

/* The global group: deletes of unpartitioned specs. */
#define GLOBAL_GROUP 0

typedef struct delete_ref {
	uint32_t group;
	int32_t content;           /* TL_ICE_CONTENT_POSITION_DELETES sorts first */
	int64_t seq;
	int32_t index;             /* into scan->deletes */
	bool has_lower, has_upper; /* file_path bounds of a position delete file */
	tl_bytes lower, upper;
} delete_ref;

typedef struct delete_group {
	int32_t spec_id;
	tl_bytes key;
	uint64_t hash;
	/* Ranges of the sorted refs: position deletes, then equality deletes. */
	int pos_begin, pos_end, eq_begin, eq_end;
} delete_group;

typedef struct delete_index {
	delete_group *groups;
	int ngroups;
	int32_t *slots;            /* open addressing: group number + 1, 0 empty */
	uint64_t mask;
	delete_ref *refs;
	int nrefs;
} delete_index;

static uint64_t key_hash(int32_t spec_id, tl_bytes key)
{
	/* FNV-1a, seeded with the spec id. */
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uint32_t)spec_id;
	for (uint32_t i = 0; i < key.len; i++) {
		h ^= key.ptr[i];
		h *= 1099511628211ULL;
	}
	return h ^ (h >> 29);
}

static bool same_key(const delete_group *g, int32_t spec_id, uint64_t hash, tl_bytes key)
{
	return g->hash == hash && g->spec_id == spec_id && g->key.len == key.len &&
	       (key.len == 0 || memcmp(g->key.ptr, key.ptr, key.len) == 0);
}

/* The group of (spec_id, key), or -1; with `add`, a new group when absent. */
static int find_group(delete_index *ix, int32_t spec_id, tl_bytes key, bool add)
{
	uint64_t hash = key_hash(spec_id, key);
	uint64_t at = hash & ix->mask;
	for (;;) {
		int32_t slot = ix->slots[at];
		if (slot == 0)
			break;
		if (same_key(&ix->groups[slot - 1], spec_id, hash, key))
			return slot - 1;
		at = (at + 1) & ix->mask;
	}
	if (!add)
		return -1;
	delete_group *g = &ix->groups[ix->ngroups];
	memset(g, 0, sizeof(*g));
	g->spec_id = spec_id;
	g->key = key;
	g->hash = hash;
	ix->slots[at] = ++ix->ngroups;
	return ix->ngroups - 1;
}

static int compare_refs(const void *pa, const void *pb)
{
	const delete_ref *a = pa, *b = pb;
	if (a->group != b->group)
		return a->group < b->group ? -1 : 1;
	if (a->content != b->content)
		return a->content < b->content ? -1 : 1;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return (a->index > b->index) - (a->index < b->index);
}

static void find_path_bounds(const tl_ice_data_file *f, delete_ref *ref)
{
	for (uint32_t i = 0; i < f->lower_bounds.n; i++)
		if (f->lower_bounds.keys[i] == DELETE_FILE_PATH_ID) {
			ref->has_lower = true;
			ref->lower = f->lower_bounds.values[i];
		}
	for (uint32_t i = 0; i < f->upper_bounds.n; i++)
		if (f->upper_bounds.keys[i] == DELETE_FILE_PATH_ID) {
			ref->has_upper = true;
			ref->upper = f->upper_bounds.values[i];
		}
}

/* -1 when out of memory (free_index frees what was allocated). */
static int build_index(const tl_ice_scan *scan, delete_index *ix)
{
	uint64_t nslots = 16;
	while (nslots < 2 * (uint64_t)scan->ndeletes + 2)
		nslots *= 2;
	ix->mask = nslots - 1;
	ix->slots = tl_calloc(nslots, sizeof(int32_t));
	ix->groups = tl_malloc(sizeof(delete_group) * ((size_t)scan->ndeletes + 1));
	ix->refs = tl_malloc(sizeof(delete_ref) * (size_t)scan->ndeletes);
	if (ix->slots == NULL || ix->groups == NULL || ix->refs == NULL)
		return -1;
	ix->nrefs = scan->ndeletes;

	/* Group 0 is the global one; it is never looked up by key. */
	memset(&ix->groups[GLOBAL_GROUP], 0, sizeof(delete_group));
	ix->groups[GLOBAL_GROUP].spec_id = -1;
	ix->ngroups = 1;
	for (int i = 0; i < scan->ndeletes; i++) {
		const tl_ice_delete_file *d = &scan->deletes[i];
		const tl_ice_partition_spec *spec = tl_ice_scan_spec(scan, d->spec_id);
		delete_ref *ref = &ix->refs[i];
		memset(ref, 0, sizeof(*ref));
		ref->group = spec == NULL || tl_ice_scan_spec_unpartitioned(spec)
		                 ? GLOBAL_GROUP
		                 : (uint32_t)find_group(ix, d->spec_id, scan->delete_keys[i], true);
		ref->content = d->file.content;
		ref->seq = d->sequence_number;
		ref->index = i;
		if (d->file.content == TL_ICE_CONTENT_POSITION_DELETES)
			find_path_bounds(&d->file, ref);
	}
	qsort(ix->refs, (size_t)ix->nrefs, sizeof(delete_ref), compare_refs);

	for (int g = 0; g < ix->ngroups; g++)
		ix->groups[g].pos_begin = ix->groups[g].pos_end = ix->groups[g].eq_begin = ix->groups[g].eq_end = 0;
	for (int i = 0; i < ix->nrefs;) {
		delete_group *g = &ix->groups[ix->refs[i].group];
		g->pos_begin = g->pos_end = i;
		while (i < ix->nrefs && &ix->groups[ix->refs[i].group] == g &&
		       ix->refs[i].content == TL_ICE_CONTENT_POSITION_DELETES)
			i++;
		g->pos_end = g->eq_begin = g->eq_end = i;
		while (i < ix->nrefs && &ix->groups[ix->refs[i].group] == g)
			i++;
		g->eq_end = i;
	}
	return 0;
}

static void free_index(delete_index *ix)
{
	tl_free(ix->slots);
	tl_free(ix->groups);
	tl_free(ix->refs);
}

/* The first ref in [begin, end) with seq >= min_seq (refs sorted by seq there). */
static int first_at_least(const delete_ref *refs, int begin, int end, int64_t min_seq)
{
	while (begin < end) {
		int mid = begin + (end - begin) / 2;
		if (refs[mid].seq < min_seq)
			begin = mid + 1;
		else
			end = mid;
	}
	return begin;
}

static int compare_bytes(tl_bytes a, const char *s, size_t slen)
{
	size_t n = a.len < slen ? a.len : slen;
	int c = n ? memcmp(a.ptr, s, n) : 0;
	if (c != 0)
		return c;
	return (a.len > slen) - (a.len < slen);
}

/* A position delete file whose file_path bounds exclude the path holds none of its rows. */
static bool path_within(const delete_ref *ref, const char *path, size_t len)
{
	if (ref->has_lower && compare_bytes(ref->lower, path, len) > 0)
		return false;
	if (ref->has_upper && compare_bytes(ref->upper, path, len) < 0)
		return false;
	return true;
}

typedef struct delete_list {
	const tl_ice_delete_file **items;
	int n, cap;
} delete_list;

/* -1 when out of memory (l unchanged). */
static int list_add(delete_list *l, const tl_ice_delete_file *d)
{
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 16;
		const tl_ice_delete_file **items = tl_realloc(l->items, sizeof(*l->items) * (size_t)cap);
		if (items == NULL)
			return -1;
		l->items = items, l->cap = cap;
	}
	l->items[l->n++] = d;
	return 0;
}

/* Adds a group's deletes that apply to a data file of sequence number `seq`; -1 when out of memory. */
static int collect(const tl_ice_scan *scan, const delete_index *ix, const delete_group *g, int64_t seq,
                    const char *path, size_t path_len, delete_list *out, bool *used)
{
	for (int i = first_at_least(ix->refs, g->pos_begin, g->pos_end, seq); i < g->pos_end; i++) {
		if (!path_within(&ix->refs[i], path, path_len))
			continue;
		if (list_add(out, &scan->deletes[ix->refs[i].index]) < 0)
			return -1;
		used[ix->refs[i].index] = true;
	}
	/* Equality deletes need a strictly newer sequence number. */
	int eq = seq == INT64_MAX ? g->eq_end : first_at_least(ix->refs, g->eq_begin, g->eq_end, seq + 1);
	for (int i = eq; i < g->eq_end; i++) {
		if (list_add(out, &scan->deletes[ix->refs[i].index]) < 0)
			return -1;
		used[ix->refs[i].index] = true;
	}
	return 0;
}

int tl_ice_scan_associate_deletes(tl_ice_scan *scan, tl_error *err)
{
	if (scan->ndeletes == 0)
		return 0;
	delete_index ix;
	memset(&ix, 0, sizeof(ix));
	bool *used = tl_calloc((size_t)scan->ndeletes, sizeof(bool));
	delete_list list = {0};
	int rc = used == NULL || build_index(scan, &ix) < 0 ? -1 : 0;
	for (int t = 0; t < scan->ntasks && rc == 0; t++) {
		tl_ice_scan_task *task = &scan->tasks[t];
		const char *path = task->file.file_path;
		size_t path_len = strlen(path);
		list.n = 0;
		const tl_ice_partition_spec *spec = tl_ice_scan_spec(scan, task->spec_id);
		if (ix.ngroups > 1 && spec != NULL && !tl_ice_scan_spec_unpartitioned(spec)) {
			int g = find_group(&ix, task->spec_id, scan->task_keys[t], false);
			if (g >= 0)
				rc = collect(scan, &ix, &ix.groups[g], task->sequence_number, path, path_len, &list, used);
		}
		if (rc == 0)
			rc = collect(scan, &ix, &ix.groups[GLOBAL_GROUP], task->sequence_number, path, path_len, &list, used);
		task->ndeletes = 0;
		task->deletes = NULL;
		if (rc == 0 && list.n > 0) {
			task->deletes = tl_arena_alloc(&scan->arena, sizeof(*task->deletes) * (size_t)list.n);
			if (task->deletes == NULL)
				rc = -1;
			else
				memcpy(task->deletes, list.items, sizeof(*task->deletes) * (size_t)list.n);
		}
		if (rc == 0)
			task->ndeletes = list.n;
	}
	for (int i = 0; rc == 0 && i < scan->ndeletes; i++)
		scan->stats.delete_files += used[i];
	tl_free(list.items);
	tl_free(used);
	free_index(&ix);
	return rc < 0 ? tl_error_nomem(err, "matching delete files to data files") : 0;
}
