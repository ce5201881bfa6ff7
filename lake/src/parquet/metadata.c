/*
 * metadata.c: Parquet's footer (FileMetaData), page headers and statistics,
 * decoded from and encoded to the Thrift compact protocol.
 *
 * Each struct is described by a struct_type: its name, a field callback that
 * knows its field ids, and its required fields. One shared loop
 * (decode_struct) reads the field headers, hands each to the callback, skips
 * every id the callback does not know (newer writers keep adding fields),
 * and checks that the required fields came. Every field's wire type is
 * checked before its value is read. Errors name the way to the bad field,
 * built as the recursion unwinds: "FileMetaData.row_groups[1].columns[0]
 * .meta_data.codec: wire type binary where i32 was expected", or "...: RowGroup
 * is missing required field num_rows".
 *
 * Encoding writes fields in id order and optional fields only when set, as
 * parquet-cpp does, so pyarrow and the other readers accept what we write.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "parquet/metadata.h"
#include "parquet/thrift.h"

#define lengthof(array) (sizeof(array) / sizeof((array)[0]))

/* ------------------------------------------------------------- decoding */

/* What the error message starts with, which decides how context joins it. */
typedef enum msg_state {
	MSG_BARE,     /* a protocol error, no location yet: "input ends inside a varint" */
	MSG_NAMED,    /* a sentence naming its struct: "RowGroup is missing ..." */
	MSG_PATH      /* a field path: "num_rows: negative value -1" */
} msg_state;

typedef struct decoder {
	th_reader r;
	tl_arena *arena;      /* where decoded arrays go; NULL for page headers */
	size_t alloc_budget;  /* bytes of arrays the input may make us allocate */
	msg_state msg;
	bool footer_signed;   /* FileMetaData has an encryption_algorithm */
} decoder;

/* A field callback's answer when the id is not one it decodes. */
#define FIELD_UNKNOWN 1

/*
 * Decodes the value of field `id` (whose wire type is `type`) into `out`.
 * Returns 0, -1 on error, or FIELD_UNKNOWN to have the value skipped.
 */
typedef int (*field_decoder)(decoder *d, int16_t id, int type, void *out);

typedef struct required_field {
	int16_t id;
	const char *name;
} required_field;

typedef struct struct_type {
	const char *name;
	size_t size;                    /* bytes of `out` to zero first; 0 to leave it */
	void (*set_defaults)(void *out);
	field_decoder field;
	const required_field *required; /* ends with a NULL name; NULL for none */
} struct_type;

static void decoder_init(decoder *d, const uint8_t *data, size_t len, tl_arena *arena,
                         tl_error *err)
{
	th_reader_init(&d->r, data, len, err);
	d->arena = arena;
	/*
	 * Counts are checked against the bytes left, but a decoded element is
	 * bigger than its smallest encoding (a 224-byte ColumnChunk from a few
	 * bytes), so a hostile footer could still ask for hundreds of times its
	 * size. Real footers decode to a few times theirs; stop well past that.
	 */
	d->alloc_budget = 16 * len + (1 << 20);
	d->msg = MSG_BARE;
	d->footer_signed = false;
}

static void prepend(tl_error *err, const char *head)
{
	char old[TL_ERROR_MESSAGE_MAX];
	size_t cap = sizeof(err->message) - 1;
	size_t hlen = strnlen(head, cap);

	memcpy(old, err->message, sizeof(old));
	memcpy(err->message, head, hlen);
	size_t olen = strnlen(old, cap - hlen);
	memcpy(err->message + hlen, old, olen);
	err->message[hlen + olen] = '\0';
}

/*
 * Adds a step of the path to the message as a failure travels out of the
 * field named by fmt: "max_value: " before a bare or named message,
 * "statistics." before a path. Returns -1.
 */
static int blame(decoder *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int blame(decoder *d, const char *fmt, ...)
{
	char head[128];
	va_list ap;

	if (d->r.err == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(head, sizeof(head) - 2, fmt, ap);
	va_end(ap);
	strcat(head, d->msg == MSG_PATH ? "." : ": ");
	prepend(d->r.err, head);
	d->msg = MSG_PATH;
	return -1;
}

/* Fails the decoder with a message about the current value; returns -1. */
static int fail(decoder *d, tl_error_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(decoder *d, tl_error_code code, const char *fmt, ...)
{
	char message[TL_ERROR_MESSAGE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	d->r.failed = true;
	tl_error_set(d->r.err, code, "%s", message);
	return -1;
}

static const char *wire_type_name(int type)
{
	static const char *const names[] = {
		"stop", "bool", "bool", "i8", "i16", "i32", "i64", "double",
		"binary", "list", "set", "map", "struct", "uuid"
	};

	return type >= 0 && type < (int)lengthof(names) ? names[type] : "unknown";
}

static int wrong_type(decoder *d, const char *field, int type, int want)
{
	fail(d, TL_ERR_CORRUPT, "wire type %s where %s was expected", wire_type_name(type),
	     wire_type_name(want));
	return blame(d, "%s", field);
}

static int negative(decoder *d, const char *field, int64_t value)
{
	fail(d, TL_ERR_CORRUPT, "negative value %lld", (long long)value);
	return blame(d, "%s", field);
}

/*
 * Reads a struct of type t into out: field headers until STOP, each value
 * decoded by t's callback or skipped, then the check that every required
 * field came.
 */
static int decode_struct(decoder *d, const struct_type *t, void *out)
{
	uint64_t seen = 0;

	if (t->size > 0)
		memset(out, 0, t->size);
	if (t->set_defaults)
		t->set_defaults(out);
	if (th_read_struct_begin(&d->r) < 0)
		return -1;
	for (;;) {
		int16_t id;
		int type;

		if (th_read_field(&d->r, &id, &type) < 0)
			return -1;
		if (type == TH_STOP)
			break;
		int rc = t->field(d, id, type, out);
		if (rc < 0)
			return -1;
		if (rc == FIELD_UNKNOWN && th_skip(&d->r, type) < 0)
			return blame(d, "(field %d)", id);
		if (id > 0 && id < 64)
			seen |= UINT64_C(1) << id;
	}
	if (th_read_struct_end(&d->r) < 0)
		return -1;
	for (const required_field *f = t->required; f && f->name; f++) {
		if ((seen & (UINT64_C(1) << f->id)) == 0) {
			fail(d, TL_ERR_CORRUPT, "%s is missing required field %s", t->name, f->name);
			d->msg = MSG_NAMED;
			return -1;
		}
	}
	return 0;
}

/* For structs whose fields we keep none of, and unions of such structs. */
static int no_known_fields(decoder *d, int16_t id, int type, void *out)
{
	return FIELD_UNKNOWN;
}

static const struct_type ignored_struct = {"struct", 0, NULL, no_known_fields, NULL};

/*
 * Field readers: each checks the wire type, reads, and names the field on
 * failure, with these two.
 */
static int expect(decoder *d, int type, int want, const char *field)
{
	bool is_bool = type == TH_BOOL_TRUE || type == TH_BOOL_FALSE;

	if (type == want || (want == TH_BOOL_TRUE && is_bool))
		return 0;
	return wrong_type(d, field, type, want);
}

static int named(decoder *d, int rc, const char *field)
{
	return rc < 0 ? blame(d, "%s", field) : 0;
}

static int get_bool(decoder *d, int type, const char *field, bool *out)
{
	if (expect(d, type, TH_BOOL_TRUE, field) < 0)
		return -1;
	return named(d, th_read_bool(&d->r, type, out), field);
}

static int get_i8(decoder *d, int type, const char *field, int8_t *out)
{
	if (expect(d, type, TH_I8, field) < 0)
		return -1;
	return named(d, th_read_i8(&d->r, out), field);
}

static int get_i16(decoder *d, int type, const char *field, int16_t *out)
{
	if (expect(d, type, TH_I16, field) < 0)
		return -1;
	return named(d, th_read_i16(&d->r, out), field);
}

static int get_i32(decoder *d, int type, const char *field, int32_t *out)
{
	if (expect(d, type, TH_I32, field) < 0)
		return -1;
	return named(d, th_read_i32(&d->r, out), field);
}

static int get_i64(decoder *d, int type, const char *field, int64_t *out)
{
	if (expect(d, type, TH_I64, field) < 0)
		return -1;
	return named(d, th_read_i64(&d->r, out), field);
}

/* An i32 that counts or measures something, so cannot be negative. */
static int get_size32(decoder *d, int type, const char *field, int32_t *out)
{
	if (get_i32(d, type, field, out) < 0)
		return -1;
	return *out < 0 ? negative(d, field, *out) : 0;
}

static int get_size64(decoder *d, int type, const char *field, int64_t *out)
{
	if (get_i64(d, type, field, out) < 0)
		return -1;
	return *out < 0 ? negative(d, field, *out) : 0;
}

static int get_binary(decoder *d, int type, const char *field, tl_bytes *out)
{
	if (expect(d, type, TH_BINARY, field) < 0)
		return -1;
	return named(d, th_read_binary(&d->r, out), field);
}

static int get_struct(decoder *d, int type, const char *field, const struct_type *t, void *out)
{
	if (expect(d, type, TH_STRUCT, field) < 0)
		return -1;
	return named(d, decode_struct(d, t, out), field);
}

/*
 * Reads a list header whose elements must have wire type `want`. The count
 * is already bounded by the input (th_read_list_begin), so arrays sized by it
 * are at most a small multiple of the footer's own size.
 */
static int get_list(decoder *d, int type, const char *field, int want, int32_t *count)
{
	int elem_type;

	if (expect(d, type, TH_LIST, field) < 0 ||
	    named(d, th_read_list_begin(&d->r, &elem_type, count), field) < 0)
		return -1;
	if (*count > 0 && elem_type != want) {
		fail(d, TL_ERR_CORRUPT, "list of %s where a list of %s was expected",
		     wire_type_name(elem_type), wire_type_name(want));
		return blame(d, "%s", field);
	}
	return 0;
}

static int alloc_array(decoder *d, const char *field, int32_t count, size_t elem_size, void **out)
{
	*out = NULL;
	if (count == 0 || elem_size == 0)
		return 0;
	size_t bytes = (size_t)count * elem_size;
	if (d->arena->total + bytes > d->alloc_budget) {
		fail(d, TL_ERR_CORRUPT, "decoding would need over %zu bytes for a %zu-byte input",
		     d->alloc_budget, (size_t)(d->r.end - d->r.start));
		return blame(d, "%s", field);
	}
	*out = tl_arena_alloc(d->arena, bytes);
	if (*out == NULL) {
		fail(d, TL_ERR_NOMEM, "out of memory decoding %zu bytes of Parquet metadata", bytes);
		return blame(d, "%s", field);
	}
	memset(*out, 0, bytes);
	return 0;
}

static int get_i32_list(decoder *d, int type, const char *field, int32_t **items, int32_t *count)
{
	if (get_list(d, type, field, TH_I32, count) < 0)
		return -1;
	if (alloc_array(d, field, *count, sizeof(int32_t), (void **)items) < 0)
		return -1;
	for (int32_t i = 0; i < *count; i++) {
		if (th_read_i32(&d->r, &(*items)[i]) < 0)
			return blame(d, "%s[%d]", field, (int)i);
	}
	return 0;
}

static int get_binary_list(decoder *d, int type, const char *field, tl_bytes **items,
                           int32_t *count)
{
	if (get_list(d, type, field, TH_BINARY, count) < 0)
		return -1;
	if (alloc_array(d, field, *count, sizeof(tl_bytes), (void **)items) < 0)
		return -1;
	for (int32_t i = 0; i < *count; i++) {
		if (th_read_binary(&d->r, &(*items)[i]) < 0)
			return blame(d, "%s[%d]", field, (int)i);
	}
	return 0;
}

/*
 * A list of structs of type t, decoded into an array of t->size bytes per
 * element, or only checked when t->size is 0.
 */
static int get_struct_list(decoder *d, int type, const char *field, const struct_type *t,
                           void **items, int32_t *count)
{
	if (get_list(d, type, field, TH_STRUCT, count) < 0)
		return -1;
	uint8_t *array;
	if (alloc_array(d, field, *count, t->size, (void **)&array) < 0)
		return -1;
	for (int32_t i = 0; i < *count; i++) {
		if (decode_struct(d, t, array ? array + (size_t)i * t->size : NULL) < 0)
			return blame(d, "%s[%d]", field, (int)i);
	}
	*items = array;
	return 0;
}

/* Statistics */

static int statistics_field(decoder *d, int16_t id, int type, void *out)
{
	pq_statistics *s = out;

	switch (id) {
	case 1:
		s->has_max = true;
		return get_binary(d, type, "max", &s->max);
	case 2:
		s->has_min = true;
		return get_binary(d, type, "min", &s->min);
	case 3:
		s->has_null_count = true;
		return get_size64(d, type, "null_count", &s->null_count);
	case 4:
		s->has_distinct_count = true;
		return get_size64(d, type, "distinct_count", &s->distinct_count);
	case 5:
		s->has_max_value = true;
		return get_binary(d, type, "max_value", &s->max_value);
	case 6:
		s->has_min_value = true;
		return get_binary(d, type, "min_value", &s->min_value);
	}
	return FIELD_UNKNOWN;
}

static const struct_type statistics_type = {
	"Statistics", sizeof(pq_statistics), NULL, statistics_field, NULL
};

/*
 * LogicalType is a union of structs; the parameterised ones (DecimalType,
 * TimeType, TimestampType, IntType) decode into the pq_logical_type itself.
 */

static const required_field decimal_type_required[] = {
	{1, "scale"}, {2, "precision"}, {0, NULL}
};

static int decimal_type_field(decoder *d, int16_t id, int type, void *out)
{
	pq_logical_type *lt = out;

	switch (id) {
	case 1:
		return get_i32(d, type, "scale", &lt->decimal_scale);
	case 2:
		return get_i32(d, type, "precision", &lt->decimal_precision);
	}
	return FIELD_UNKNOWN;
}

static const struct_type decimal_type = {
	"DecimalType", 0, NULL, decimal_type_field, decimal_type_required
};

/* TimeUnit is a union of empty structs: the member's id is the unit. */
static int time_unit_field(decoder *d, int16_t id, int type, void *out)
{
	static const char *const units[] = {"MILLIS", "MICROS", "NANOS"};
	int *unit = out;

	if (id < 1 || id > (int)lengthof(units))
		return FIELD_UNKNOWN;
	if (*unit >= 0)
		return fail(d, TL_ERR_CORRUPT, "TimeUnit union has more than one member");
	*unit = id - 1;
	return get_struct(d, type, units[id - 1], &ignored_struct, NULL);
}

static void no_unit_yet(void *out)
{
	*(int *)out = -1;
}

static const struct_type time_unit_type = {"TimeUnit", 0, no_unit_yet, time_unit_field, NULL};

static const required_field time_type_required[] = {
	{1, "isAdjustedToUTC"}, {2, "unit"}, {0, NULL}
};

/* TimeType and TimestampType have the same fields. */
static int time_type_field(decoder *d, int16_t id, int type, void *out)
{
	pq_logical_type *lt = out;

	switch (id) {
	case 1:
		return get_bool(d, type, "isAdjustedToUTC", &lt->utc_adjusted);
	case 2:
		if (get_struct(d, type, "unit", &time_unit_type, &lt->unit) < 0)
			return -1;
		if (lt->unit < 0) {
			fail(d, TL_ERR_UNSUPPORTED,
			     "TimeUnit has no member this library knows (MILLIS, MICROS, NANOS)");
			return blame(d, "unit");
		}
		return 0;
	}
	return FIELD_UNKNOWN;
}

static const struct_type time_type = {
	"TimeType", 0, NULL, time_type_field, time_type_required
};
static const struct_type timestamp_type = {
	"TimestampType", 0, NULL, time_type_field, time_type_required
};

static const required_field int_type_required[] = {
	{1, "bitWidth"}, {2, "isSigned"}, {0, NULL}
};

static int int_type_field(decoder *d, int16_t id, int type, void *out)
{
	pq_logical_type *lt = out;

	switch (id) {
	case 1:
		return get_i8(d, type, "bitWidth", &lt->int_bit_width);
	case 2:
		return get_bool(d, type, "isSigned", &lt->int_signed);
	}
	return FIELD_UNKNOWN;
}

static const struct_type int_type = {"IntType", 0, NULL, int_type_field, int_type_required};

/* Union member names, indexed by field id (PQ_LT_*); NULL where unknown. */
static const char *const logical_type_members[] = {
	[PQ_LT_STRING] = "STRING",
	[PQ_LT_MAP] = "MAP",
	[PQ_LT_LIST] = "LIST",
	[PQ_LT_ENUM] = "ENUM",
	[PQ_LT_DECIMAL] = "DECIMAL",
	[PQ_LT_DATE] = "DATE",
	[PQ_LT_TIME] = "TIME",
	[PQ_LT_TIMESTAMP] = "TIMESTAMP",
	[PQ_LT_INTEGER] = "INTEGER",
	[PQ_LT_UNKNOWN] = "UNKNOWN",
	[PQ_LT_JSON] = "JSON",
	[PQ_LT_BSON] = "BSON",
	[PQ_LT_UUID] = "UUID",
	[PQ_LT_FLOAT16] = "FLOAT16",
};

static int logical_type_field(decoder *d, int16_t id, int type, void *out)
{
	pq_logical_type *lt = out;

	/* Members added after this library (VARIANT, GEOMETRY, ...) are skipped. */
	if (id <= 0 || id >= (int)lengthof(logical_type_members) || logical_type_members[id] == NULL)
		return FIELD_UNKNOWN;
	if (lt->kind != PQ_LT_NONE)
		return fail(d, TL_ERR_CORRUPT, "LogicalType union has more than one member");
	lt->kind = id;
	const char *member = logical_type_members[id];
	switch (id) {
	case PQ_LT_DECIMAL:
		return get_struct(d, type, member, &decimal_type, lt);
	case PQ_LT_TIME:
		return get_struct(d, type, member, &time_type, lt);
	case PQ_LT_TIMESTAMP:
		return get_struct(d, type, member, &timestamp_type, lt);
	case PQ_LT_INTEGER:
		return get_struct(d, type, member, &int_type, lt);
	default:
		return get_struct(d, type, member, &ignored_struct, NULL);
	}
}

static const struct_type logical_type = {
	"LogicalType", sizeof(pq_logical_type), NULL, logical_type_field, NULL
};

/* SchemaElement */

static const required_field schema_element_required[] = {{4, "name"}, {0, NULL}};

static int schema_element_field(decoder *d, int16_t id, int type, void *out)
{
	pq_schema_element *e = out;

	switch (id) {
	case 1:
		e->has_type = true;
		return get_i32(d, type, "type", &e->type);
	case 2:
		return get_size32(d, type, "type_length", &e->type_length);
	case 3:
		e->has_repetition = true;
		return get_i32(d, type, "repetition_type", &e->repetition);
	case 4:
		return get_binary(d, type, "name", &e->name);
	case 5:
		return get_size32(d, type, "num_children", &e->num_children);
	case 6:
		return get_size32(d, type, "converted_type", &e->converted_type);
	case 7:
		return get_i32(d, type, "scale", &e->scale);
	case 8:
		return get_i32(d, type, "precision", &e->precision);
	case 9:
		e->has_field_id = true;
		return get_i32(d, type, "field_id", &e->field_id);
	case 10:
		return get_struct(d, type, "logicalType", &logical_type, &e->logical);
	}
	return FIELD_UNKNOWN;
}

static void schema_element_defaults(void *out)
{
	((pq_schema_element *)out)->converted_type = PQ_CT_NONE;
}

static const struct_type schema_element_type = {
	"SchemaElement", sizeof(pq_schema_element), schema_element_defaults, schema_element_field,
	schema_element_required
};

/* KeyValue */

static const required_field key_value_required[] = {{1, "key"}, {0, NULL}};

static int key_value_field(decoder *d, int16_t id, int type, void *out)
{
	pq_key_value *kv = out;

	switch (id) {
	case 1:
		return get_binary(d, type, "key", &kv->key);
	case 2:
		kv->has_value = true;
		return get_binary(d, type, "value", &kv->value);
	}
	return FIELD_UNKNOWN;
}

static const struct_type key_value_type = {
	"KeyValue", sizeof(pq_key_value), NULL, key_value_field, key_value_required
};

/* ColumnMetaData, ColumnChunk, RowGroup */

static const required_field column_meta_required[] = {
	{1, "type"}, {2, "encodings"}, {3, "path_in_schema"}, {4, "codec"}, {5, "num_values"},
	{6, "total_uncompressed_size"}, {7, "total_compressed_size"}, {9, "data_page_offset"},
	{0, NULL}
};

static int column_meta_field(decoder *d, int16_t id, int type, void *out)
{
	pq_column_meta *m = out;

	switch (id) {
	case 1:
		return get_i32(d, type, "type", &m->type);
	case 2:
		return get_i32_list(d, type, "encodings", &m->encodings, &m->nencodings);
	case 3:
		return get_binary_list(d, type, "path_in_schema", &m->path_in_schema, &m->npath);
	case 4:
		return get_i32(d, type, "codec", &m->codec);
	case 5:
		return get_size64(d, type, "num_values", &m->num_values);
	case 6:
		return get_size64(d, type, "total_uncompressed_size", &m->total_uncompressed_size);
	case 7:
		return get_size64(d, type, "total_compressed_size", &m->total_compressed_size);
	case 9:
		return get_size64(d, type, "data_page_offset", &m->data_page_offset);
	case 11:
		m->has_dictionary_page_offset = true;
		return get_size64(d, type, "dictionary_page_offset", &m->dictionary_page_offset);
	case 12:
		m->has_statistics = true;
		return get_struct(d, type, "statistics", &statistics_type, &m->statistics);
	case 14:
		m->has_bloom_filter = true;
		return get_size64(d, type, "bloom_filter_offset", &m->bloom_filter_offset);
	case 15:
		m->has_bloom_filter_length = true;
		return get_size32(d, type, "bloom_filter_length", &m->bloom_filter_length);
	}
	return FIELD_UNKNOWN;
}

static const struct_type column_meta_type = {
	"ColumnMetaData", sizeof(pq_column_meta), NULL, column_meta_field, column_meta_required
};

static const required_field column_chunk_required[] = {{2, "file_offset"}, {0, NULL}};

static int column_chunk_field(decoder *d, int16_t id, int type, void *out)
{
	pq_column_chunk *c = out;

	switch (id) {
	case 1:
		c->has_file_path = true;
		return get_binary(d, type, "file_path", &c->file_path);
	case 2:
		/* Deprecated and used inconsistently by writers: kept, not judged. */
		return get_i64(d, type, "file_offset", &c->file_offset);
	case 3:
		c->has_meta_data = true;
		return get_struct(d, type, "meta_data", &column_meta_type, &c->meta_data);
	/* The page index: a chunk has it only when both offset and length came. */
	case 4:
		return get_size64(d, type, "offset_index_offset", &c->offset_index_offset);
	case 5:
		c->has_offset_index = true;
		return get_size32(d, type, "offset_index_length", &c->offset_index_length);
	case 6:
		return get_size64(d, type, "column_index_offset", &c->column_index_offset);
	case 7:
		c->has_column_index = true;
		return get_size32(d, type, "column_index_length", &c->column_index_length);
	}
	return FIELD_UNKNOWN;
}

static const struct_type column_chunk_type = {
	"ColumnChunk", sizeof(pq_column_chunk), NULL, column_chunk_field, column_chunk_required
};

static const required_field row_group_required[] = {
	{1, "columns"}, {2, "total_byte_size"}, {3, "num_rows"}, {0, NULL}
};

static int row_group_field(decoder *d, int16_t id, int type, void *out)
{
	pq_row_group *g = out;

	switch (id) {
	case 1:
		return get_struct_list(d, type, "columns", &column_chunk_type, (void **)&g->columns,
		                       &g->ncolumns);
	case 2:
		return get_size64(d, type, "total_byte_size", &g->total_byte_size);
	case 3:
		return get_size64(d, type, "num_rows", &g->num_rows);
	case 5:
		g->has_file_offset = true;
		return get_size64(d, type, "file_offset", &g->file_offset);
	case 6:
		g->has_total_compressed_size = true;
		return get_size64(d, type, "total_compressed_size", &g->total_compressed_size);
	case 7:
		/* Not judged: writers store the ordinal mod 2^16 past 32767 row groups. */
		g->has_ordinal = true;
		return get_i16(d, type, "ordinal", &g->ordinal);
	}
	return FIELD_UNKNOWN;
}

static const struct_type row_group_type = {
	"RowGroup", sizeof(pq_row_group), NULL, row_group_field, row_group_required
};

/* FileMetaData */

static const required_field file_metadata_required[] = {
	{1, "version"}, {2, "schema"}, {3, "num_rows"}, {4, "row_groups"}, {0, NULL}
};

static int file_metadata_field(decoder *d, int16_t id, int type, void *out)
{
	pq_file_metadata *md = out;
	void *ignored;
	int32_t norders;

	switch (id) {
	case 1:
		return get_i32(d, type, "version", &md->version);
	case 2:
		return get_struct_list(d, type, "schema", &schema_element_type, (void **)&md->schema,
		                       &md->nschema);
	case 3:
		return get_size64(d, type, "num_rows", &md->num_rows);
	case 4:
		return get_struct_list(d, type, "row_groups", &row_group_type,
		                       (void **)&md->row_groups, &md->nrow_groups);
	case 5:
		return get_struct_list(d, type, "key_value_metadata", &key_value_type,
		                       (void **)&md->key_value, &md->nkey_value);
	case 6:
		md->has_created_by = true;
		return get_binary(d, type, "created_by", &md->created_by);
	case 7:
		/* ColumnOrder unions: only their presence matters to us. */
		md->has_column_orders = true;
		return get_struct_list(d, type, "column_orders", &ignored_struct, &ignored, &norders);
	case 8:
		/* encryption_algorithm: a signature follows the footer's struct. */
		d->footer_signed = true;
		return FIELD_UNKNOWN;
	}
	return FIELD_UNKNOWN;
}

/* Not zeroed here: pq_file_metadata_decode has set up the arena inside it. */
static const struct_type file_metadata_type = {
	"FileMetaData", 0, NULL, file_metadata_field, file_metadata_required
};

/*
 * Completes the message of a failed top-level decode with the struct's name,
 * unless the message already starts with it.
 */
static int fail_top(decoder *d, const char *name)
{
	if (d->r.err == NULL)
		return -1;
	if (d->msg == MSG_PATH) {
		char head[64];
		snprintf(head, sizeof(head), "%s.", name);
		prepend(d->r.err, head);
	} else if (d->msg == MSG_BARE) {
		blame(d, "%s", name);
	}
	return -1;
}

int pq_file_metadata_decode(const uint8_t *data, size_t len, pq_file_metadata *out,
                            tl_error *err)
{
	decoder d;

	memset(out, 0, sizeof(*out));
	tl_arena_init(&out->arena, 16 * 1024);
	decoder_init(&d, data, len, &out->arena, err);
	if (decode_struct(&d, &file_metadata_type, out) < 0)
		return fail_top(&d, "FileMetaData");
	size_t used = th_reader_offset(&d.r, data);
	if (used != len && !d.footer_signed)
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "FileMetaData ends after %zu of the footer's %zu bytes", used, len);
	return 0;
}

void pq_file_metadata_free(pq_file_metadata *md)
{
	tl_arena_free(&md->arena);
	memset(md, 0, sizeof(*md));
}

int pq_statistics_decode(const uint8_t *data, size_t len, pq_statistics *out, tl_error *err)
{
	decoder d;

	decoder_init(&d, data, len, NULL, err);
	if (decode_struct(&d, &statistics_type, out) < 0)
		return fail_top(&d, "Statistics");
	return 0;
}

/* ------------------------------------------------------------- page index */

static int get_i64_list(decoder *d, int type, const char *field, int64_t **items, int32_t *count)
{
	if (get_list(d, type, field, TH_I64, count) < 0)
		return -1;
	if (alloc_array(d, field, *count, sizeof(int64_t), (void **)items) < 0)
		return -1;
	for (int32_t i = 0; i < *count; i++) {
		if (th_read_i64(&d->r, &(*items)[i]) < 0)
			return blame(d, "%s[%d]", field, (int)i);
	}
	return 0;
}

static int get_bool_list(decoder *d, int type, const char *field, bool **items, int32_t *count)
{
	if (get_list(d, type, field, TH_BOOL_TRUE, count) < 0)
		return -1;
	if (alloc_array(d, field, *count, sizeof(bool), (void **)items) < 0)
		return -1;
	for (int32_t i = 0; i < *count; i++) {
		if (th_read_bool(&d->r, TH_BOOL_TRUE, &(*items)[i]) < 0)
			return blame(d, "%s[%d]", field, (int)i);
	}
	return 0;
}

static const required_field page_location_required[] = {
	{1, "offset"}, {2, "compressed_page_size"}, {3, "first_row_index"}, {0, NULL}
};

static int page_location_field(decoder *d, int16_t id, int type, void *out)
{
	pq_page_location *p = out;
	switch (id) {
	case 1:
		return get_size64(d, type, "offset", &p->offset);
	case 2:
		return get_size32(d, type, "compressed_page_size", &p->compressed_page_size);
	case 3:
		return get_size64(d, type, "first_row_index", &p->first_row_index);
	}
	return FIELD_UNKNOWN;
}

static const struct_type page_location_type = {
	"PageLocation", sizeof(pq_page_location), NULL, page_location_field, page_location_required
};

static const required_field offset_index_required[] = {{1, "page_locations"}, {0, NULL}};

static int offset_index_field(decoder *d, int16_t id, int type, void *out)
{
	pq_offset_index *oi = out;
	if (id == 1)
		return get_struct_list(d, type, "page_locations", &page_location_type, (void **)&oi->pages,
		                       &oi->npages);
	return FIELD_UNKNOWN;     /* 2, unencoded_byte_array_data_bytes */
}

static const struct_type offset_index_type = {
	"OffsetIndex", sizeof(pq_offset_index), NULL, offset_index_field, offset_index_required
};

static const required_field column_index_required[] = {
	{1, "null_pages"}, {2, "min_values"}, {3, "max_values"}, {4, "boundary_order"}, {0, NULL}
};

static int column_index_field(decoder *d, int16_t id, int type, void *out)
{
	pq_column_index *ci = out;
	switch (id) {
	case 1:
		return get_bool_list(d, type, "null_pages", &ci->null_pages, &ci->npages);
	case 2:
		return get_binary_list(d, type, "min_values", &ci->min_values, &ci->nmin);
	case 3:
		return get_binary_list(d, type, "max_values", &ci->max_values, &ci->nmax);
	case 4:
		return get_i32(d, type, "boundary_order", &ci->boundary_order);
	case 5:
		return get_i64_list(d, type, "null_counts", &ci->null_counts, &ci->nnull_counts);
	}
	return FIELD_UNKNOWN;     /* 6, 7: level histograms */
}

static const struct_type column_index_type = {
	"ColumnIndex", sizeof(pq_column_index), NULL, column_index_field, column_index_required
};

/* Decodes a struct of type t from exactly len bytes, arrays in arena. */
static int decode_exactly(const uint8_t *data, size_t len, tl_arena *arena, const struct_type *t, void *out,
                          tl_error *err)
{
	decoder d;
	decoder_init(&d, data, len, arena, err);
	if (decode_struct(&d, t, out) < 0)
		return fail_top(&d, t->name);
	size_t used = th_reader_offset(&d.r, data);
	if (used != len)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s ends after %zu of its %zu bytes", t->name, used, len);
	return 0;
}

int pq_offset_index_decode(const uint8_t *data, size_t len, tl_arena *arena, pq_offset_index *out, tl_error *err)
{
	return decode_exactly(data, len, arena, &offset_index_type, out, err);
}

int pq_column_index_decode(const uint8_t *data, size_t len, tl_arena *arena, pq_column_index *out, tl_error *err)
{
	return decode_exactly(data, len, arena, &column_index_type, out, err);
}

/* ------------------------------------------------------------- bloom filter header */

/* The three unions of BloomFilterHeader each have one member, an empty struct, with id 1. */
static int only_member_field(decoder *d, int16_t id, int type, void *out)
{
	if (id != 1)
		return FIELD_UNKNOWN;
	*(bool *)out = true;
	return get_struct(d, type, "member", &ignored_struct, NULL);
}

static const struct_type bloom_union_type = {"union", 0, NULL, only_member_field, NULL};

static const required_field bloom_header_required[] = {
	{1, "numBytes"}, {2, "algorithm"}, {3, "hash"}, {4, "compression"}, {0, NULL}
};

static int bloom_header_field(decoder *d, int16_t id, int type, void *out)
{
	pq_bloom_header *h = out;
	switch (id) {
	case 1:
		return get_size32(d, type, "numBytes", &h->num_bytes);
	case 2:
		return get_struct(d, type, "algorithm", &bloom_union_type, &h->split_block);
	case 3:
		return get_struct(d, type, "hash", &bloom_union_type, &h->xxhash);
	case 4:
		return get_struct(d, type, "compression", &bloom_union_type, &h->uncompressed);
	}
	return FIELD_UNKNOWN;
}

static const struct_type bloom_header_type = {
	"BloomFilterHeader", sizeof(pq_bloom_header), NULL, bloom_header_field, bloom_header_required
};

int pq_bloom_header_decode(const uint8_t *data, size_t len, pq_bloom_header *out, size_t *consumed, tl_error *err)
{
	decoder d;
	decoder_init(&d, data, len, NULL, err);
	if (decode_struct(&d, &bloom_header_type, out) < 0)
		return fail_top(&d, "BloomFilterHeader");
	*consumed = th_reader_offset(&d.r, data);
	return 0;
}

/* Page headers */

static const required_field data_page_header_required[] = {
	{1, "num_values"}, {2, "encoding"}, {3, "definition_level_encoding"},
	{4, "repetition_level_encoding"}, {0, NULL}
};

static int data_page_header_field(decoder *d, int16_t id, int type, void *out)
{
	pq_data_page_header *h = out;

	switch (id) {
	case 1:
		return get_size32(d, type, "num_values", &h->num_values);
	case 2:
		return get_i32(d, type, "encoding", &h->encoding);
	case 3:
		return get_i32(d, type, "definition_level_encoding", &h->definition_level_encoding);
	case 4:
		return get_i32(d, type, "repetition_level_encoding", &h->repetition_level_encoding);
	}
	return FIELD_UNKNOWN;     /* 5, page statistics: not used by the reader */
}

static const struct_type data_page_header_type = {
	"DataPageHeader", sizeof(pq_data_page_header), NULL, data_page_header_field,
	data_page_header_required
};

static const required_field dictionary_page_header_required[] = {
	{1, "num_values"}, {2, "encoding"}, {0, NULL}
};

static int dictionary_page_header_field(decoder *d, int16_t id, int type, void *out)
{
	pq_dictionary_page_header *h = out;

	switch (id) {
	case 1:
		return get_size32(d, type, "num_values", &h->num_values);
	case 2:
		return get_i32(d, type, "encoding", &h->encoding);
	case 3:
		return get_bool(d, type, "is_sorted", &h->is_sorted);
	}
	return FIELD_UNKNOWN;
}

static const struct_type dictionary_page_header_type = {
	"DictionaryPageHeader", sizeof(pq_dictionary_page_header), NULL,
	dictionary_page_header_field, dictionary_page_header_required
};

static const required_field data_page_header_v2_required[] = {
	{1, "num_values"}, {2, "num_nulls"}, {3, "num_rows"}, {4, "encoding"},
	{5, "definition_levels_byte_length"}, {6, "repetition_levels_byte_length"}, {0, NULL}
};

static int data_page_header_v2_field(decoder *d, int16_t id, int type, void *out)
{
	pq_data_page_header_v2 *h = out;

	switch (id) {
	case 1:
		return get_size32(d, type, "num_values", &h->num_values);
	case 2:
		return get_size32(d, type, "num_nulls", &h->num_nulls);
	case 3:
		return get_size32(d, type, "num_rows", &h->num_rows);
	case 4:
		return get_i32(d, type, "encoding", &h->encoding);
	case 5:
		return get_size32(d, type, "definition_levels_byte_length",
		                  &h->definition_levels_byte_length);
	case 6:
		return get_size32(d, type, "repetition_levels_byte_length",
		                  &h->repetition_levels_byte_length);
	case 7:
		return get_bool(d, type, "is_compressed", &h->is_compressed);
	}
	return FIELD_UNKNOWN;     /* 8, page statistics */
}

static void data_page_header_v2_defaults(void *out)
{
	((pq_data_page_header_v2 *)out)->is_compressed = true;    /* parquet.thrift's default */
}

static const struct_type data_page_header_v2_type = {
	"DataPageHeaderV2", sizeof(pq_data_page_header_v2), data_page_header_v2_defaults,
	data_page_header_v2_field, data_page_header_v2_required
};

static const required_field page_header_required[] = {
	{1, "type"}, {2, "uncompressed_page_size"}, {3, "compressed_page_size"}, {0, NULL}
};

static int page_header_field(decoder *d, int16_t id, int type, void *out)
{
	pq_page_header *h = out;

	switch (id) {
	case 1:
		return get_i32(d, type, "type", &h->type);
	case 2:
		return get_size32(d, type, "uncompressed_page_size", &h->uncompressed_page_size);
	case 3:
		return get_size32(d, type, "compressed_page_size", &h->compressed_page_size);
	case 4:
		h->has_crc = true;
		return get_i32(d, type, "crc", &h->crc);
	case 5:
		h->has_data_page_header = true;
		return get_struct(d, type, "data_page_header", &data_page_header_type,
		                  &h->data_page_header);
	case 7:
		h->has_dictionary_page_header = true;
		return get_struct(d, type, "dictionary_page_header", &dictionary_page_header_type,
		                  &h->dictionary_page_header);
	case 8:
		h->has_data_page_header_v2 = true;
		return get_struct(d, type, "data_page_header_v2", &data_page_header_v2_type,
		                  &h->data_page_header_v2);
	}
	return FIELD_UNKNOWN;     /* 6, index_page_header: an empty struct */
}

static const struct_type page_header_type = {
	"PageHeader", sizeof(pq_page_header), NULL, page_header_field, page_header_required
};

int pq_page_header_decode(const uint8_t *data, size_t len, pq_page_header *out, size_t *consumed,
                          tl_error *err)
{
	decoder d;

	decoder_init(&d, data, len, NULL, err);
	if (decode_struct(&d, &page_header_type, out) < 0)
		return fail_top(&d, "PageHeader");
	*consumed = th_reader_offset(&d.r, data);
	return 0;
}

/* ------------------------------------------------------------- encoding */

static void put_i32(th_writer *w, int16_t id, int32_t v)
{
	th_write_field(w, id, TH_I32);
	th_write_i32(w, v);
}

static void put_i64(th_writer *w, int16_t id, int64_t v)
{
	th_write_field(w, id, TH_I64);
	th_write_i64(w, v);
}

static void put_binary(th_writer *w, int16_t id, tl_bytes v)
{
	th_write_field(w, id, TH_BINARY);
	th_write_binary(w, v.ptr, v.len);
}

static void put_list(th_writer *w, int16_t id, int elem_type, int32_t count)
{
	th_write_field(w, id, TH_LIST);
	th_write_list_begin(w, elem_type, count);
}

/* An empty struct as a field's value: a union member with nothing inside. */
static void put_empty_struct(th_writer *w, int16_t id)
{
	th_write_field(w, id, TH_STRUCT);
	th_write_struct_begin(w);
	th_write_struct_end(w);
}

static void encode_statistics(th_writer *w, const pq_statistics *s)
{
	th_write_struct_begin(w);
	if (s->has_max)
		put_binary(w, 1, s->max);
	if (s->has_min)
		put_binary(w, 2, s->min);
	if (s->has_null_count)
		put_i64(w, 3, s->null_count);
	if (s->has_distinct_count)
		put_i64(w, 4, s->distinct_count);
	if (s->has_max_value)
		put_binary(w, 5, s->max_value);
	if (s->has_min_value)
		put_binary(w, 6, s->min_value);
	th_write_struct_end(w);
}

static void encode_logical_type(th_writer *w, const pq_logical_type *lt)
{
	th_write_struct_begin(w);
	th_write_field(w, (int16_t)lt->kind, TH_STRUCT);
	th_write_struct_begin(w);
	switch (lt->kind) {
	case PQ_LT_DECIMAL:
		put_i32(w, 1, lt->decimal_scale);
		put_i32(w, 2, lt->decimal_precision);
		break;
	case PQ_LT_TIME:
	case PQ_LT_TIMESTAMP:
		th_write_bool_field(w, 1, lt->utc_adjusted);
		th_write_field(w, 2, TH_STRUCT);
		th_write_struct_begin(w);
		put_empty_struct(w, (int16_t)(lt->unit + 1));    /* TimeUnit's member ids are 1..3 */
		th_write_struct_end(w);
		break;
	case PQ_LT_INTEGER:
		th_write_field(w, 1, TH_I8);
		th_write_i8(w, lt->int_bit_width);
		th_write_bool_field(w, 2, lt->int_signed);
		break;
	default:
		break;                /* every other member is an empty struct */
	}
	th_write_struct_end(w);
	th_write_struct_end(w);
}

static void encode_schema_element(th_writer *w, const pq_schema_element *e)
{
	th_write_struct_begin(w);
	if (e->has_type)
		put_i32(w, 1, e->type);
	if (e->type_length > 0)
		put_i32(w, 2, e->type_length);
	if (e->has_repetition)
		put_i32(w, 3, e->repetition);
	put_binary(w, 4, e->name);
	if (!e->has_type)
		put_i32(w, 5, e->num_children);     /* a group, the root included */
	if (e->converted_type != PQ_CT_NONE)
		put_i32(w, 6, e->converted_type);
	if (e->converted_type == PQ_CT_DECIMAL || e->logical.kind == PQ_LT_DECIMAL) {
		put_i32(w, 7, e->scale);
		put_i32(w, 8, e->precision);
	}
	if (e->has_field_id)
		put_i32(w, 9, e->field_id);
	if (e->logical.kind != PQ_LT_NONE) {
		th_write_field(w, 10, TH_STRUCT);
		encode_logical_type(w, &e->logical);
	}
	th_write_struct_end(w);
}

static void encode_column_meta(th_writer *w, const pq_column_meta *m)
{
	th_write_struct_begin(w);
	put_i32(w, 1, m->type);
	put_list(w, 2, TH_I32, m->nencodings);
	for (int32_t i = 0; i < m->nencodings; i++)
		th_write_i32(w, m->encodings[i]);
	put_list(w, 3, TH_BINARY, m->npath);
	for (int32_t i = 0; i < m->npath; i++)
		th_write_binary(w, m->path_in_schema[i].ptr, m->path_in_schema[i].len);
	put_i32(w, 4, m->codec);
	put_i64(w, 5, m->num_values);
	put_i64(w, 6, m->total_uncompressed_size);
	put_i64(w, 7, m->total_compressed_size);
	put_i64(w, 9, m->data_page_offset);
	if (m->has_dictionary_page_offset)
		put_i64(w, 11, m->dictionary_page_offset);
	if (m->has_statistics) {
		th_write_field(w, 12, TH_STRUCT);
		encode_statistics(w, &m->statistics);
	}
	if (m->has_bloom_filter)
		put_i64(w, 14, m->bloom_filter_offset);
	if (m->has_bloom_filter_length)
		put_i32(w, 15, m->bloom_filter_length);
	th_write_struct_end(w);
}

static void encode_column_chunk(th_writer *w, const pq_column_chunk *c)
{
	th_write_struct_begin(w);
	if (c->has_file_path)
		put_binary(w, 1, c->file_path);
	put_i64(w, 2, c->file_offset);
	if (c->has_meta_data) {
		th_write_field(w, 3, TH_STRUCT);
		encode_column_meta(w, &c->meta_data);
	}
	if (c->has_offset_index) {
		put_i64(w, 4, c->offset_index_offset);
		put_i32(w, 5, c->offset_index_length);
	}
	if (c->has_column_index) {
		put_i64(w, 6, c->column_index_offset);
		put_i32(w, 7, c->column_index_length);
	}
	th_write_struct_end(w);
}

static void encode_row_group(th_writer *w, const pq_row_group *g)
{
	th_write_struct_begin(w);
	put_list(w, 1, TH_STRUCT, g->ncolumns);
	for (int32_t i = 0; i < g->ncolumns; i++)
		encode_column_chunk(w, &g->columns[i]);
	put_i64(w, 2, g->total_byte_size);
	put_i64(w, 3, g->num_rows);
	if (g->has_file_offset)
		put_i64(w, 5, g->file_offset);
	if (g->has_total_compressed_size)
		put_i64(w, 6, g->total_compressed_size);
	if (g->has_ordinal) {
		th_write_field(w, 7, TH_I16);
		th_write_i16(w, g->ordinal);
	}
	th_write_struct_end(w);
}

void pq_file_metadata_encode(const pq_file_metadata *md, tl_buf *out)
{
	th_writer w;

	th_writer_init(&w, out);
	th_write_struct_begin(&w);
	put_i32(&w, 1, md->version);
	put_list(&w, 2, TH_STRUCT, md->nschema);
	for (int32_t i = 0; i < md->nschema; i++)
		encode_schema_element(&w, &md->schema[i]);
	put_i64(&w, 3, md->num_rows);
	put_list(&w, 4, TH_STRUCT, md->nrow_groups);
	for (int32_t i = 0; i < md->nrow_groups; i++)
		encode_row_group(&w, &md->row_groups[i]);
	if (md->nkey_value > 0) {
		put_list(&w, 5, TH_STRUCT, md->nkey_value);
		for (int32_t i = 0; i < md->nkey_value; i++) {
			th_write_struct_begin(&w);
			put_binary(&w, 1, md->key_value[i].key);
			if (md->key_value[i].has_value)
				put_binary(&w, 2, md->key_value[i].value);
			th_write_struct_end(&w);
		}
	}
	if (md->has_created_by)
		put_binary(&w, 6, md->created_by);
	if (md->has_column_orders) {
		/* One TYPE_ORDER per leaf (an element with a type), in schema order. */
		int32_t nleaves = 0;
		for (int32_t i = 0; i < md->nschema; i++)
			nleaves += md->schema[i].has_type;
		put_list(&w, 7, TH_STRUCT, nleaves);
		for (int32_t i = 0; i < nleaves; i++) {
			th_write_struct_begin(&w);
			put_empty_struct(&w, 1);
			th_write_struct_end(&w);
		}
	}
	th_write_struct_end(&w);
}

void pq_page_header_encode(const pq_page_header *h, tl_buf *out)
{
	th_writer w;

	th_writer_init(&w, out);
	th_write_struct_begin(&w);
	put_i32(&w, 1, h->type);
	put_i32(&w, 2, h->uncompressed_page_size);
	put_i32(&w, 3, h->compressed_page_size);
	if (h->has_crc)
		put_i32(&w, 4, h->crc);
	if (h->has_data_page_header) {
		const pq_data_page_header *p = &h->data_page_header;
		th_write_field(&w, 5, TH_STRUCT);
		th_write_struct_begin(&w);
		put_i32(&w, 1, p->num_values);
		put_i32(&w, 2, p->encoding);
		put_i32(&w, 3, p->definition_level_encoding);
		put_i32(&w, 4, p->repetition_level_encoding);
		th_write_struct_end(&w);
	}
	if (h->has_dictionary_page_header) {
		const pq_dictionary_page_header *p = &h->dictionary_page_header;
		th_write_field(&w, 7, TH_STRUCT);
		th_write_struct_begin(&w);
		put_i32(&w, 1, p->num_values);
		put_i32(&w, 2, p->encoding);
		th_write_bool_field(&w, 3, p->is_sorted);
		th_write_struct_end(&w);
	}
	if (h->has_data_page_header_v2) {
		const pq_data_page_header_v2 *p = &h->data_page_header_v2;
		th_write_field(&w, 8, TH_STRUCT);
		th_write_struct_begin(&w);
		put_i32(&w, 1, p->num_values);
		put_i32(&w, 2, p->num_nulls);
		put_i32(&w, 3, p->num_rows);
		put_i32(&w, 4, p->encoding);
		put_i32(&w, 5, p->definition_levels_byte_length);
		put_i32(&w, 6, p->repetition_levels_byte_length);
		th_write_bool_field(&w, 7, p->is_compressed);
		th_write_struct_end(&w);
	}
	th_write_struct_end(&w);
}

void pq_offset_index_encode(const pq_offset_index *oi, tl_buf *out)
{
	th_writer w;

	th_writer_init(&w, out);
	th_write_struct_begin(&w);
	put_list(&w, 1, TH_STRUCT, oi->npages);
	for (int32_t i = 0; i < oi->npages; i++) {
		th_write_struct_begin(&w);
		put_i64(&w, 1, oi->pages[i].offset);
		put_i32(&w, 2, oi->pages[i].compressed_page_size);
		put_i64(&w, 3, oi->pages[i].first_row_index);
		th_write_struct_end(&w);
	}
	th_write_struct_end(&w);
}

void pq_column_index_encode(const pq_column_index *ci, tl_buf *out)
{
	th_writer w;

	th_writer_init(&w, out);
	th_write_struct_begin(&w);
	put_list(&w, 1, TH_BOOL_TRUE, ci->npages);
	for (int32_t i = 0; i < ci->npages; i++)
		th_write_bool(&w, ci->null_pages[i]);
	put_list(&w, 2, TH_BINARY, ci->nmin);
	for (int32_t i = 0; i < ci->nmin; i++)
		th_write_binary(&w, ci->min_values[i].ptr, ci->min_values[i].len);
	put_list(&w, 3, TH_BINARY, ci->nmax);
	for (int32_t i = 0; i < ci->nmax; i++)
		th_write_binary(&w, ci->max_values[i].ptr, ci->max_values[i].len);
	put_i32(&w, 4, ci->boundary_order);
	if (ci->nnull_counts > 0) {
		put_list(&w, 5, TH_I64, ci->nnull_counts);
		for (int32_t i = 0; i < ci->nnull_counts; i++)
			th_write_i64(&w, ci->null_counts[i]);
	}
	th_write_struct_end(&w);
}

void pq_bloom_header_encode(int32_t num_bytes, tl_buf *out)
{
	th_writer w;

	th_writer_init(&w, out);
	th_write_struct_begin(&w);
	put_i32(&w, 1, num_bytes);
	th_write_field(&w, 2, TH_STRUCT);     /* algorithm: BLOCK */
	th_write_struct_begin(&w);
	put_empty_struct(&w, 1);
	th_write_struct_end(&w);
	th_write_field(&w, 3, TH_STRUCT);     /* hash: XXHASH */
	th_write_struct_begin(&w);
	put_empty_struct(&w, 1);
	th_write_struct_end(&w);
	th_write_field(&w, 4, TH_STRUCT);     /* compression: UNCOMPRESSED */
	th_write_struct_begin(&w);
	put_empty_struct(&w, 1);
	th_write_struct_end(&w);
	th_write_struct_end(&w);
}
