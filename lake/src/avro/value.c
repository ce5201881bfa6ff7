/*
 * value.c: the Avro binary encoding of one datum, to and from the generic
 * tl_avro_value tree, plus the accessors and builders callers walk it with.
 *
 * Decoding trusts nothing: every length and count is checked against the
 * bytes left before anything is allocated, and a budget of values caps what
 * zero-byte data (nulls, empty records) can make us allocate. Byte, string
 * and fixed values are views into the input, not copies.
 */
#include <stdlib.h>
#include <string.h>

#include "avro/avro_internal.h"

/* ------------------------------------------------------------- varints */

int avro_read_long(avro_cursor *c, int64_t *out, const char *what, tl_error *err)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 70; shift += 7) {
		if (c->p >= c->end) {
			c->truncated = true;
			return tl_error_set(err, TL_ERR_CORRUPT, "Avro: truncated %s", what);
		}
		uint8_t byte = *c->p++;
		if (shift == 63 && (byte & 0x7e) != 0)
			return tl_error_set(err, TL_ERR_CORRUPT, "Avro: %s overflows a long", what);
		v |= (uint64_t)(byte & 0x7f) << shift;
		if ((byte & 0x80) == 0) {
			*out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
			return 0;
		}
	}
	return tl_error_set(err, TL_ERR_CORRUPT, "Avro: %s is a varint longer than 10 bytes", what);
}

int avro_read_size(avro_cursor *c, uint64_t *out, const char *what, tl_error *err)
{
	int64_t v = 0;
	if (avro_read_long(c, &v, what, err) != 0)
		return -1;
	if (v < 0)
		return tl_error_set(err, TL_ERR_CORRUPT, "Avro: negative %s (%lld)", what, (long long)v);
	if ((uint64_t)v > (uint64_t)(c->end - c->p)) {
		c->truncated = true;
		return tl_error_set(err, TL_ERR_CORRUPT, "Avro: %s %lld exceeds the %zu bytes left", what, (long long)v,
		                    (size_t)(c->end - c->p));
	}
	*out = (uint64_t)v;
	return 0;
}

void avro_write_long(tl_buf *b, int64_t v)
{
	tl_buf_append_uvarint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* ------------------------------------------------------------ decoding */

typedef struct decoder {
	avro_cursor cur;
	tl_arena *arena;
	uint64_t budget; /* values we may still create */
	tl_error *err;
} decoder;

static int spend(decoder *d, uint64_t n)
{
	if (n > d->budget)
		return tl_error_set(d->err, TL_ERR_CORRUPT,
		                    "Avro: data decodes to more values than its size allows (%llu more)",
		                    (unsigned long long)n);
	d->budget -= n;
	return 0;
}

static size_t left(const decoder *d)
{
	return (size_t)(d->cur.end - d->cur.p);
}

static int take(decoder *d, size_t n, const uint8_t **out, const char *what)
{
	if (n > left(d)) {
		d->cur.truncated = true;
		return tl_error_set(d->err, TL_ERR_CORRUPT, "Avro: truncated %s (%zu bytes needed, %zu left)", what, n,
		                    left(d));
	}
	*out = d->cur.p;
	d->cur.p += n;
	return 0;
}

static int decode_value(decoder *d, const tl_avro_schema *s, tl_avro_value *out, int depth);

/* Whether every value of s takes at least one byte (so a count can be checked against the bytes left). */
static bool takes_bytes(const tl_avro_schema *s, int depth)
{
	switch (s->type) {
	case TL_AVRO_NULL:
		return false;
	case TL_AVRO_FIXED:
		return s->size > 0;
	case TL_AVRO_RECORD:
		if (depth > 8)
			return false; /* conservatively: the value budget still applies */
		for (uint32_t i = 0; i < s->n_fields; i++)
			if (takes_bytes(s->fields[i].type, depth + 1))
				return true;
		return false;
	default:
		return true;
	}
}

/* Decodes the blocks of an array or map into one contiguous item array. */
static int decode_list(decoder *d, const tl_avro_schema *s, tl_avro_value *out, int depth)
{
	bool is_map = s->type == TL_AVRO_MAP;
	typedef struct chunk {
		tl_avro_value *items;
		tl_bytes *keys;
		uint64_t n;
	} chunk;
	chunk one = {0}, *chunks = &one;
	size_t n_chunks = 0, cap = 1;
	uint64_t total = 0;
	int rc = -1;
	for (;;) {
		int64_t count = 0;
		if (avro_read_long(&d->cur, &count, is_map ? "map block count" : "array block count", d->err) != 0)
			goto done;
		if (count == 0)
			break;
		if (count < 0) {
			/* A negative count is followed by the block's size in bytes, which we do not need. */
			uint64_t size = 0;
			if (count == INT64_MIN) {
				tl_error_set(d->err, TL_ERR_CORRUPT, "Avro: block count out of range");
				goto done;
			}
			count = -count;
			if (avro_read_size(&d->cur, &size, "block size", d->err) != 0)
				goto done;
		}
		if ((takes_bytes(s->items, 0) || is_map) && (uint64_t)count > left(d)) {
			d->cur.truncated = true;
			tl_error_set(d->err, TL_ERR_CORRUPT, "Avro: %s block of %lld items exceeds the %zu bytes left",
			             is_map ? "map" : "array", (long long)count, left(d));
			goto done;
		}
		if (spend(d, (uint64_t)count) != 0 || total + (uint64_t)count > UINT32_MAX) {
			tl_error_set(d->err, TL_ERR_CORRUPT, "Avro: %s of %lld items is longer than its data allows",
			             is_map ? "map" : "array", (long long)count);
			goto done;
		}
		if (n_chunks == cap) {
			chunk *grown = tl_malloc(2 * cap * sizeof(chunk));
			if (grown == NULL) {
				tl_error_nomem(d->err, "decoding an Avro %s", is_map ? "map" : "array");
				goto done;
			}
			memcpy(grown, chunks, cap * sizeof(chunk));
			if (chunks != &one)
				tl_free(chunks);
			chunks = grown;
			cap *= 2;
		}
		chunk *c = &chunks[n_chunks++];
		c->n = (uint64_t)count;
		c->items = tl_arena_alloc(d->arena, c->n * sizeof(tl_avro_value));
		c->keys = is_map ? tl_arena_alloc(d->arena, c->n * sizeof(tl_bytes)) : NULL;
		if (c->items == NULL || (is_map && c->keys == NULL)) {
			tl_error_nomem(d->err, "decoding an Avro %s", is_map ? "map" : "array");
			goto done;
		}
		for (uint64_t i = 0; i < c->n; i++) {
			if (is_map) {
				uint64_t len = 0;
				const uint8_t *p = NULL;
				if (avro_read_size(&d->cur, &len, "map key length", d->err) != 0 ||
				    take(d, len, &p, "map key") != 0)
					goto done;
				c->keys[i] = (tl_bytes){p, (uint32_t)len};
			}
			if (decode_value(d, s->items, &c->items[i], depth + 1) != 0)
				goto done;
		}
		total += c->n;
	}
	out->u.list.n = (uint32_t)total;
	if (n_chunks <= 1) {
		out->u.list.items = n_chunks ? chunks[0].items : NULL;
		out->u.list.keys = n_chunks ? chunks[0].keys : NULL;
	} else {
		if (spend(d, total) != 0)
			goto done;
		out->u.list.items = tl_arena_alloc(d->arena, total * sizeof(tl_avro_value));
		out->u.list.keys = is_map ? tl_arena_alloc(d->arena, total * sizeof(tl_bytes)) : NULL;
		if (out->u.list.items == NULL || (is_map && out->u.list.keys == NULL)) {
			out->u.list.n = 0;
			tl_error_nomem(d->err, "decoding an Avro %s", is_map ? "map" : "array");
			goto done;
		}
		uint64_t at = 0;
		for (size_t i = 0; i < n_chunks; i++) {
			memcpy(out->u.list.items + at, chunks[i].items, chunks[i].n * sizeof(tl_avro_value));
			if (is_map)
				memcpy(out->u.list.keys + at, chunks[i].keys, chunks[i].n * sizeof(tl_bytes));
			at += chunks[i].n;
		}
	}
	rc = 0;
done:
	if (chunks != &one)
		tl_free(chunks);
	return rc;
}

static int decode_value(decoder *d, const tl_avro_schema *s, tl_avro_value *out, int depth)
{
	const uint8_t *p = NULL;
	if (depth > TL_AVRO_MAX_DEPTH)
		return tl_error_set(d->err, TL_ERR_CORRUPT, "Avro: value nested deeper than %d levels", TL_AVRO_MAX_DEPTH);
	out->schema = s;
	out->branch = -1;
	switch (s->type) {
	case TL_AVRO_NULL:
		return 0;
	case TL_AVRO_BOOLEAN:
		if (take(d, 1, &p, "boolean") != 0)
			return -1;
		if (*p > 1)
			return tl_error_set(d->err, TL_ERR_CORRUPT, "Avro: boolean byte is %u, not 0 or 1", *p);
		out->u.boolean = *p == 1;
		return 0;
	case TL_AVRO_INT: {
		int64_t v = 0;
		if (avro_read_long(&d->cur, &v, "int", d->err) != 0)
			return -1;
		if (v < INT32_MIN || v > INT32_MAX)
			return tl_error_set(d->err, TL_ERR_CORRUPT, "Avro: int %lld out of range", (long long)v);
		out->u.i32 = (int32_t)v;
		return 0;
	}
	case TL_AVRO_LONG:
		return avro_read_long(&d->cur, &out->u.i64, "long", d->err);
	case TL_AVRO_FLOAT:
		if (take(d, 4, &p, "float") != 0)
			return -1;
		memcpy(&out->u.f32, p, 4); /* little-endian on every platform we build for */
		return 0;
	case TL_AVRO_DOUBLE:
		if (take(d, 8, &p, "double") != 0)
			return -1;
		memcpy(&out->u.f64, p, 8);
		return 0;
	case TL_AVRO_BYTES:
	case TL_AVRO_STRING: {
		uint64_t len = 0;
		const char *what = s->type == TL_AVRO_BYTES ? "bytes" : "string";
		if (avro_read_size(&d->cur, &len, what, d->err) != 0 || take(d, len, &p, what) != 0)
			return -1;
		if (len > UINT32_MAX)
			return tl_error_set(d->err, TL_ERR_CORRUPT, "Avro: %s longer than 4 GiB", what);
		out->u.bytes = (tl_bytes){p, (uint32_t)len};
		return 0;
	}
	case TL_AVRO_FIXED:
		if (take(d, (size_t)s->size, &p, "fixed") != 0)
			return -1;
		out->u.bytes = (tl_bytes){p, (uint32_t)s->size};
		return 0;
	case TL_AVRO_ENUM: {
		int64_t v = 0;
		if (avro_read_long(&d->cur, &v, "enum index", d->err) != 0)
			return -1;
		if (v < 0 || v >= (int64_t)s->n_symbols)
			return tl_error_set(d->err, TL_ERR_CORRUPT, "Avro: enum index %lld out of range for %s",
			                    (long long)v, s->name);
		out->u.symbol = (uint32_t)v;
		return 0;
	}
	case TL_AVRO_ARRAY:
	case TL_AVRO_MAP:
		return decode_list(d, s, out, depth);
	case TL_AVRO_RECORD:
		if (spend(d, s->n_fields) != 0)
			return -1;
		out->u.record.fields = tl_arena_alloc(d->arena, (s->n_fields ? s->n_fields : 1) * sizeof(tl_avro_value));
		if (out->u.record.fields == NULL)
			return tl_error_nomem(d->err, "decoding an Avro record");
		for (uint32_t i = 0; i < s->n_fields; i++)
			if (decode_value(d, s->fields[i].type, &out->u.record.fields[i], depth + 1) != 0) {
				tl_error_prefix(d->err, "field %s", s->fields[i].name);
				return -1;
			}
		return 0;
	case TL_AVRO_UNION: {
		int64_t v = 0;
		if (avro_read_long(&d->cur, &v, "union branch", d->err) != 0)
			return -1;
		if (v < 0 || v >= (int64_t)s->n_branches)
			return tl_error_set(d->err, TL_ERR_CORRUPT, "Avro: union branch %lld out of range (%u branches)",
			                    (long long)v, s->n_branches);
		if (decode_value(d, s->branches[v], out, depth + 1) != 0)
			return -1;
		out->branch = (int32_t)v;
		return 0;
	}
	}
	return tl_error_set(d->err, TL_ERR_CORRUPT, "Avro: unknown schema type %d", (int)s->type);
}

int tl_avro_decode(const uint8_t *data, size_t len, size_t *used, const tl_avro_schema *schema, tl_arena *arena,
                   uint64_t max_values, tl_avro_value *out, tl_error *err)
{
	decoder d = {.cur = {data, data + len, false}, .arena = arena, .budget = max_values, .err = err};
	if (spend(&d, 1) != 0 || decode_value(&d, schema, out, 0) != 0)
		return -1;
	if (used != NULL)
		*used = (size_t)(d.cur.p - data);
	return 0;
}

/* Used by the container reader to share one budget across a block's records. */
int avro_decode_budgeted(avro_cursor *cur, const tl_avro_schema *schema, tl_arena *arena, uint64_t *budget,
                         tl_avro_value *out, tl_error *err)
{
	decoder d = {.cur = *cur, .arena = arena, .budget = *budget, .err = err};
	int rc = spend(&d, 1) == 0 ? decode_value(&d, schema, out, 0) : -1;
	*cur = d.cur;
	*budget = d.budget;
	return rc;
}

/* ------------------------------------------------------------ encoding */

/* Whether a value made for schema `v` can be written where `declared` is expected. */
static bool same_type(const tl_avro_schema *declared, const tl_avro_schema *v)
{
	if (declared == v)
		return true;
	if (declared->type != v->type)
		return false;
	switch (declared->type) {
	case TL_AVRO_RECORD:
	case TL_AVRO_ENUM:
	case TL_AVRO_FIXED:
		return strcmp(declared->name, v->name) == 0;
	default:
		return true;
	}
}

static int encode_value(tl_buf *out, const tl_avro_schema *s, const tl_avro_value *v, int depth, tl_error *err)
{
	if (depth > TL_AVRO_MAX_DEPTH)
		return tl_error_set(err, TL_ERR_INVALID, "Avro: value nested deeper than %d levels", TL_AVRO_MAX_DEPTH);
	if (v == NULL || v->schema == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "Avro: value is not set (expected %s)", tl_avro_type_name(s->type));
	if (s->type == TL_AVRO_UNION) {
		int32_t b = v->branch;
		if (b >= 0 && ((uint32_t)b >= s->n_branches || !same_type(s->branches[b], v->schema)))
			return tl_error_set(err, TL_ERR_INVALID, "Avro: union branch %d does not take a %s", b,
			                    tl_avro_type_name(v->schema->type));
		for (uint32_t i = 0; b < 0 && i < s->n_branches; i++)
			if (same_type(s->branches[i], v->schema))
				b = (int32_t)i;
		if (b < 0)
			return tl_error_set(err, TL_ERR_INVALID, "Avro: union has no %s branch", tl_avro_type_name(v->schema->type));
		avro_write_long(out, b);
		return encode_value(out, s->branches[b], v, depth + 1, err);
	}
	if (!same_type(s, v->schema))
		return tl_error_set(err, TL_ERR_INVALID, "Avro: expected %s, got %s", tl_avro_type_name(s->type),
		                    tl_avro_type_name(v->schema->type));
	switch (s->type) {
	case TL_AVRO_NULL:
		return 0;
	case TL_AVRO_BOOLEAN:
		tl_buf_append_byte(out, v->u.boolean ? 1 : 0);
		return 0;
	case TL_AVRO_INT:
		avro_write_long(out, v->u.i32);
		return 0;
	case TL_AVRO_LONG:
		avro_write_long(out, v->u.i64);
		return 0;
	case TL_AVRO_FLOAT:
		tl_buf_append(out, &v->u.f32, 4);
		return 0;
	case TL_AVRO_DOUBLE:
		tl_buf_append(out, &v->u.f64, 8);
		return 0;
	case TL_AVRO_BYTES:
	case TL_AVRO_STRING:
		avro_write_long(out, v->u.bytes.len);
		tl_buf_append(out, v->u.bytes.ptr, v->u.bytes.len);
		return 0;
	case TL_AVRO_FIXED:
		if (v->u.bytes.len != (uint32_t)s->size)
			return tl_error_set(err, TL_ERR_INVALID, "Avro: fixed %s needs %d bytes, got %u", s->name, s->size,
			                    v->u.bytes.len);
		tl_buf_append(out, v->u.bytes.ptr, v->u.bytes.len);
		return 0;
	case TL_AVRO_ENUM:
		if (v->u.symbol >= s->n_symbols)
			return tl_error_set(err, TL_ERR_INVALID, "Avro: enum %s has no symbol %u", s->name, v->u.symbol);
		avro_write_long(out, v->u.symbol);
		return 0;
	case TL_AVRO_ARRAY:
	case TL_AVRO_MAP:
		if (v->u.list.n > 0) {
			avro_write_long(out, v->u.list.n);
			for (uint32_t i = 0; i < v->u.list.n; i++) {
				if (s->type == TL_AVRO_MAP) {
					avro_write_long(out, v->u.list.keys[i].len);
					tl_buf_append(out, v->u.list.keys[i].ptr, v->u.list.keys[i].len);
				}
				if (encode_value(out, s->items, &v->u.list.items[i], depth + 1, err) != 0) {
					tl_error_prefix(err, "item %u", i);
					return -1;
				}
			}
		}
		avro_write_long(out, 0);
		return 0;
	case TL_AVRO_RECORD:
		for (uint32_t i = 0; i < s->n_fields; i++)
			if (encode_value(out, s->fields[i].type, &v->u.record.fields[i], depth + 1, err) != 0) {
				tl_error_prefix(err, "field %s", s->fields[i].name);
				return -1;
			}
		return 0;
	case TL_AVRO_UNION:
		break;
	}
	return tl_error_set(err, TL_ERR_INVALID, "Avro: cannot encode schema type %d", (int)s->type);
}

int tl_avro_encode(tl_buf *out, const tl_avro_schema *schema, const tl_avro_value *value, tl_error *err)
{
	size_t start = out->len;
	if (encode_value(out, schema, value, 0, err) != 0) {
		out->len = start; /* never leave half a datum behind */
		return -1;
	}
	return 0;
}

/* ----------------------------------------------------------- accessors */

const tl_avro_value *tl_avro_record_get(const tl_avro_value *v, const char *name)
{
	if (v == NULL || v->schema == NULL || v->schema->type != TL_AVRO_RECORD)
		return NULL;
	int i = tl_avro_schema_field_index(v->schema, name);
	return i < 0 ? NULL : &v->u.record.fields[i];
}

const tl_avro_value *tl_avro_record_get_by_id(const tl_avro_value *v, int32_t field_id)
{
	if (v == NULL || v->schema == NULL || v->schema->type != TL_AVRO_RECORD || field_id == TL_AVRO_NO_ID)
		return NULL;
	for (uint32_t i = 0; i < v->schema->n_fields; i++)
		if (v->schema->fields[i].field_id == field_id)
			return &v->u.record.fields[i];
	return NULL;
}

static bool is(const tl_avro_value *v, tl_avro_type t)
{
	return v != NULL && v->schema != NULL && v->schema->type == t;
}

int tl_avro_get_bool(const tl_avro_value *v, bool *out)
{
	if (!is(v, TL_AVRO_BOOLEAN))
		return -1;
	*out = v->u.boolean;
	return 0;
}

int tl_avro_get_int(const tl_avro_value *v, int32_t *out)
{
	if (!is(v, TL_AVRO_INT))
		return -1;
	*out = v->u.i32;
	return 0;
}

int tl_avro_get_long(const tl_avro_value *v, int64_t *out)
{
	if (is(v, TL_AVRO_INT))
		*out = v->u.i32;
	else if (is(v, TL_AVRO_LONG))
		*out = v->u.i64;
	else
		return -1;
	return 0;
}

int tl_avro_get_double(const tl_avro_value *v, double *out)
{
	if (is(v, TL_AVRO_DOUBLE))
		*out = v->u.f64;
	else if (is(v, TL_AVRO_FLOAT))
		*out = v->u.f32;
	else if (is(v, TL_AVRO_INT))
		*out = v->u.i32;
	else if (is(v, TL_AVRO_LONG))
		*out = (double)v->u.i64;
	else
		return -1;
	return 0;
}

int tl_avro_get_bytes(const tl_avro_value *v, tl_bytes *out)
{
	if (!is(v, TL_AVRO_BYTES) && !is(v, TL_AVRO_STRING) && !is(v, TL_AVRO_FIXED))
		return -1;
	*out = v->u.bytes;
	return 0;
}

int tl_avro_get_string(const tl_avro_value *v, tl_bytes *out)
{
	if (is(v, TL_AVRO_ENUM)) {
		const char *sym = v->schema->symbols[v->u.symbol];
		*out = (tl_bytes){(const uint8_t *)sym, (uint32_t)strlen(sym)};
		return 0;
	}
	return tl_avro_get_bytes(v, out);
}

/* ------------------------------------------------------------ builders */

/*
 * Where the builders put a value when the arena has no room for the record
 * or list that should hold it. The builders are called in long chains
 * (tl_avro_record_field(...)->u.i64 = ...) that cannot each check; so a
 * failed allocation sends the rest of the chain to a sink, harmlessly, and
 * the writers that build records (manifests, manifest lists) compare
 * tl_mem_failures() around the build and never append such a record.
 * There is one sink per schema node, so a sunk container and the sunk
 * values inside it never share one (Avro schemas here are not recursive).
 * A chain starts at tl_avro_record_new, which forgets the previous chain's
 * sinks: their schema nodes may since have been freed, and stale entries
 * would fill the table until two nodes of one chain had to share a sink
 * (a record's sink reused for its own int field, whose next field lookup
 * then finds no record). A record with more nodes than SINKS shares the
 * last sink among the extra nodes; none of Iceberg's comes close.
 */
#define SINKS 256
static struct {
	const tl_avro_schema *schema;
	tl_avro_value value;
} sinks[SINKS];

static int nsinks; /* sinks in use by the current chain */

static tl_avro_value *to_sink(const tl_avro_schema *declared, tl_avro_type type)
{
	int i = 0;
	while (i < nsinks && sinks[i].schema != declared)
		i++;
	if (i == SINKS)
		i = SINKS - 1; /* more nodes than any Iceberg schema has: see above */
	else if (i == nsinks)
		nsinks++;
	sinks[i].schema = declared;
	tl_avro_value *v = &sinks[i].value;
	memset(v, 0, sizeof(*v));
	v->branch = -1;
	return tl_avro_prepare(v, declared, type);
}

/* The null branch of a declared type, if it has one, for defaulting fields. */
static void set_null_if_possible(tl_avro_value *slot, const tl_avro_schema *declared)
{
	memset(slot, 0, sizeof(*slot));
	slot->branch = -1;
	tl_avro_prepare(slot, declared, TL_AVRO_NULL);
}

tl_avro_value *tl_avro_prepare(tl_avro_value *slot, const tl_avro_schema *declared, tl_avro_type type)
{
	if (declared->type == TL_AVRO_UNION) {
		for (uint32_t i = 0; i < declared->n_branches; i++)
			if (declared->branches[i]->type == type) {
				slot->schema = declared->branches[i];
				slot->branch = (int32_t)i;
				return slot;
			}
		return NULL;
	}
	if (declared->type != type)
		return NULL;
	slot->schema = declared;
	slot->branch = -1;
	return slot;
}

void tl_avro_init_record(tl_arena *arena, tl_avro_value *slot)
{
	const tl_avro_schema *s = slot->schema;
	slot->u.record.fields = tl_arena_alloc(arena, (s->n_fields ? s->n_fields : 1) * sizeof(tl_avro_value));
	if (slot->u.record.fields == NULL)
		return; /* its fields go to the sink */
	for (uint32_t i = 0; i < s->n_fields; i++)
		set_null_if_possible(&slot->u.record.fields[i], s->fields[i].type);
}

tl_avro_value *tl_avro_record_new(tl_arena *arena, const tl_avro_schema *record)
{
	nsinks = 0; /* a new chain (see to_sink) */
	tl_avro_value *v = tl_arena_alloc(arena, sizeof(*v));
	if (v == NULL) {
		v = to_sink(record, TL_AVRO_RECORD);
		v->u.record.fields = NULL; /* and so are its fields */
		return v;
	}
	v->schema = record;
	v->branch = -1;
	tl_avro_init_record(arena, v);
	return v;
}

tl_avro_value *tl_avro_record_field(tl_avro_value *record, const char *name, tl_avro_type type)
{
	int i = tl_avro_schema_field_index(record->schema, name);
	if (i < 0)
		return NULL;
	const tl_avro_schema *declared = record->schema->fields[i].type;
	if (record->u.record.fields == NULL)
		return to_sink(declared, type);
	return tl_avro_prepare(&record->u.record.fields[i], declared, type);
}

void tl_avro_init_list(tl_arena *arena, tl_avro_value *slot, uint32_t n)
{
	slot->u.list.n = n;
	slot->u.list.items = tl_arena_alloc(arena, (n ? n : 1) * sizeof(tl_avro_value));
	slot->u.list.keys = NULL;
	if (slot->u.list.items == NULL)
		return; /* its items go to the sink */
	memset(slot->u.list.items, 0, (n ? n : 1) * sizeof(tl_avro_value));
	if (slot->schema->type == TL_AVRO_MAP) {
		slot->u.list.keys = tl_arena_alloc(arena, (n ? n : 1) * sizeof(tl_bytes));
		if (slot->u.list.keys == NULL) {
			slot->u.list.items = NULL;
			return;
		}
		memset(slot->u.list.keys, 0, (n ? n : 1) * sizeof(tl_bytes));
	}
}

tl_avro_value *tl_avro_item(tl_avro_value *list, uint32_t i, tl_avro_type type)
{
	if (i >= list->u.list.n)
		return NULL;
	if (list->u.list.items == NULL)
		return to_sink(list->schema->items, type);
	return tl_avro_prepare(&list->u.list.items[i], list->schema->items, type);
}
