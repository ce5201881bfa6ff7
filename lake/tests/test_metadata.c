/*
 * test_metadata.c: Parquet's footer, page headers and statistics
 * (parquet/metadata.c).
 *
 * Round trips compare every field of every struct, with optional fields set
 * and absent. What the encoder writes is checked on the wire as an outline of
 * field ids. Hostile and future inputs are made by rewriting our own
 * encodings (a field dropped, retyped, renumbered, made negative; unknown
 * fields added to every struct) or by cutting and mutating them byte by
 * byte: bad ones must fail with a message naming the field, newer ones must
 * decode to the same values. Last, the footer and page headers of files
 * pyarrow wrote (lake/tests/data/metadata, made by make_fixtures.py there)
 * decode to the values pyarrow put in.
 */
#include <stdlib.h>
#include <zlib.h>

#include "parquet/metadata.h"
#include "parquet/thrift.h"
#include "test.h"

#define lengthof(array) (sizeof(array) / sizeof((array)[0]))

static tl_bytes text(const char *s)
{
	tl_bytes b = {(const uint8_t *)s, (uint32_t)strlen(s)};
	return b;
}

static bool bytes_is(tl_bytes b, const char *s)
{
	return b.len == strlen(s) && memcmp(b.ptr, s, b.len) == 0;
}

static bool same_bytes(tl_bytes a, tl_bytes b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

/* ------------------------------------------------- structural comparison */

/*
 * Each *_diff returns NULL when a and b hold the same values, or the name of
 * the first field that differs.
 */
#define DIFF(field)                                                             \
	do {                                                                        \
		if (a->field != b->field)                                               \
			return #field;                                                      \
	} while (0)
#define DIFF_BYTES(field)                                                       \
	do {                                                                        \
		if (!same_bytes(a->field, b->field))                                    \
			return #field;                                                      \
	} while (0)
#define DIFF_NESTED(fn, field)                                                  \
	do {                                                                        \
		const char *d_ = fn(&a->field, &b->field);                              \
		if (d_)                                                                 \
			return d_;                                                          \
	} while (0)

static const char *statistics_diff(const pq_statistics *a, const pq_statistics *b)
{
	DIFF(has_max);
	DIFF(has_min);
	DIFF(has_null_count);
	DIFF(has_distinct_count);
	DIFF(has_max_value);
	DIFF(has_min_value);
	DIFF_BYTES(max);
	DIFF_BYTES(min);
	DIFF(null_count);
	DIFF(distinct_count);
	DIFF_BYTES(max_value);
	DIFF_BYTES(min_value);
	return NULL;
}

static const char *logical_diff(const pq_logical_type *a, const pq_logical_type *b)
{
	DIFF(kind);
	DIFF(decimal_scale);
	DIFF(decimal_precision);
	DIFF(utc_adjusted);
	DIFF(unit);
	DIFF(int_bit_width);
	DIFF(int_signed);
	return NULL;
}

static const char *schema_element_diff(const pq_schema_element *a, const pq_schema_element *b)
{
	DIFF(has_type);
	DIFF(type);
	DIFF(type_length);
	DIFF(has_repetition);
	DIFF(repetition);
	DIFF_BYTES(name);
	DIFF(num_children);
	DIFF(converted_type);
	DIFF(scale);
	DIFF(precision);
	DIFF(has_field_id);
	DIFF(field_id);
	DIFF_NESTED(logical_diff, logical);
	return NULL;
}

static const char *column_meta_diff(const pq_column_meta *a, const pq_column_meta *b)
{
	DIFF(type);
	DIFF(nencodings);
	for (int32_t i = 0; i < a->nencodings; i++)
		DIFF(encodings[i]);
	DIFF(npath);
	for (int32_t i = 0; i < a->npath; i++)
		DIFF_BYTES(path_in_schema[i]);
	DIFF(codec);
	DIFF(num_values);
	DIFF(total_uncompressed_size);
	DIFF(total_compressed_size);
	DIFF(data_page_offset);
	DIFF(has_dictionary_page_offset);
	DIFF(dictionary_page_offset);
	DIFF(has_statistics);
	DIFF_NESTED(statistics_diff, statistics);
	return NULL;
}

static const char *column_chunk_diff(const pq_column_chunk *a, const pq_column_chunk *b)
{
	DIFF(has_file_path);
	DIFF_BYTES(file_path);
	DIFF(file_offset);
	DIFF(has_meta_data);
	DIFF_NESTED(column_meta_diff, meta_data);
	return NULL;
}

static const char *row_group_diff(const pq_row_group *a, const pq_row_group *b)
{
	DIFF(ncolumns);
	for (int32_t i = 0; i < a->ncolumns; i++)
		DIFF_NESTED(column_chunk_diff, columns[i]);
	DIFF(total_byte_size);
	DIFF(num_rows);
	DIFF(has_file_offset);
	DIFF(file_offset);
	DIFF(has_total_compressed_size);
	DIFF(total_compressed_size);
	DIFF(has_ordinal);
	DIFF(ordinal);
	return NULL;
}

static const char *file_metadata_diff(const pq_file_metadata *a, const pq_file_metadata *b)
{
	DIFF(version);
	DIFF(nschema);
	for (int32_t i = 0; i < a->nschema; i++)
		DIFF_NESTED(schema_element_diff, schema[i]);
	DIFF(num_rows);
	DIFF(nrow_groups);
	for (int32_t i = 0; i < a->nrow_groups; i++)
		DIFF_NESTED(row_group_diff, row_groups[i]);
	DIFF(nkey_value);
	for (int32_t i = 0; i < a->nkey_value; i++) {
		DIFF_BYTES(key_value[i].key);
		DIFF(key_value[i].has_value);
		DIFF_BYTES(key_value[i].value);
	}
	DIFF(has_created_by);
	DIFF_BYTES(created_by);
	DIFF(has_column_orders);
	return NULL;
}

static const char *page_header_diff(const pq_page_header *a, const pq_page_header *b)
{
	DIFF(type);
	DIFF(uncompressed_page_size);
	DIFF(compressed_page_size);
	DIFF(has_crc);
	DIFF(crc);
	DIFF(has_data_page_header);
	DIFF(data_page_header.num_values);
	DIFF(data_page_header.encoding);
	DIFF(data_page_header.definition_level_encoding);
	DIFF(data_page_header.repetition_level_encoding);
	DIFF(has_dictionary_page_header);
	DIFF(dictionary_page_header.num_values);
	DIFF(dictionary_page_header.encoding);
	DIFF(dictionary_page_header.is_sorted);
	DIFF(has_data_page_header_v2);
	DIFF(data_page_header_v2.num_values);
	DIFF(data_page_header_v2.num_nulls);
	DIFF(data_page_header_v2.num_rows);
	DIFF(data_page_header_v2.encoding);
	DIFF(data_page_header_v2.definition_levels_byte_length);
	DIFF(data_page_header_v2.repetition_levels_byte_length);
	DIFF(data_page_header_v2.is_compressed);
	return NULL;
}

#define CHECK_SAME(diff_call)                                                   \
	do {                                                                        \
		const char *where_ = (diff_call);                                       \
		if (where_) {                                                           \
			tl_test_fail(__FILE__, __LINE__, "round trip changed %s", where_);  \
			return;                                                             \
		}                                                                       \
	} while (0)

/* ---------------------------------------------------------- sample data */

static const int32_t sample_encodings[] = {PQ_ENC_PLAIN, PQ_ENC_RLE, PQ_ENC_RLE_DICTIONARY};
static const tl_bytes sample_path[] = {{(const uint8_t *)"amount", 6}};

static pq_statistics sample_statistics(void)
{
	pq_statistics s = {
		.has_max = true, .has_min = true, .has_null_count = true, .has_distinct_count = true,
		.has_max_value = true, .has_min_value = true,
		.max = text("zz"), .min = text(""), .null_count = 7, .distinct_count = INT64_MAX,
		.max_value = text("\xff\xfe"), .min_value = text("\x00\x01"),
	};
	s.min_value.len = 2;    /* an embedded NUL */
	return s;
}

/*
 * A footer with every field of every struct set, where each has_ flag and
 * optional field also appears absent somewhere, in storage that lives as
 * long as the program.
 */
static void sample_full(pq_file_metadata *md)
{
	static pq_schema_element schema[6];
	static pq_column_chunk chunks[3];
	static pq_row_group groups[2];
	static pq_key_value kv[2];

	memset(md, 0, sizeof(*md));
	memset(schema, 0, sizeof(schema));
	schema[0] = (pq_schema_element){.name = text("root"), .num_children = 5,
	                                .has_repetition = true, .repetition = PQ_REQUIRED,
	                                .converted_type = PQ_CT_NONE};
	schema[1] = (pq_schema_element){.has_type = true, .type = 2, .has_repetition = true,
	                                .repetition = PQ_REQUIRED, .name = text("id"),
	                                .converted_type = PQ_CT_INT_64, .has_field_id = true,
	                                .field_id = 1,
	                                .logical = {.kind = PQ_LT_INTEGER, .int_bit_width = 64,
	                                            .int_signed = true}};
	schema[2] = (pq_schema_element){.has_type = true, .type = 7, .type_length = 16,
	                                .has_repetition = true, .repetition = PQ_OPTIONAL,
	                                .name = text("amount"), .converted_type = PQ_CT_DECIMAL,
	                                .scale = 9, .precision = 38, .has_field_id = true,
	                                .field_id = -2,
	                                .logical = {.kind = PQ_LT_DECIMAL, .decimal_scale = 9,
	                                            .decimal_precision = 38}};
	schema[3] = (pq_schema_element){.has_type = true, .type = 2, .has_repetition = true,
	                                .repetition = PQ_OPTIONAL, .name = text("ts"),
	                                .converted_type = PQ_CT_TIMESTAMP_MICROS,
	                                .has_field_id = true, .field_id = INT32_MAX,
	                                .logical = {.kind = PQ_LT_TIMESTAMP, .utc_adjusted = true,
	                                            .unit = 1}};
	schema[4] = (pq_schema_element){.has_type = true, .type = 2, .has_repetition = true,
	                                .repetition = PQ_REPEATED, .name = text("t"),
	                                .converted_type = PQ_CT_NONE,
	                                .logical = {.kind = PQ_LT_TIME, .unit = 2}};
	schema[5] = (pq_schema_element){.has_type = true, .type = 6, .name = text("s"),
	                                .converted_type = PQ_CT_UTF8,
	                                .logical = {.kind = PQ_LT_STRING}};

	chunks[0] = (pq_column_chunk){
		.has_file_path = true, .file_path = text("other.parquet"), .file_offset = 4,
		.has_meta_data = true,
		.meta_data = {.type = 7, .nencodings = 3, .encodings = (int32_t *)sample_encodings,
		              .npath = 1, .path_in_schema = (tl_bytes *)sample_path, .codec = 6,
		              .num_values = 1000, .total_uncompressed_size = 5000,
		              .total_compressed_size = 4000, .data_page_offset = 104,
		              .has_dictionary_page_offset = true, .dictionary_page_offset = 4,
		              .has_statistics = true, .statistics = sample_statistics()}};
	chunks[1] = (pq_column_chunk){
		.file_offset = 0, .has_meta_data = true,
		.meta_data = {.type = 1, .nencodings = 0, .npath = 1,
		              .path_in_schema = (tl_bytes *)sample_path, .codec = 0,
		              .num_values = INT64_MAX, .total_uncompressed_size = 0,
		              .total_compressed_size = 0, .data_page_offset = (int64_t)1 << 40}};
	chunks[2] = (pq_column_chunk){.file_offset = -1};   /* no meta_data */
	groups[0] = (pq_row_group){.ncolumns = 2, .columns = chunks, .total_byte_size = 9000,
	                           .num_rows = 1000, .has_file_offset = true, .file_offset = 4,
	                           .has_total_compressed_size = true,
	                           .total_compressed_size = 8000, .has_ordinal = true,
	                           .ordinal = -32768};
	groups[1] = (pq_row_group){.ncolumns = 1, .columns = chunks + 2, .total_byte_size = 0,
	                           .num_rows = 0};
	kv[0] = (pq_key_value){.key = text("k"), .has_value = true, .value = text("v")};
	kv[1] = (pq_key_value){.key = text("no value")};

	md->version = 2;
	md->nschema = lengthof(schema);
	md->schema = schema;
	md->num_rows = 1000;
	md->nrow_groups = lengthof(groups);
	md->row_groups = groups;
	md->nkey_value = lengthof(kv);
	md->key_value = kv;
	md->has_created_by = true;
	md->created_by = text("tierdb test");
	md->has_column_orders = true;
}

/* The smallest legal footer: a root with no columns, no row groups. */
static void sample_minimal(pq_file_metadata *md)
{
	static pq_schema_element root;

	memset(md, 0, sizeof(*md));
	root = (pq_schema_element){.name = text("schema"), .converted_type = PQ_CT_NONE};
	md->version = 1;
	md->nschema = 1;
	md->schema = &root;
}

/* Encodes md and decodes it back into *back. */
static int round_trip(const pq_file_metadata *md, tl_buf *wire, pq_file_metadata *back,
                      tl_error *err)
{
	tl_buf_init(wire);
	pq_file_metadata_encode(md, wire);
	tl_error_clear(err);
	return pq_file_metadata_decode(wire->data, wire->len, back, err);
}

/* -------------------------------------------------------------- rewriter */

/*
 * The rewriter copies an encoded struct field by field, changing one field
 * (chosen by the field ids on the way down to it, list elements not counted)
 * or adding unknown fields to every struct: how hostile and future footers
 * are made from ones our encoder wrote.
 */
enum {
	KEEP,
	DROP,          /* leave the field out */
	AS_BINARY,     /* replace its value with a binary */
	NEGATIVE,      /* replace its (integer) value with -1 */
	RENUMBER,      /* give it the id new_id */
	DUPLICATE      /* copy it, then again as new_id */
};

#define REWRITE_DEPTH 8

typedef struct rewrite {
	int16_t path[REWRITE_DEPTH];   /* ends at the first 0 */
	int action;
	int16_t new_id;
	bool junk;                     /* add unknown fields of many types to every struct */
} rewrite;

/* The field at path (ids from the top down) gets `action` (and new_id). */
#define EDIT(action_, new_id_, ...)                                             \
	{.path = {__VA_ARGS__}, .action = (action_), .new_id = (new_id_)}

static int copy_struct(th_reader *r, th_writer *w, const rewrite *rw, int16_t *path, int depth);

static int copy_value(th_reader *r, th_writer *w, int type, const rewrite *rw, int16_t *path,
                      int depth)
{
	bool b;
	int8_t i8;
	int64_t i64;
	tl_bytes bin;
	int elem;
	int32_t count;

	switch (type) {
	case TH_BOOL_TRUE:
	case TH_BOOL_FALSE:
		if (th_read_bool(r, type, &b) < 0)
			return -1;
		th_write_bool(w, b);
		return 0;
	case TH_I8:
		if (th_read_i8(r, &i8) < 0)
			return -1;
		th_write_i8(w, i8);
		return 0;
	case TH_I16:
	case TH_I32:
	case TH_I64:
		if (th_read_i64(r, &i64) < 0)
			return -1;
		th_write_i64(w, i64);       /* the same zigzag varint */
		return 0;
	case TH_BINARY:
		if (th_read_binary(r, &bin) < 0)
			return -1;
		th_write_binary(w, bin.ptr, bin.len);
		return 0;
	case TH_LIST:
		if (th_read_list_begin(r, &elem, &count) < 0)
			return -1;
		th_write_list_begin(w, elem, count);
		for (int32_t i = 0; i < count; i++) {
			if (copy_value(r, w, elem, rw, path, depth) < 0)
				return -1;
		}
		return 0;
	case TH_STRUCT:
		return copy_struct(r, w, rw, path, depth + 1);
	}
	return -1;                        /* Parquet's footers have no other types */
}

static void write_junk_fields(th_writer *w, int16_t first_id)
{
	th_write_field(w, first_id, TH_LIST);
	th_write_list_begin(w, TH_STRUCT, 2);
	for (int i = 0; i < 2; i++) {
		th_write_struct_begin(w);
		th_write_bool_field(w, 1, i);
		th_write_field(w, 2, TH_DOUBLE);
		th_write_double(w, 0.5);
		th_write_field(w, 3, TH_LIST);
		th_write_list_begin(w, TH_BOOL_TRUE, 2);
		th_write_bool(w, true);
		th_write_bool(w, false);
		th_write_field(w, 4, TH_BINARY);
		th_write_binary(w, "junk", 4);
		th_write_struct_end(w);
	}
	th_write_bool_field(w, (int16_t)(first_id + 1), true);
	th_write_field(w, (int16_t)(first_id + 2), TH_I8);
	th_write_i8(w, -7);
}

static int copy_struct(th_reader *r, th_writer *w, const rewrite *rw, int16_t *path, int depth)
{
	if (depth >= REWRITE_DEPTH || th_read_struct_begin(r) < 0)
		return -1;
	th_write_struct_begin(w);
	if (rw->junk)
		write_junk_fields(w, 100);    /* before the real fields: they follow in long form */
	for (;;) {
		int16_t id;
		int type;

		if (th_read_field(r, &id, &type) < 0)
			return -1;
		if (type == TH_STOP)
			break;
		path[depth] = id;
		bool target = true;
		for (int i = 0; i <= depth; i++)
			target = target && rw->path[i] == path[i];
		target = target && (depth + 1 == REWRITE_DEPTH || rw->path[depth + 1] == 0);
		int action = target ? rw->action : KEEP;

		if (action == DROP || action == AS_BINARY || action == NEGATIVE) {
			if (th_skip(r, type) < 0)
				return -1;
			if (action == AS_BINARY) {
				th_write_field(w, id, TH_BINARY);
				th_write_binary(w, "x", 1);
			} else if (action == NEGATIVE) {
				th_write_field(w, id, type);
				th_write_i64(w, -1);        /* the same zigzag varint for any width */
			}
			continue;
		}
		if (action == DUPLICATE) {
			th_reader again = *r;
			th_write_field(w, id, type);
			if (copy_value(&again, w, type, rw, path, depth) < 0)
				return -1;
		}
		if (action == RENUMBER || action == DUPLICATE)
			id = rw->new_id;
		th_write_field(w, id, type);  /* a bool's value is in its header */
		if (type == TH_BOOL_TRUE || type == TH_BOOL_FALSE) {
			bool v;
			if (th_read_bool(r, type, &v) < 0)
				return -1;
			continue;
		}
		if (copy_value(r, w, type, rw, path, depth) < 0)
			return -1;
	}
	if (rw->junk)
		write_junk_fields(w, 200);
	th_write_struct_end(w);
	return th_read_struct_end(r);
}

static void rewrite_struct(const tl_buf *in, tl_buf *out, const rewrite *rw)
{
	th_reader r;
	th_writer w;
	tl_error err;
	int16_t path[REWRITE_DEPTH] = {0};

	tl_error_clear(&err);
	th_reader_init(&r, in->data, in->len, &err);
	th_writer_init(&w, out);
	if (copy_struct(&r, &w, rw, path, 0) < 0) {
		fprintf(stderr, "rewrite_struct: %s\n", err.message);
		abort();                      /* the test's own input is broken */
	}
}

/* ----------------------------------------------------------- round trips */

TEST(metadata_round_trip_every_field)
{
	pq_file_metadata md, back, again;
	tl_buf wire, wire2;
	tl_error err;

	sample_full(&md);
	CHECK_OK(round_trip(&md, &wire, &back, &err), &err);
	CHECK_SAME(file_metadata_diff(&md, &back));
	/* Decoded binaries are views into the input, not copies. */
	CHECK(back.created_by.ptr >= wire.data && back.created_by.ptr < wire.data + wire.len);

	/* Encoding what was decoded gives the same bytes. */
	CHECK_OK(round_trip(&back, &wire2, &again, &err), &err);
	CHECK_INT(wire2.len, wire.len);
	CHECK(memcmp(wire.data, wire2.data, wire.len) == 0);
	pq_file_metadata_free(&again);
	pq_file_metadata_free(&back);
	tl_buf_free(&wire);
	tl_buf_free(&wire2);
}

TEST(metadata_round_trip_optional_fields_absent)
{
	pq_file_metadata md, back;
	tl_buf wire;
	tl_error err;

	sample_minimal(&md);
	CHECK_OK(round_trip(&md, &wire, &back, &err), &err);
	CHECK_SAME(file_metadata_diff(&md, &back));
	CHECK_INT(back.nrow_groups, 0);
	CHECK(back.row_groups == NULL);
	CHECK(!back.has_created_by);
	CHECK(!back.has_column_orders);
	CHECK_INT(back.schema[0].converted_type, PQ_CT_NONE);
	CHECK_INT(back.schema[0].logical.kind, PQ_LT_NONE);
	pq_file_metadata_free(&back);
	tl_buf_free(&wire);
}

TEST(metadata_page_header_round_trips)
{
	pq_page_header headers[4];

	memset(headers, 0, sizeof(headers));
	headers[0] = (pq_page_header){
		.type = PQ_PAGE_DATA, .uncompressed_page_size = 100, .compressed_page_size = 60,
		.has_crc = true, .crc = (int32_t)0x89abcdefu, .has_data_page_header = true,
		.data_page_header = {.num_values = 10, .encoding = PQ_ENC_RLE_DICTIONARY,
		                     .definition_level_encoding = PQ_ENC_RLE,
		                     .repetition_level_encoding = PQ_ENC_BIT_PACKED}};
	headers[1] = (pq_page_header){
		.type = PQ_PAGE_DICTIONARY, .uncompressed_page_size = 7, .compressed_page_size = 7,
		.has_dictionary_page_header = true,
		.dictionary_page_header = {.num_values = 2, .encoding = PQ_ENC_PLAIN, .is_sorted = true}};
	headers[2] = (pq_page_header){
		.type = PQ_PAGE_DATA_V2, .uncompressed_page_size = INT32_MAX,
		.compressed_page_size = 0, .has_data_page_header_v2 = true,
		.data_page_header_v2 = {.num_values = 5, .num_nulls = 1, .num_rows = 4,
		                        .encoding = PQ_ENC_DELTA_BINARY_PACKED,
		                        .definition_levels_byte_length = 3,
		                        .repetition_levels_byte_length = 2, .is_compressed = false}};
	headers[3] = headers[2];
	headers[3].data_page_header_v2.is_compressed = true;

	for (size_t i = 0; i < lengthof(headers); i++) {
		tl_buf wire;
		tl_error err;
		pq_page_header back;
		size_t consumed = 0;

		tl_buf_init(&wire);
		pq_page_header_encode(&headers[i], &wire);
		size_t header_len = wire.len;
		tl_buf_append(&wire, "page bytes", 10);    /* the page follows its header */
		tl_error_clear(&err);
		int rc = pq_page_header_decode(wire.data, wire.len, &back, &consumed, &err);
		tl_buf_free(&wire);
		CHECK_OK(rc, &err);
		CHECK_INT(consumed, header_len);
		CHECK_SAME(page_header_diff(&headers[i], &back));
	}
}

TEST(metadata_page_header_v2_is_compressed_defaults_true)
{
	static const rewrite no_flag = EDIT(DROP, 0, 8, 7);
	pq_page_header h = {.type = PQ_PAGE_DATA_V2, .has_data_page_header_v2 = true,
	                    .data_page_header_v2 = {.num_rows = 6, .is_compressed = false}};
	pq_page_header back;
	tl_buf wire, without;
	tl_error err;
	size_t consumed;

	tl_buf_init(&wire);
	tl_buf_init(&without);
	pq_page_header_encode(&h, &wire);
	rewrite_struct(&wire, &without, &no_flag);
	tl_error_clear(&err);
	int rc = pq_page_header_decode(without.data, without.len, &back, &consumed, &err);
	tl_buf_free(&wire);
	tl_buf_free(&without);
	CHECK_OK(rc, &err);
	CHECK(back.has_data_page_header_v2);
	CHECK(back.data_page_header_v2.is_compressed);
	CHECK_INT(back.data_page_header_v2.num_rows, 6);
}

TEST(metadata_statistics_decode)
{
	/* Written out by hand: every field, and the newer 7, 8 and 9 to skip. */
	static const uint8_t wire[] = {
		0x18, 0x02, 'z', 'z',            /* 1 max */
		0x18, 0x00,                      /* 2 min, empty */
		0x16, 0x0e,                      /* 3 null_count 7 */
		0x16, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,   /* 4 INT64_MAX */
		0x18, 0x02, 0xff, 0xfe,          /* 5 max_value */
		0x18, 0x02, 0x00, 0x01,          /* 6 min_value */
		0x11, 0x12,                      /* 7, 8 bools */
		0x16, 0x00,                      /* 9 nan_count */
		0x00,
	};
	pq_statistics want = sample_statistics(), back;
	tl_error err;

	tl_error_clear(&err);
	CHECK_OK(pq_statistics_decode(wire, sizeof(wire), &back, &err), &err);
	CHECK_SAME(statistics_diff(&want, &back));

	/* An empty struct: nothing is present, and null_count absent is not 0. */
	static const uint8_t empty[] = {0x00};
	CHECK_OK(pq_statistics_decode(empty, sizeof(empty), &back, &err), &err);
	CHECK(!back.has_null_count && !back.has_min_value && !back.has_max);

	static const uint8_t negative_nulls[] = {0x36, 0x01, 0x00};
	tl_error_clear(&err);
	CHECK_INT(pq_statistics_decode(negative_nulls, sizeof(negative_nulls), &back, &err), -1);
	CHECK_STR(err.message, "Statistics.null_count: negative value -1");
}

/* ----------------------------------------------------- what gets written */

/*
 * Appends the outline of an encoded value to out: the ids of a struct's
 * fields, with the outlines of struct and list values after their ids, and
 * the length of a list of anything but structs. "{1 2[{4 5}] 4[]}" is a
 * struct with fields 1, 2 (a list of one struct with fields 4 and 5) and 4
 * (an empty list).
 */
static void outline(th_reader *r, int type, tl_buf *out)
{
	int16_t id;
	int t;
	int32_t count;

	if (type == TH_STRUCT) {
		tl_buf_append_byte(out, '{');
		th_read_struct_begin(r);
		for (const char *sep = ""; th_read_field(r, &id, &t) == 0 && t != TH_STOP; sep = " ") {
			tl_buf_printf(out, "%s%d", sep, id);
			if (t == TH_STRUCT || t == TH_LIST)
				outline(r, t, out);
			else
				th_skip(r, t);
		}
		th_read_struct_end(r);
		tl_buf_append_byte(out, '}');
	} else if (type == TH_LIST && th_read_list_begin(r, &t, &count) == 0) {
		tl_buf_append_byte(out, '[');
		for (int32_t i = 0; i < count; i++) {
			if (t == TH_STRUCT)
				tl_buf_append_str(out, i ? " " : "");
			if (t == TH_STRUCT || t == TH_LIST)
				outline(r, t, out);
			else
				th_skip(r, t);
		}
		if (t != TH_STRUCT)
			tl_buf_printf(out, "%d", (int)count);
		tl_buf_append_byte(out, ']');
	}
}

/* The outline of md's encoding, in a static buffer. */
static const char *footer_outline(const pq_file_metadata *md)
{
	static char text[1024];
	tl_buf wire, out;
	th_reader r;
	tl_error err;

	tl_buf_init(&wire);
	tl_buf_init(&out);
	pq_file_metadata_encode(md, &wire);
	tl_error_clear(&err);
	th_reader_init(&r, wire.data, wire.len, &err);
	outline(&r, TH_STRUCT, &out);
	if (r.p != r.end)
		tl_buf_append_str(&out, " (not all read)");
	snprintf(text, sizeof(text), "%.*s", (int)out.len, (const char *)out.data);
	tl_buf_free(&wire);
	tl_buf_free(&out);
	return text;
}

/* Schema elements: what goes on the wire, and that it all comes back. */
TEST(metadata_schema_elements_on_the_wire)
{
	static const struct {
		pq_schema_element e;
		const char *outline;
	} cases[] = {
		{{.name = {(const uint8_t *)"g", 1}, .num_children = 0, .converted_type = PQ_CT_NONE},
		 "{1 2[{4 5}] 3 4[]}"},
		{{.has_repetition = true, .num_children = 2, .converted_type = PQ_CT_LIST},
		 "{1 2[{3 4 5 6}] 3 4[]}"},
		{{.has_type = true, .type = 2, .has_repetition = true, .has_field_id = true,
		  .converted_type = PQ_CT_NONE},
		 "{1 2[{1 3 4 9}] 3 4[]}"},
		{{.has_type = true, .type = 2, .converted_type = PQ_CT_INT_64,
		  .logical = {.kind = PQ_LT_INTEGER, .int_bit_width = 64}},
		 "{1 2[{1 4 6 10{10{1 2}}}] 3 4[]}"},
		{{.has_type = true, .type = 7, .type_length = 16, .converted_type = PQ_CT_DECIMAL,
		  .logical = {.kind = PQ_LT_DECIMAL}},
		 "{1 2[{1 2 4 6 7 8 10{5{1 2}}}] 3 4[]}"},
		/* scale and precision go with either form of DECIMAL */
		{{.has_type = true, .type = 1, .converted_type = PQ_CT_NONE,
		  .logical = {.kind = PQ_LT_DECIMAL}},
		 "{1 2[{1 4 7 8 10{5{1 2}}}] 3 4[]}"},
		{{.has_type = true, .type = 1, .converted_type = PQ_CT_DECIMAL},
		 "{1 2[{1 4 6 7 8}] 3 4[]}"},
		{{.has_type = true, .type = 2, .converted_type = PQ_CT_NONE,
		  .logical = {.kind = PQ_LT_TIMESTAMP, .utc_adjusted = true, .unit = 1}},
		 "{1 2[{1 4 10{8{1 2{2{}}}}}] 3 4[]}"},
		{{.has_type = true, .type = 2, .converted_type = PQ_CT_NONE,
		  .logical = {.kind = PQ_LT_TIME, .unit = 2}},
		 "{1 2[{1 4 10{7{1 2{3{}}}}}] 3 4[]}"},
		{{.has_type = true, .type = 6, .converted_type = PQ_CT_UTF8,
		  .logical = {.kind = PQ_LT_STRING}},
		 "{1 2[{1 4 6 10{1{}}}] 3 4[]}"},
		/* The other logical types and parameters, each a member of the union */
		{{.num_children = 1, .converted_type = PQ_CT_MAP, .logical = {.kind = PQ_LT_MAP}},
		 "{1 2[{4 5 6 10{2{}}}] 3 4[]}"},
		{{.num_children = 1, .converted_type = PQ_CT_LIST, .logical = {.kind = PQ_LT_LIST}},
		 "{1 2[{4 5 6 10{3{}}}] 3 4[]}"},
		{{.has_type = true, .type = 6, .converted_type = PQ_CT_ENUM,
		  .logical = {.kind = PQ_LT_ENUM}},
		 "{1 2[{1 4 6 10{4{}}}] 3 4[]}"},
		{{.has_type = true, .type = 1, .converted_type = PQ_CT_DATE,
		  .logical = {.kind = PQ_LT_DATE}},
		 "{1 2[{1 4 6 10{6{}}}] 3 4[]}"},
		{{.has_type = true, .type = 1, .converted_type = PQ_CT_TIME_MILLIS,
		  .logical = {.kind = PQ_LT_TIME, .utc_adjusted = true, .unit = 0}},
		 "{1 2[{1 4 6 10{7{1 2{1{}}}}}] 3 4[]}"},
		{{.has_type = true, .type = 2, .converted_type = PQ_CT_NONE,
		  .logical = {.kind = PQ_LT_TIMESTAMP, .unit = 2}},
		 "{1 2[{1 4 10{8{1 2{3{}}}}}] 3 4[]}"},
		{{.has_type = true, .type = 1, .converted_type = PQ_CT_UINT_16,
		  .logical = {.kind = PQ_LT_INTEGER, .int_bit_width = 16}},
		 "{1 2[{1 4 6 10{10{1 2}}}] 3 4[]}"},
		{{.has_type = true, .type = 1, .converted_type = PQ_CT_NONE,
		  .logical = {.kind = PQ_LT_UNKNOWN}},
		 "{1 2[{1 4 10{11{}}}] 3 4[]}"},
		{{.has_type = true, .type = 6, .converted_type = PQ_CT_JSON,
		  .logical = {.kind = PQ_LT_JSON}},
		 "{1 2[{1 4 6 10{12{}}}] 3 4[]}"},
		{{.has_type = true, .type = 6, .converted_type = PQ_CT_BSON,
		  .logical = {.kind = PQ_LT_BSON}},
		 "{1 2[{1 4 6 10{13{}}}] 3 4[]}"},
		{{.has_type = true, .type = 7, .type_length = 16, .converted_type = PQ_CT_NONE,
		  .logical = {.kind = PQ_LT_UUID}},
		 "{1 2[{1 2 4 10{14{}}}] 3 4[]}"},
		{{.has_type = true, .type = 7, .type_length = 2, .converted_type = PQ_CT_NONE,
		  .logical = {.kind = PQ_LT_FLOAT16}},
		 "{1 2[{1 2 4 10{15{}}}] 3 4[]}"},
	};

	for (size_t i = 0; i < lengthof(cases); i++) {
		pq_file_metadata md, back;
		pq_schema_element e = cases[i].e;
		tl_buf wire;
		tl_error err;

		sample_minimal(&md);
		e.name = text("c");
		e.scale = 4;                  /* written (and kept) only for decimals */
		e.precision = 9;
		e.logical.decimal_scale = 2;
		e.logical.decimal_precision = 7;
		md.schema = &e;
		md.num_rows = 3;
		const char *got = footer_outline(&md);
		if (strcmp(got, cases[i].outline) != 0) {
			tl_test_fail(__FILE__, __LINE__, "case %zu: %s", i, got);
			return;
		}
		bool decimal = e.converted_type == PQ_CT_DECIMAL || e.logical.kind == PQ_LT_DECIMAL;
		if (!decimal)
			e.scale = e.precision = 0;
		if (e.logical.kind != PQ_LT_DECIMAL)
			e.logical.decimal_scale = e.logical.decimal_precision = 0;
		CHECK_OK(round_trip(&md, &wire, &back, &err), &err);
		const char *where = schema_element_diff(&e, &back.schema[0]);
		pq_file_metadata_free(&back);
		tl_buf_free(&wire);
		if (where) {
			tl_test_fail(__FILE__, __LINE__, "case %zu: %s changed", i, where);
			return;
		}
	}

	/* The full sample: a TYPE_ORDER per leaf, statistics, kv with and without value. */
	pq_file_metadata md;
	sample_full(&md);
	const char *got = footer_outline(&md);
	CHECK(strstr(got, "] 5[{1 2} {1}] 6 7[{1{}} {1{}} {1{}} {1{}} {1{}}]}") != NULL);
	CHECK_STR(got, "{1 2[{3 4 5} {1 3 4 6 9 10{10{1 2}}} {1 2 3 4 6 7 8 9 10{5{1 2}}} "
	               "{1 3 4 6 9 10{8{1 2{2{}}}}} {1 3 4 10{7{1 2{3{}}}}} {1 4 6 10{1{}}}] 3 "
	               "4[{1[{1 2 3{1 2[3] 3[1] 4 5 6 7 9 11 12{1 2 3 4 5 6}}} "
	               "{2 3{1 2[0] 3[1] 4 5 6 7 9}}] 2 3 5 6 7} {1[{2}] 2 3}] "
	               "5[{1 2} {1}] 6 7[{1{}} {1{}} {1{}} {1{}} {1{}}]}");

	/* Each statistic alone is written alone. */
	static const char *const alone[] = {"12{1}", "12{2}", "12{3}", "12{4}", "12{5}", "12{6}"};
	for (int field = 0; field < 6; field++) {
		pq_statistics *st = &md.row_groups[0].columns[0].meta_data.statistics;
		*st = sample_statistics();
		bool *flags[] = {&st->has_max, &st->has_min, &st->has_null_count,
		                 &st->has_distinct_count, &st->has_max_value, &st->has_min_value};
		for (int f = 0; f < 6; f++)
			*flags[f] = f == field;
		got = footer_outline(&md);
		if (strstr(got, alone[field]) == NULL) {
			tl_test_fail(__FILE__, __LINE__, "statistic %d alone: %s", field, got);
			return;
		}
	}
}

/* -------------------------------------------------------- hostile input */

/* Decodes a footer (or a page header) that must not decode; returns the message. */
static const char *decode_failure(const uint8_t *data, size_t len, bool page, tl_error *err)
{
	int rc;

	tl_error_clear(err);
	if (page) {
		pq_page_header h;
		size_t consumed;
		rc = pq_page_header_decode(data, len, &h, &consumed, err);
	} else {
		pq_file_metadata md;
		rc = pq_file_metadata_decode(data, len, &md, err);
		pq_file_metadata_free(&md);
	}
	return rc == -1 && err->code != TL_OK ? err->message : "(decoding succeeded)";
}

/* A page header with every optional part, which the decoder does not judge. */
static const pq_page_header page_sample = {
	.type = PQ_PAGE_DATA_V2, .uncompressed_page_size = 9, .compressed_page_size = 9,
	.has_crc = true, .crc = -1, .has_data_page_header = true,
	.has_dictionary_page_header = true, .has_data_page_header_v2 = true,
	.data_page_header_v2 = {.num_values = 300}};

TEST(metadata_truncated_at_every_offset)
{
	for (int page = 0; page < 2; page++) {
		pq_file_metadata md;
		tl_buf wire;
		tl_error err;

		sample_full(&md);
		tl_buf_init(&wire);
		if (page)
			pq_page_header_encode(&page_sample, &wire);
		else
			pq_file_metadata_encode(&md, &wire);
		for (size_t len = 0; len < wire.len; len++) {
			uint8_t *copy = tl_malloc(len);     /* exact size, so ASan sees overreads */
			memcpy(copy, wire.data, len);
			const char *msg = decode_failure(copy, len, page, &err);
			free(copy);
			const char *top = page ? "PageHeader" : "FileMetaData";
			if (err.code != TL_ERR_CORRUPT || strncmp(msg, top, strlen(top)) != 0) {
				tl_test_fail(__FILE__, __LINE__, "cut at %zu of %zu: \"%s\"", len, wire.len, msg);
				break;
			}
		}
		tl_buf_free(&wire);
	}
}

/*
 * Every byte of a footer replaced by a few telling values: decoding may
 * succeed or fail, but must not crash, leak or fail without a message.
 */
static void mutate_every_byte(const uint8_t *data, size_t len, int line)
{
	static const uint8_t values[] = {0x00, 0x01, 0x0f, 0x19, 0x1c, 0x7f, 0x80, 0xf9, 0xff};
	uint8_t *copy = tl_malloc(len);

	for (size_t i = 0; i < len; i++) {
		for (size_t v = 0; v < lengthof(values); v++) {
			pq_file_metadata md;
			tl_error err;

			memcpy(copy, data, len);
			copy[i] = values[v];
			tl_error_clear(&err);
			int rc = pq_file_metadata_decode(copy, len, &md, &err);
			pq_file_metadata_free(&md);
			if (rc < 0 && (err.code == TL_OK || err.message[0] == '\0')) {
				tl_test_fail(__FILE__, line, "byte %zu = %#x failed without a message", i,
				             values[v]);
				free(copy);
				return;
			}
		}
	}
	free(copy);
}

TEST(metadata_mutated_footer)
{
	pq_file_metadata md;
	tl_buf wire;

	sample_full(&md);
	tl_buf_init(&wire);
	pq_file_metadata_encode(&md, &wire);
	mutate_every_byte(wire.data, wire.len, __LINE__);
	tl_buf_free(&wire);
}

TEST(metadata_errors_name_the_field)
{
	static const struct {
		rewrite rw;
		tl_error_code code;
		const char *message;
	} cases[] = {
		/* Footers (sample_full's) */
		{EDIT(DROP, 0, 3), TL_ERR_CORRUPT, "FileMetaData is missing required field num_rows"},
		{EDIT(DROP, 0, 4, 3), TL_ERR_CORRUPT,
		 "FileMetaData.row_groups[0]: RowGroup is missing required field num_rows"},
		{EDIT(DROP, 0, 2, 4), TL_ERR_CORRUPT,
		 "FileMetaData.schema[0]: SchemaElement is missing required field name"},
		{EDIT(DROP, 0, 5, 1), TL_ERR_CORRUPT,
		 "FileMetaData.key_value_metadata[0]: KeyValue is missing required field key"},
		{EDIT(DROP, 0, 4, 1, 2), TL_ERR_CORRUPT,
		 "FileMetaData.row_groups[0].columns[0]: ColumnChunk is missing required field "
		 "file_offset"},
		{EDIT(DROP, 0, 4, 1, 3, 4), TL_ERR_CORRUPT,
		 "FileMetaData.row_groups[0].columns[0].meta_data: ColumnMetaData is missing required "
		 "field codec"},
		{EDIT(DROP, 0, 2, 10, 8, 2), TL_ERR_CORRUPT,
		 "FileMetaData.schema[3].logicalType.TIMESTAMP: TimestampType is missing required "
		 "field unit"},
		{EDIT(DROP, 0, 2, 10, 5, 1), TL_ERR_CORRUPT,
		 "FileMetaData.schema[2].logicalType.DECIMAL: DecimalType is missing required field "
		 "scale"},
		{EDIT(AS_BINARY, 0, 4, 1, 3, 4), TL_ERR_CORRUPT,
		 "FileMetaData.row_groups[0].columns[0].meta_data.codec: wire type binary where i32 "
		 "was expected"},
		{EDIT(AS_BINARY, 0, 4, 1, 3, 12, 3), TL_ERR_CORRUPT,
		 "FileMetaData.row_groups[0].columns[0].meta_data.statistics.null_count: wire type "
		 "binary where i64 was expected"},
		{EDIT(AS_BINARY, 0, 4, 1, 3, 2), TL_ERR_CORRUPT,
		 "FileMetaData.row_groups[0].columns[0].meta_data.encodings: wire type binary where "
		 "list was expected"},
		{EDIT(AS_BINARY, 0, 2, 10, 10, 2), TL_ERR_CORRUPT,
		 "FileMetaData.schema[1].logicalType.INTEGER.isSigned: wire type binary where bool was "
		 "expected"},
		{EDIT(DUPLICATE, 14, 2, 10, 8), TL_ERR_CORRUPT,
		 "FileMetaData.schema[3].logicalType: LogicalType union has more than one member"},
		{EDIT(RENUMBER, 4, 2, 10, 8, 2, 2), TL_ERR_UNSUPPORTED,
		 "FileMetaData.schema[3].logicalType.TIMESTAMP.unit: TimeUnit has no member this "
		 "library knows (MILLIS, MICROS, NANOS)"},
		{EDIT(NEGATIVE, 0, 3), TL_ERR_CORRUPT, "FileMetaData.num_rows: negative value -1"},
		{EDIT(NEGATIVE, 0, 2, 5), TL_ERR_CORRUPT,
		 "FileMetaData.schema[0].num_children: negative value -1"},
		{EDIT(NEGATIVE, 0, 4, 1, 3, 7), TL_ERR_CORRUPT,
		 "FileMetaData.row_groups[0].columns[0].meta_data.total_compressed_size: negative value "
		 "-1"},
		{EDIT(NEGATIVE, 0, 4, 1, 3, 12, 4), TL_ERR_CORRUPT,
		 "FileMetaData.row_groups[0].columns[0].meta_data.statistics.distinct_count: negative "
		 "value -1"},
		/* Page headers (page_sample's) */
		{EDIT(DROP, 0, 3), TL_ERR_CORRUPT, "PageHeader is missing required field compressed_page_size"},
		{EDIT(NEGATIVE, 0, 3), TL_ERR_CORRUPT, "PageHeader.compressed_page_size: negative value -1"},
		{EDIT(DROP, 0, 8, 3), TL_ERR_CORRUPT,
		 "PageHeader.data_page_header_v2: DataPageHeaderV2 is missing required field num_rows"},
		{EDIT(NEGATIVE, 0, 8, 5), TL_ERR_CORRUPT,
		 "PageHeader.data_page_header_v2.definition_levels_byte_length: negative value -1"},
		{EDIT(AS_BINARY, 0, 8, 7), TL_ERR_CORRUPT,
		 "PageHeader.data_page_header_v2.is_compressed: wire type binary where bool was "
		 "expected"},
		{EDIT(NEGATIVE, 0, 7, 1), TL_ERR_CORRUPT,
		 "PageHeader.dictionary_page_header.num_values: negative value -1"},
		{EDIT(DROP, 0, 5, 4), TL_ERR_CORRUPT,
		 "PageHeader.data_page_header: DataPageHeader is missing required field "
		 "repetition_level_encoding"},
	};
	pq_file_metadata md;
	tl_buf footer, page, bad;
	tl_error err;

	sample_full(&md);
	tl_buf_init(&footer);
	tl_buf_init(&page);
	pq_file_metadata_encode(&md, &footer);
	pq_page_header_encode(&page_sample, &page);
	for (size_t i = 0; i < lengthof(cases); i++) {
		bool is_page = strncmp(cases[i].message, "PageHeader", 10) == 0;

		tl_buf_init(&bad);
		rewrite_struct(is_page ? &page : &footer, &bad, &cases[i].rw);
		const char *msg = decode_failure(bad.data, bad.len, is_page, &err);
		bool ok = strcmp(msg, cases[i].message) == 0 && err.code == cases[i].code;
		tl_buf_free(&bad);
		if (!ok) {
			tl_test_fail(__FILE__, __LINE__, "case %zu: \"%s\"", i, msg);
			break;
		}
	}
	tl_buf_free(&footer);
	tl_buf_free(&page);
}

TEST(metadata_hostile_counts_and_nesting)
{
	tl_error err;

	/* version 1, then a schema list claiming 2^31-1 elements. */
	static const uint8_t huge_list[] = {0x15, 0x02, 0x19, 0xfc, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00};
	CHECK_STR(decode_failure(huge_list, sizeof(huge_list), false, &err),
	          "FileMetaData.schema: list of 2147483647 elements cannot fit in the 1 bytes that "
	          "remain (at byte 3)");

	/* An unknown field (id 20) holding structs nested 1000 deep. */
	tl_buf deep;
	tl_buf_init(&deep);
	tl_buf_append_byte(&deep, 0x0c);             /* long-form header, type struct */
	tl_buf_append_uvarint(&deep, 40);            /* zigzag(20) */
	for (int i = 0; i < 1000; i++)
		tl_buf_append_byte(&deep, 0x1c);
	for (int i = 0; i < 1002; i++)
		tl_buf_append_byte(&deep, 0x00);
	const char *msg = decode_failure(deep.data, deep.len, false, &err);
	bool nested = strstr(msg, "FileMetaData.(field 20): values nested deeper than 32 levels") == msg;
	tl_buf_free(&deep);
	if (!nested) {
		tl_test_fail(__FILE__, __LINE__, "\"%s\"", msg);
		return;
	}

	/* A list of the wrong elements: schema as a list of one i32. */
	static const uint8_t schema_of_i32[] = {0x15, 0x02, 0x19, 0x15, 0x02, 0x00};
	CHECK_STR(decode_failure(schema_of_i32, sizeof(schema_of_i32), false, &err),
	          "FileMetaData.schema: list of i32 where a list of struct was expected");

	/* A known field of the wrong type is not skipped silently. */
	static const uint8_t version_as_binary[] = {0x18, 0x01, 'x', 0x00};
	CHECK_STR(decode_failure(version_as_binary, sizeof(version_as_binary), false, &err),
	          "FileMetaData.version: wire type binary where i32 was expected");

	/* Nothing but a bad field header. */
	static const uint8_t bad_header[] = {0x1e};
	CHECK_STR(decode_failure(bad_header, sizeof(bad_header), false, &err),
	          "FileMetaData: unknown field type 14 (at byte 0)");
}

TEST(metadata_trailing_bytes)
{
	pq_file_metadata md;
	tl_buf wire;
	tl_error err;

	sample_minimal(&md);
	tl_buf_init(&wire);
	pq_file_metadata_encode(&md, &wire);
	size_t len = wire.len;
	tl_buf_append_byte(&wire, 0x00);
	char expect[128];
	snprintf(expect, sizeof(expect), "FileMetaData ends after %zu of the footer's %zu bytes", len,
	         len + 1);
	CHECK_STR(decode_failure(wire.data, wire.len, false, &err), expect);

	/*
	 * With an encryption_algorithm (field 8) the footer is signed: a 28-byte
	 * nonce and tag follow the struct, and are not an error.
	 */
	wire.len = len - 1;                          /* reopen the struct: drop its STOP */
	tl_buf_append(&wire, "\x4c\x00\x00", 3);     /* field 8 (delta 4): an empty union; STOP */
	tl_buf_append(&wire, "0123456789abcdef0123456789ab", 28);
	pq_file_metadata back;
	tl_error_clear(&err);
	int rc = pq_file_metadata_decode(wire.data, wire.len, &back, &err);
	pq_file_metadata_free(&back);
	tl_buf_free(&wire);
	CHECK_OK(rc, &err);
}

/* Decodes a footer rewritten with unknown fields everywhere: nothing changes. */
static const char *decode_with_junk(const pq_file_metadata *md)
{
	static const rewrite junk = {.junk = true};
	static char where[64];
	pq_file_metadata back;
	tl_buf wire, future;
	tl_error err;

	tl_buf_init(&wire);
	tl_buf_init(&future);
	pq_file_metadata_encode(md, &wire);
	rewrite_struct(&wire, &future, &junk);
	tl_error_clear(&err);
	const char *diff = "(decoding failed)";
	if (pq_file_metadata_decode(future.data, future.len, &back, &err) == 0)
		diff = file_metadata_diff(md, &back);
	else
		fprintf(stderr, "decode_with_junk: %s\n", err.message);
	if (diff)
		snprintf(where, sizeof(where), "%s", diff);
	pq_file_metadata_free(&back);
	tl_buf_free(&wire);
	tl_buf_free(&future);
	return diff ? where : NULL;
}

TEST(metadata_skips_unknown_fields_everywhere)
{
	pq_file_metadata md;

	sample_full(&md);
	CHECK_SAME(decode_with_junk(&md));

	/* A LogicalType member newer than this library (VARIANT, 16) reads as none. */
	tl_buf wire, future;
	pq_file_metadata back;
	tl_error err;
	static const rewrite variant = EDIT(RENUMBER, 16, 2, 10, 6);
	md.schema[2].logical.kind = PQ_LT_DATE;
	tl_buf_init(&wire);
	tl_buf_init(&future);
	pq_file_metadata_encode(&md, &wire);
	rewrite_struct(&wire, &future, &variant);
	tl_error_clear(&err);
	int rc = pq_file_metadata_decode(future.data, future.len, &back, &err);
	int kind = rc == 0 ? back.schema[2].logical.kind : -1;
	pq_file_metadata_free(&back);
	tl_buf_free(&wire);
	tl_buf_free(&future);
	CHECK_OK(rc, &err);
	CHECK_INT(kind, PQ_LT_NONE);
}

/* --------------------------------------------------------- pyarrow files */

/* Reads a fixture (the runner starts in the repository root). */
static uint8_t *load_fixture(const char *name, size_t *len)
{
	char path[256];
	snprintf(path, sizeof(path), "lake/tests/data/metadata/%s", name);
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *data = tl_malloc(size > 0 ? (size_t)size : 1);
	*len = fread(data, 1, (size_t)size, f);
	fclose(f);
	return data;
}

static bool le_i64_is(tl_bytes b, int64_t want)
{
	uint8_t expect[8];
	for (int i = 0; i < 8; i++)
		expect[i] = (uint8_t)((uint64_t)want >> (8 * i));
	return b.len == 8 && memcmp(b.ptr, expect, 8) == 0;
}

/* The values pyarrow wrote (see make_fixtures.py); CHECK returns from here. */
static void check_pyarrow_footer(const pq_file_metadata *md)
{
	CHECK_INT(md->version, 2);
	CHECK_INT(md->num_rows, 5);
	CHECK(md->has_created_by && bytes_is(md->created_by, "parquet-cpp-arrow version 26.0.1"));
	CHECK(md->has_column_orders);
	CHECK_INT(md->nkey_value, 2);
	CHECK(bytes_is(md->key_value[0].key, "tierdb.fixture"));
	CHECK(md->key_value[0].has_value && bytes_is(md->key_value[0].value, "footer"));
	CHECK(md->key_value[1].has_value && md->key_value[1].value.len == 0);

	/* The schema: names, types, repetition, converted and logical types, field ids. */
	static const struct {
		const char *name;
		int type, type_length, repetition, converted, logical;
	} want[] = {
		{"id", 2, 0, PQ_REQUIRED, PQ_CT_NONE, PQ_LT_NONE},
		{"name", 6, 0, PQ_OPTIONAL, PQ_CT_UTF8, PQ_LT_STRING},
		{"ts", 2, 0, PQ_OPTIONAL, PQ_CT_TIMESTAMP_MICROS, PQ_LT_TIMESTAMP},
		{"ts_local", 2, 0, PQ_OPTIONAL, PQ_CT_TIMESTAMP_MICROS, PQ_LT_TIMESTAMP},
		{"amount", 7, 5, PQ_OPTIONAL, PQ_CT_DECIMAL, PQ_LT_DECIMAL},
		{"day", 1, 0, PQ_OPTIONAL, PQ_CT_DATE, PQ_LT_DATE},
		{"t", 2, 0, PQ_OPTIONAL, PQ_CT_NONE, PQ_LT_TIME},
		{"small", 1, 0, PQ_OPTIONAL, PQ_CT_INT_8, PQ_LT_INTEGER},
		{"flag", 0, 0, PQ_OPTIONAL, PQ_CT_NONE, PQ_LT_NONE},
		{"u", 7, 16, PQ_OPTIONAL, PQ_CT_NONE, PQ_LT_UUID},
	};
	const pq_schema_element *s = md->schema;
	CHECK_INT(md->nschema, 1 + lengthof(want));
	CHECK(bytes_is(s[0].name, "schema") && !s[0].has_type && !s[0].has_field_id);
	CHECK_INT(s[0].num_children, lengthof(want));
	for (size_t i = 0; i < lengthof(want); i++) {
		const pq_schema_element *e = &s[i + 1];
		if (!bytes_is(e->name, want[i].name) || !e->has_type || e->type != want[i].type ||
		    e->type_length != want[i].type_length || !e->has_repetition ||
		    e->repetition != want[i].repetition || e->converted_type != want[i].converted ||
		    e->logical.kind != want[i].logical || !e->has_field_id ||
		    e->field_id != (int32_t)i + 1 || e->num_children != 0) {
			tl_test_fail(__FILE__, __LINE__, "schema element %zu (%s) differs", i + 1,
			             want[i].name);
			return;
		}
	}
	CHECK(s[3].logical.utc_adjusted && s[3].logical.unit == 1);
	CHECK(!s[4].logical.utc_adjusted && s[4].logical.unit == 1);
	CHECK(s[5].scale == 2 && s[5].precision == 10);
	CHECK(s[5].logical.decimal_scale == 2 && s[5].logical.decimal_precision == 10);
	CHECK(!s[7].logical.utc_adjusted && s[7].logical.unit == 1);
	CHECK(s[8].logical.int_bit_width == 8 && s[8].logical.int_signed);

	/* Row groups of 3 and 2 rows, ten column chunks each. */
	CHECK_INT(md->nrow_groups, 2);
	const pq_row_group *g = md->row_groups;
	CHECK(g[0].num_rows == 3 && g[1].num_rows == 2);
	CHECK(g[0].total_byte_size == 930 && g[1].total_byte_size == 872);
	CHECK(g[0].has_file_offset && g[0].file_offset == 4);
	CHECK(g[1].has_file_offset && g[1].file_offset == 948);
	CHECK(g[0].ncolumns == 10 && g[1].ncolumns == 10);

	static const struct {
		int group, column;
		const char *path;
		int type;
		int64_t num_values, uncompressed, compressed, dictionary, data, nulls;
	} chunks[] = {
		{0, 0, "id", 2, 3, 105, 106, 4, 41, 0},
		{1, 1, "name", 6, 2, 82, 86, 1048, 1084, 0},
		{0, 8, "flag", 0, 3, 42, 44, -1, 790, 1},
	};
	for (size_t i = 0; i < lengthof(chunks); i++) {
		const pq_column_chunk *c = &g[chunks[i].group].columns[chunks[i].column];
		const pq_column_meta *m = &c->meta_data;
		if (!c->has_meta_data || c->has_file_path || c->file_offset != 0 || m->npath != 1 ||
		    !bytes_is(m->path_in_schema[0], chunks[i].path) || m->type != chunks[i].type ||
		    m->codec != 1 /* SNAPPY */ || m->num_values != chunks[i].num_values ||
		    m->total_uncompressed_size != chunks[i].uncompressed ||
		    m->total_compressed_size != chunks[i].compressed ||
		    m->has_dictionary_page_offset != (chunks[i].dictionary >= 0) ||
		    (chunks[i].dictionary >= 0 && m->dictionary_page_offset != chunks[i].dictionary) ||
		    m->data_page_offset != chunks[i].data || !m->has_statistics ||
		    !m->statistics.has_null_count || m->statistics.null_count != chunks[i].nulls) {
			tl_test_fail(__FILE__, __LINE__, "column chunk %s differs", chunks[i].path);
			return;
		}
	}
	const pq_column_meta *id0 = &g[0].columns[0].meta_data;
	CHECK_INT(id0->nencodings, 3);
	CHECK_INT(id0->encodings[0], PQ_ENC_PLAIN);
	CHECK_INT(id0->encodings[1], PQ_ENC_RLE);
	CHECK_INT(id0->encodings[2], PQ_ENC_RLE_DICTIONARY);
	CHECK(le_i64_is(id0->statistics.min_value, 10) && le_i64_is(id0->statistics.max_value, 30));
	CHECK(le_i64_is(id0->statistics.min, 10) && le_i64_is(id0->statistics.max, 30));
	const pq_statistics *name1 = &g[1].columns[1].meta_data.statistics;
	CHECK(bytes_is(name1->min_value, "alpha") && bytes_is(name1->max_value, "epsilon"));
	CHECK(!name1->has_min && !name1->has_max);   /* no signed-order bounds for strings */
}

TEST(metadata_pyarrow_footer)
{
	size_t len;
	uint8_t *data = load_fixture("pyarrow_footer.bin", &len);
	pq_file_metadata md, back;
	tl_buf wire;
	tl_error err;

	CHECK(data != NULL);
	tl_error_clear(&err);
	if (pq_file_metadata_decode(data, len, &md, &err) < 0)
		tl_test_fail(__FILE__, __LINE__, "decode: %s", err.message);
	else
		check_pyarrow_footer(&md);

	/* Lossless for what we keep, and unknown fields added everywhere change nothing. */
	if (!tl_test_failed()) {
		if (round_trip(&md, &wire, &back, &err) < 0)
			tl_test_fail(__FILE__, __LINE__, "round trip: %s", err.message);
		else if (file_metadata_diff(&md, &back) != NULL)
			tl_test_fail(__FILE__, __LINE__, "round trip changed %s",
			             file_metadata_diff(&md, &back));
		else if (decode_with_junk(&md) != NULL)
			tl_test_fail(__FILE__, __LINE__, "unknown fields changed %s", decode_with_junk(&md));
		pq_file_metadata_free(&back);
		tl_buf_free(&wire);
	}
	pq_file_metadata_free(&md);
	if (!tl_test_failed())
		mutate_every_byte(data, len, __LINE__);
	free(data);
}

/* Walks the pages of a column chunk, checking each header against `want`. */
typedef struct page_expectation {
	int type;
	int32_t num_values;
	int32_t encoding;
} page_expectation;

static int walk_chunk(const char *fixture, const page_expectation *want, int npages,
                      pq_page_header *last)
{
	size_t len, off = 0;
	uint8_t *data = load_fixture(fixture, &len);

	if (data == NULL)
		return -1;
	for (int i = 0; i < npages; i++) {
		pq_page_header h;
		size_t consumed;
		tl_error err;

		tl_error_clear(&err);
		if (pq_page_header_decode(data + off, len - off, &h, &consumed, &err) < 0)
			break;
		int32_t num_values = h.type == PQ_PAGE_DICTIONARY ? h.dictionary_page_header.num_values
		                     : h.type == PQ_PAGE_DATA     ? h.data_page_header.num_values
		                                                  : h.data_page_header_v2.num_values;
		int32_t encoding = h.type == PQ_PAGE_DICTIONARY ? h.dictionary_page_header.encoding
		                   : h.type == PQ_PAGE_DATA     ? h.data_page_header.encoding
		                                                : h.data_page_header_v2.encoding;
		if (h.type != want[i].type || num_values != want[i].num_values ||
		    encoding != want[i].encoding || (size_t)h.compressed_page_size > len - off - consumed)
			break;
		/* Where a CRC is present it covers the page's bytes as stored. */
		if (h.has_crc &&
		    (uint32_t)h.crc != crc32(0, data + off + consumed, (uInt)h.compressed_page_size))
			break;
		off += consumed + (size_t)h.compressed_page_size;
		*last = h;
	}
	free(data);
	return off == len ? 0 : -1;               /* the pages fill the chunk exactly */
}

TEST(metadata_pyarrow_page_headers)
{
	/* Column "name" of the first row group: "alpha", null, "gamma". */
	static const page_expectation v1[] = {
		{PQ_PAGE_DICTIONARY, 2, PQ_ENC_PLAIN},
		{PQ_PAGE_DATA, 3, PQ_ENC_RLE_DICTIONARY},
	};
	static const page_expectation v2[] = {
		{PQ_PAGE_DICTIONARY, 2, PQ_ENC_PLAIN},
		{PQ_PAGE_DATA_V2, 3, PQ_ENC_RLE_DICTIONARY},
	};
	pq_page_header last;

	memset(&last, 0, sizeof(last));
	CHECK_INT(walk_chunk("pyarrow_chunk_v1.bin", v1, 2, &last), 0);
	CHECK(last.has_data_page_header && !last.has_crc);
	CHECK_INT(last.data_page_header.definition_level_encoding, PQ_ENC_RLE);

	CHECK_INT(walk_chunk("pyarrow_chunk_v2.bin", v2, 2, &last), 0);
	CHECK(last.has_data_page_header_v2 && last.has_crc);
	const pq_data_page_header_v2 *v = &last.data_page_header_v2;
	CHECK_INT(v->num_nulls, 1);
	CHECK_INT(v->num_rows, 3);
	CHECK_INT(v->repetition_levels_byte_length, 0);
	CHECK_INT(v->definition_levels_byte_length, 2);
	/* ZSTD did not shrink this tiny page, so pyarrow stored it as it was, and said so. */
	CHECK(!v->is_compressed);
	CHECK_INT(last.compressed_page_size, last.uncompressed_page_size);
}

/*
 * A footer can name a million empty structs in a million bytes; decoded,
 * they would take 88 MB. The decoder refuses to allocate that much more
 * than its input before reading them.
 */
TEST(metadata_bounds_what_a_footer_can_allocate)
{
	size_t n = 1000000;
	tl_buf footer;
	tl_buf_init(&footer);
	const uint8_t head[] = {0x15, 0x02, 0x19, 0xfc}; /* version = 1, then schema: list<struct>, long count */
	tl_buf_append(&footer, head, sizeof(head));
	tl_buf_append_uvarint(&footer, n);
	memset(tl_buf_extend(&footer, n), 0, n); /* every element an empty struct */
	tl_buf_append_byte(&footer, 0);
	pq_file_metadata md;
	tl_error err;
	tl_error_clear(&err);
	int rc = pq_file_metadata_decode(footer.data, footer.len, &md, &err);
	pq_file_metadata_free(&md);
	tl_buf_free(&footer);
	CHECK(rc < 0);
	if (strstr(err.message, "decoding would need") == NULL)
		tl_test_fail(__FILE__, __LINE__, "message: %s", err.message);
	CHECK(strstr(err.message, "schema") != NULL);
}
