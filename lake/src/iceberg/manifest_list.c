/*
 * manifest_list.c: reading (v1, v2) and writing (v2) Iceberg manifest
 * lists, the per-snapshot files that name its manifests.
 *
 * Fields are found by field id as in manifest.c. A v1 list has no content
 * or sequence numbers; those read as data and 0, which is what the spec's
 * inheritance rules expect of v1 tables.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/avro.h"
#include "tierlake/iceberg_manifest.h"
#include "iceberg/manifest_internal.h"

struct tl_ice_manifest_list_reader {
	tl_avro_reader *avro;
	tl_arena arena;
	int format_version;
	tl_ice_manifest_file file;
};

tl_ice_manifest_list_reader *tl_ice_manifest_list_reader_open(tl_input *in, tl_error *err)
{
	tl_ice_manifest_list_reader *r = tl_calloc(1, sizeof(*r));
	if (r == NULL) {
		tl_error_nomem(err, "opening manifest list %s", in->name);
		return NULL;
	}
	tl_arena_init(&r->arena, 4096);
	r->format_version = 1;
	r->avro = tl_avro_reader_open(in, err);
	if (r->avro == NULL) {
		tl_ice_manifest_list_reader_free(r);
		return NULL;
	}
	const tl_bytes *fv = tl_avro_reader_meta(r->avro, "format-version");
	if (fv != NULL) {
		if (fv->len == 1 && (fv->ptr[0] == '1' || fv->ptr[0] == '2')) {
			r->format_version = fv->ptr[0] - '0';
		} else {
			tl_error_set(err, TL_ERR_UNSUPPORTED, "manifest list format-version \"%.*s\"",
			             (int)(fv->len > 20 ? 20 : fv->len), (const char *)fv->ptr);
			tl_ice_manifest_list_reader_free(r);
			return NULL;
		}
	}
	return r;
}

void tl_ice_manifest_list_reader_free(tl_ice_manifest_list_reader *r)
{
	if (r == NULL)
		return;
	tl_avro_reader_free(r->avro);
	tl_arena_free(&r->arena);
	tl_free(r);
}

int tl_ice_manifest_list_reader_format_version(const tl_ice_manifest_list_reader *r)
{
	return r->format_version;
}

static int read_summaries(tl_ice_manifest_list_reader *r, const tl_avro_value *rec, tl_ice_manifest_file *m,
                          tl_error *err)
{
	const tl_avro_value *v = tl_avro_record_get_by_id(rec, 507);
	if (v == NULL || tl_avro_is_null(v))
		return 0;
	if (tl_avro_value_type(v) != TL_AVRO_ARRAY)
		return tl_error_set(err, TL_ERR_CORRUPT, "manifest list partitions (id 507) is not an array");
	uint32_t n = v->u.list.n;
	if (n > TL_ICE_MAX_PARTITION_FIELDS)
		return tl_error_set(err, TL_ERR_CORRUPT, "manifest list entry has %u partition summaries", n);
	if (n == 0)
		return 0;
	m->partitions = tl_arena_alloc(&r->arena, sizeof(tl_ice_field_summary) * n);
	if (m->partitions == NULL)
		return tl_error_nomem(err, "reading manifest list partition summaries");
	memset(m->partitions, 0, sizeof(tl_ice_field_summary) * n);
	for (uint32_t i = 0; i < n; i++) {
		const tl_avro_value *fs = &v->u.list.items[i];
		tl_ice_field_summary *p = &m->partitions[i];
		if (tl_avro_value_type(fs) != TL_AVRO_RECORD)
			return tl_error_set(err, TL_ERR_CORRUPT, "partition summary %u is not a record", i);
		if (tl_avro_get_bool(tl_avro_record_get_by_id(fs, 509), &p->contains_null) < 0)
			return tl_error_set(err, TL_ERR_CORRUPT, "partition summary %u has no contains_null (id 509)", i);
		const tl_avro_value *x = tl_avro_record_get_by_id(fs, 518);
		if (x != NULL && !tl_avro_is_null(x)) {
			if (tl_avro_get_bool(x, &p->contains_nan) < 0)
				return tl_error_set(err, TL_ERR_CORRUPT, "partition summary %u: contains_nan is not a boolean", i);
			p->has_contains_nan = true;
		}
		x = tl_avro_record_get_by_id(fs, 510);
		if (x != NULL && !tl_avro_is_null(x)) {
			if (tl_avro_get_bytes(x, &p->lower_bound) < 0)
				return tl_error_set(err, TL_ERR_CORRUPT, "partition summary %u: lower_bound is not bytes", i);
			p->has_lower_bound = true;
		}
		x = tl_avro_record_get_by_id(fs, 511);
		if (x != NULL && !tl_avro_is_null(x)) {
			if (tl_avro_get_bytes(x, &p->upper_bound) < 0)
				return tl_error_set(err, TL_ERR_CORRUPT, "partition summary %u: upper_bound is not bytes", i);
			p->has_upper_bound = true;
		}
	}
	m->n_partitions = n;
	return 0;
}

int tl_ice_manifest_list_reader_next(tl_ice_manifest_list_reader *r, const tl_ice_manifest_file **out,
                                     tl_error *err)
{
	const tl_avro_value *rec;
	int rc = tl_avro_reader_next(r->avro, &rec, err);
	if (rc <= 0)
		return rc;
	tl_arena_reset(&r->arena);
	tl_ice_manifest_file *m = &r->file;
	memset(m, 0, sizeof(*m));
	bool v2 = r->format_version >= 2;
	if ((m->manifest_path = tl_ice_manifest_get_string(rec, 500, "manifest_path", &r->arena, err)) == NULL)
		return -1;
	if (tl_ice_manifest_get_long(rec, 501, "manifest_length", true, &m->manifest_length, NULL, err) < 0 ||
	    tl_ice_manifest_get_int(rec, 502, "partition_spec_id", true, &m->partition_spec_id, NULL, err) < 0 ||
	    tl_ice_manifest_get_int(rec, 517, "content", v2, &m->content, NULL, err) < 0 ||
	    tl_ice_manifest_get_long(rec, 515, "sequence_number", v2, &m->sequence_number, NULL, err) < 0 ||
	    tl_ice_manifest_get_long(rec, 516, "min_sequence_number", v2, &m->min_sequence_number, NULL, err) < 0 ||
	    tl_ice_manifest_get_long(rec, 503, "added_snapshot_id", true, &m->added_snapshot_id, NULL, err) < 0 ||
	    tl_ice_manifest_get_int(rec, 504, "added_files_count", v2, &m->added_files_count, NULL, err) < 0 ||
	    tl_ice_manifest_get_int(rec, 505, "existing_files_count", v2, &m->existing_files_count, NULL, err) < 0 ||
	    tl_ice_manifest_get_int(rec, 506, "deleted_files_count", v2, &m->deleted_files_count, NULL, err) < 0 ||
	    tl_ice_manifest_get_long(rec, 512, "added_rows_count", v2, &m->added_rows_count, NULL, err) < 0 ||
	    tl_ice_manifest_get_long(rec, 513, "existing_rows_count", v2, &m->existing_rows_count, NULL, err) < 0 ||
	    tl_ice_manifest_get_long(rec, 514, "deleted_rows_count", v2, &m->deleted_rows_count, NULL, err) < 0)
		return -1;
	if (m->content != TL_ICE_MANIFEST_DATA && m->content != TL_ICE_MANIFEST_DELETES)
		return tl_error_set(err, TL_ERR_CORRUPT, "manifest %s has content %d", m->manifest_path, m->content);
	if (m->manifest_length < 0 || m->partition_spec_id < 0 || m->sequence_number < 0 ||
	    m->min_sequence_number < 0 || m->added_files_count < 0 || m->existing_files_count < 0 ||
	    m->deleted_files_count < 0 || m->added_rows_count < 0 || m->existing_rows_count < 0 ||
	    m->deleted_rows_count < 0)
		return tl_error_set(err, TL_ERR_CORRUPT, "manifest %s has a negative length, spec id, sequence number or count",
		                    m->manifest_path);
	if (read_summaries(r, rec, m, err) < 0)
		return -1;
	*out = m;
	return 1;
}

/* ------------------------------------------------------------ writer */

static const char manifest_file_schema[] =
	"{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":["
	"{\"name\":\"manifest_path\",\"type\":\"string\",\"field-id\":500},"
	"{\"name\":\"manifest_length\",\"type\":\"long\",\"field-id\":501},"
	"{\"name\":\"partition_spec_id\",\"type\":\"int\",\"field-id\":502},"
	"{\"name\":\"content\",\"type\":\"int\",\"field-id\":517},"
	"{\"name\":\"sequence_number\",\"type\":\"long\",\"field-id\":515},"
	"{\"name\":\"min_sequence_number\",\"type\":\"long\",\"field-id\":516},"
	"{\"name\":\"added_snapshot_id\",\"type\":\"long\",\"field-id\":503},"
	"{\"name\":\"added_files_count\",\"type\":\"int\",\"field-id\":504},"
	"{\"name\":\"existing_files_count\",\"type\":\"int\",\"field-id\":505},"
	"{\"name\":\"deleted_files_count\",\"type\":\"int\",\"field-id\":506},"
	"{\"name\":\"added_rows_count\",\"type\":\"long\",\"field-id\":512},"
	"{\"name\":\"existing_rows_count\",\"type\":\"long\",\"field-id\":513},"
	"{\"name\":\"deleted_rows_count\",\"type\":\"long\",\"field-id\":514},"
	"{\"name\":\"partitions\",\"default\":null,\"field-id\":507,\"type\":[\"null\",{\"type\":\"array\","
	"\"element-id\":508,\"items\":{\"type\":\"record\",\"name\":\"r508\",\"fields\":["
	"{\"name\":\"contains_null\",\"type\":\"boolean\",\"field-id\":509},"
	"{\"name\":\"contains_nan\",\"type\":[\"null\",\"boolean\"],\"default\":null,\"field-id\":518},"
	"{\"name\":\"lower_bound\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":510},"
	"{\"name\":\"upper_bound\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":511}]}}]},"
	"{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":519}]}";

struct tl_ice_manifest_list_writer {
	tl_avro_schema *schema;
	tl_avro_writer *avro;
	tl_arena arena;
	int64_t sequence_number;
};

void tl_ice_manifest_list_writer_free(tl_ice_manifest_list_writer *w)
{
	if (w == NULL)
		return;
	tl_avro_writer_free(w->avro);
	tl_avro_schema_free(w->schema);
	tl_arena_free(&w->arena);
	tl_free(w);
}

tl_ice_manifest_list_writer *tl_ice_manifest_list_writer_open(tl_output *out, int64_t snapshot_id,
                                                              int64_t parent_snapshot_id,
                                                              int64_t sequence_number, tl_error *err)
{
	if (sequence_number < 0) {
		tl_error_set(err, TL_ERR_INVALID, "manifest list sequence number %" PRId64 " is negative", sequence_number);
		return NULL;
	}
	tl_ice_manifest_list_writer *w = tl_calloc(1, sizeof(*w));
	if (w == NULL) {
		tl_error_nomem(err, "opening a manifest list writer");
		return NULL;
	}
	tl_arena_init(&w->arena, 4096);
	w->sequence_number = sequence_number;
	w->schema = tl_avro_schema_parse(manifest_file_schema, sizeof(manifest_file_schema) - 1, err);
	if (w->schema == NULL) {
		tl_ice_manifest_list_writer_free(w);
		return NULL;
	}
	char snap[24], parent[24], seq[24];
	snprintf(snap, sizeof(snap), "%" PRId64, snapshot_id);
	if (parent_snapshot_id < 0)
		snprintf(parent, sizeof(parent), "null");
	else
		snprintf(parent, sizeof(parent), "%" PRId64, parent_snapshot_id);
	snprintf(seq, sizeof(seq), "%" PRId64, sequence_number);
	tl_avro_meta meta[4] = {
		{"snapshot-id", {(const uint8_t *)snap, (uint32_t)strlen(snap)}},
		{"parent-snapshot-id", {(const uint8_t *)parent, (uint32_t)strlen(parent)}},
		{"sequence-number", {(const uint8_t *)seq, (uint32_t)strlen(seq)}},
		{"format-version", {(const uint8_t *)"2", 1}},
	};
	w->avro = tl_avro_writer_open(out, w->schema, TL_AVRO_CODEC_DEFLATE, meta, 4, err);
	if (w->avro == NULL) {
		tl_ice_manifest_list_writer_free(w);
		return NULL;
	}
	return w;
}

int tl_ice_manifest_list_writer_add(tl_ice_manifest_list_writer *w, const tl_ice_manifest_file *m, tl_error *err)
{
	if (m->manifest_path == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "manifest list entry has no manifest_path");
	if (m->manifest_length < 0 || m->partition_spec_id < 0 || m->added_files_count < 0 ||
	    m->existing_files_count < 0 || m->deleted_files_count < 0 || m->added_rows_count < 0 ||
	    m->existing_rows_count < 0 || m->deleted_rows_count < 0 ||
	    (m->content != TL_ICE_MANIFEST_DATA && m->content != TL_ICE_MANIFEST_DELETES))
		return tl_error_set(err, TL_ERR_INVALID, "manifest %s: negative length, spec id or count, or bad content",
		                    m->manifest_path);
	/* A manifest written for this snapshot carries -1: it takes the list's sequence number. */
	int64_t seq = m->sequence_number < 0 ? w->sequence_number : m->sequence_number;
	int64_t min_seq = m->min_sequence_number < 0 ? seq : m->min_sequence_number;
	unsigned long failures = tl_mem_failures(); /* see tl_ice_manifest_writer_add */
	tl_arena *a = &w->arena;
	tl_arena_reset(a);
	tl_avro_value *rec = tl_avro_record_new(a, w->schema);
	tl_avro_value *v = tl_avro_record_field(rec, "manifest_path", TL_AVRO_STRING);
	v->u.bytes.ptr = (const uint8_t *)m->manifest_path;
	v->u.bytes.len = (uint32_t)strlen(m->manifest_path);
	tl_avro_record_field(rec, "manifest_length", TL_AVRO_LONG)->u.i64 = m->manifest_length;
	tl_avro_record_field(rec, "partition_spec_id", TL_AVRO_INT)->u.i32 = m->partition_spec_id;
	tl_avro_record_field(rec, "content", TL_AVRO_INT)->u.i32 = m->content;
	tl_avro_record_field(rec, "sequence_number", TL_AVRO_LONG)->u.i64 = seq;
	tl_avro_record_field(rec, "min_sequence_number", TL_AVRO_LONG)->u.i64 = min_seq;
	tl_avro_record_field(rec, "added_snapshot_id", TL_AVRO_LONG)->u.i64 = m->added_snapshot_id;
	tl_avro_record_field(rec, "added_files_count", TL_AVRO_INT)->u.i32 = m->added_files_count;
	tl_avro_record_field(rec, "existing_files_count", TL_AVRO_INT)->u.i32 = m->existing_files_count;
	tl_avro_record_field(rec, "deleted_files_count", TL_AVRO_INT)->u.i32 = m->deleted_files_count;
	tl_avro_record_field(rec, "added_rows_count", TL_AVRO_LONG)->u.i64 = m->added_rows_count;
	tl_avro_record_field(rec, "existing_rows_count", TL_AVRO_LONG)->u.i64 = m->existing_rows_count;
	tl_avro_record_field(rec, "deleted_rows_count", TL_AVRO_LONG)->u.i64 = m->deleted_rows_count;
	/* An unpartitioned manifest gets an empty list, as Java and pyiceberg write. */
	tl_avro_value *arr = tl_avro_record_field(rec, "partitions", TL_AVRO_ARRAY);
	tl_avro_init_list(a, arr, m->n_partitions);
	for (uint32_t i = 0; i < m->n_partitions; i++) {
		const tl_ice_field_summary *p = &m->partitions[i];
		tl_avro_value *fs = tl_avro_item(arr, i, TL_AVRO_RECORD);
		tl_avro_init_record(a, fs);
		tl_avro_record_field(fs, "contains_null", TL_AVRO_BOOLEAN)->u.boolean = p->contains_null;
		if (p->has_contains_nan)
			tl_avro_record_field(fs, "contains_nan", TL_AVRO_BOOLEAN)->u.boolean = p->contains_nan;
		if (p->has_lower_bound)
			tl_avro_record_field(fs, "lower_bound", TL_AVRO_BYTES)->u.bytes = p->lower_bound;
		if (p->has_upper_bound)
			tl_avro_record_field(fs, "upper_bound", TL_AVRO_BYTES)->u.bytes = p->upper_bound;
	}
	if (tl_mem_failures() != failures)
		return tl_error_nomem(err, "writing the manifest list entry of %s", m->manifest_path);
	return tl_avro_writer_append(w->avro, rec, err);
}

int tl_ice_manifest_list_writer_close(tl_ice_manifest_list_writer *w, tl_error *err)
{
	return tl_avro_writer_close(w->avro, err);
}
