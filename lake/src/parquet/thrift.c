/*
 * thrift.c: the Thrift compact protocol, as Parquet serializes its footer
 * and page headers with it.
 *
 * Only what a serialized struct needs is here: no messages, no transports.
 * The reader trusts nothing it is given. Every read checks the bytes that
 * remain; varints stop at ten bytes and must fit the width they decode to;
 * container sizes are checked against the input before anyone allocates for
 * them; nesting (structs and containers alike) stops at TH_MAX_DEPTH. The
 * first failure is sticky, so a caller that misses one return code cannot
 * read garbage afterwards.
 *
 * The writer appends to a tl_buf and cannot fail: its input comes from our
 * own code, and breaking the protocol's rules there is a bug (an assert).
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "parquet/thrift.h"

/* A varint is at most ten bytes: 64 bits in 7-bit groups. */
#define TH_MAX_VARINT_BYTES 10

/* ---------------------------------------------------------------- reader */

/*
 * Fails the reader with TL_ERR_CORRUPT. The message says where: the offset
 * of `at`, the start of the value that is wrong.
 */
static int corrupt_at(th_reader *r, const uint8_t *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int corrupt_at(th_reader *r, const uint8_t *at, const char *fmt, ...)
{
	char detail[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	r->failed = true;
	tl_error_set(r->err, TL_ERR_CORRUPT, "%s (at byte %zu)", detail, (size_t)(at - r->start));
	return -1;
}

static size_t remaining(const th_reader *r)
{
	return (size_t)(r->end - r->p);
}

/* Checks that n more bytes exist before a read of `what`. */
static int need(th_reader *r, size_t n, const char *what)
{
	if (r->failed)
		return -1;
	if (remaining(r) < n)
		return corrupt_at(r, r->p, "input ends inside %s: %zu bytes needed, %zu remain",
		                  what, n, remaining(r));
	return 0;
}

static int read_byte(th_reader *r, const char *what, uint8_t *out)
{
	*out = 0;
	if (need(r, 1, what) < 0)
		return -1;
	*out = *r->p++;
	return 0;
}

/* Like every reader here, leaves *out defined (0) when it fails. */
static int read_uvarint(th_reader *r, uint64_t *out)
{
	const uint8_t *begin = r->p;
	uint64_t v = 0;

	*out = 0;
	if (r->failed)
		return -1;
	for (int i = 0; i < TH_MAX_VARINT_BYTES; i++) {
		if (r->p == r->end)
			return corrupt_at(r, begin, "input ends inside a varint");
		uint8_t b = *r->p++;
		if (i == TH_MAX_VARINT_BYTES - 1) {
			/* The tenth byte holds bit 63 only, and must end the varint. */
			if (b & 0x80)
				return corrupt_at(r, begin, "varint longer than %d bytes", TH_MAX_VARINT_BYTES);
			if (b > 1)
				return corrupt_at(r, begin, "varint overflows 64 bits");
		}
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if ((b & 0x80) == 0)
			break;
	}
	*out = v;
	return 0;
}

/* A zigzag varint that must fit `bits` bits (16, 32 or 64). */
static int read_zigzag(th_reader *r, int bits, int64_t *out)
{
	const uint8_t *begin = r->p;
	uint64_t u;

	*out = 0;
	if (read_uvarint(r, &u) < 0)
		return -1;
	if (bits < 64 && u >> bits != 0)
		return corrupt_at(r, begin, "varint %llu does not fit an i%d",
		                  (unsigned long long)u, bits);
	/* Unsigned arithmetic, then a conversion: no signed overflow anywhere. */
	*out = (int64_t)((u >> 1) ^ (0 - (u & 1)));
	return 0;
}

void th_reader_init(th_reader *r, const uint8_t *data, size_t len, tl_error *err)
{
	memset(r, 0, sizeof(*r));
	r->start = data;
	r->p = data;
	r->end = data + len;
	r->err = err;
}

size_t th_reader_offset(const th_reader *r, const uint8_t *start)
{
	return (size_t)(r->p - start);
}

static int enter(th_reader *r)
{
	if (r->failed)
		return -1;
	if (r->depth >= TH_MAX_DEPTH)
		return corrupt_at(r, r->p, "values nested deeper than %d levels", TH_MAX_DEPTH);
	r->depth++;
	return 0;
}

int th_read_struct_begin(th_reader *r)
{
	if (enter(r) < 0)
		return -1;
	r->last_field[r->depth - 1] = 0;
	r->pending_bool = false;
	return 0;
}

int th_read_struct_end(th_reader *r)
{
	if (r->failed)
		return -1;
	assert(r->depth > 0);
	r->depth--;
	return 0;
}

static bool is_value_type(int type)
{
	return type >= TH_BOOL_TRUE && type <= TH_UUID;
}

int th_read_field(th_reader *r, int16_t *id, int *type)
{
	const uint8_t *begin = r->p;
	uint8_t byte;
	int32_t fid;

	assert(r->depth > 0);
	r->pending_bool = false;
	if (read_byte(r, "a field header", &byte) < 0)
		return -1;
	int t = byte & 0x0f;
	if (t == TH_STOP) {
		*id = 0;
		*type = TH_STOP;
		return 0;
	}
	if (!is_value_type(t))
		return corrupt_at(r, begin, "unknown field type %d", t);

	int delta = byte >> 4;
	if (delta != 0) {
		fid = r->last_field[r->depth - 1] + delta;
		if (fid > INT16_MAX)
			return corrupt_at(r, begin, "field id %d is out of range", (int)fid);
	} else {
		/* Long form: the id follows as a zigzag i16. */
		int64_t v;
		if (read_zigzag(r, 16, &v) < 0)
			return -1;
		fid = (int32_t)v;
	}
	r->last_field[r->depth - 1] = (int16_t)fid;
	r->pending_bool = (t == TH_BOOL_TRUE || t == TH_BOOL_FALSE);
	*id = (int16_t)fid;
	*type = t;
	return 0;
}

int th_read_bool(th_reader *r, int type, bool *v)
{
	const uint8_t *begin = r->p;
	uint8_t byte;

	if (r->pending_bool) {
		r->pending_bool = false;
		*v = (type == TH_BOOL_TRUE);
		return 0;
	}
	if (read_byte(r, "a bool", &byte) < 0)
		return -1;
	/* Writers disagree on false (the spec says 0, Thrift's C++ and Java write 2). */
	if (byte > 2)
		return corrupt_at(r, begin, "bool element has value %d", byte);
	*v = (byte == 1);
	return 0;
}

int th_read_i8(th_reader *r, int8_t *v)
{
	uint8_t byte;

	if (read_byte(r, "an i8", &byte) < 0)
		return -1;
	*v = (int8_t)byte;
	return 0;
}

int th_read_i16(th_reader *r, int16_t *v)
{
	int64_t x;

	if (read_zigzag(r, 16, &x) < 0)
		return -1;
	*v = (int16_t)x;
	return 0;
}

int th_read_i32(th_reader *r, int32_t *v)
{
	int64_t x;

	if (read_zigzag(r, 32, &x) < 0)
		return -1;
	*v = (int32_t)x;
	return 0;
}

int th_read_i64(th_reader *r, int64_t *v)
{
	return read_zigzag(r, 64, v);
}

int th_read_double(th_reader *r, double *v)
{
	uint64_t bits = 0;

	if (need(r, 8, "a double") < 0)
		return -1;
	/* Little-endian on the wire, whatever the host. */
	for (int i = 7; i >= 0; i--)
		bits = (bits << 8) | r->p[i];
	r->p += 8;
	memcpy(v, &bits, sizeof(*v));
	return 0;
}

int th_read_binary(th_reader *r, tl_bytes *v)
{
	const uint8_t *begin = r->p;
	uint64_t len;

	if (read_uvarint(r, &len) < 0)
		return -1;
	if (len > remaining(r) || len > UINT32_MAX)
		return corrupt_at(r, begin, "binary of %llu bytes, but only %zu bytes remain",
		                  (unsigned long long)len, remaining(r));
	v->ptr = r->p;
	v->len = (uint32_t)len;
	r->p += len;
	return 0;
}

/* The fewest bytes a container element of this type takes on the wire. */
static size_t min_element_size(int type)
{
	switch (type) {
	case TH_DOUBLE:
		return 8;
	case TH_UUID:
		return 16;
	default:
		return 1;
	}
}

/*
 * Checks a container's size: it must be an i32, and that many entries of at
 * least min_entry_size bytes each must fit in the bytes that remain. This is
 * what keeps a hostile size from sizing an allocation or a long loop.
 */
static int check_count(th_reader *r, const uint8_t *begin, const char *what, uint64_t count,
                       size_t min_entry_size)
{
	if (count > INT32_MAX)
		return corrupt_at(r, begin, "%s of %llu elements is larger than Thrift allows",
		                  what, (unsigned long long)count);
	if (count > remaining(r) / min_entry_size)
		return corrupt_at(r, begin, "%s of %llu elements cannot fit in the %zu bytes that remain",
		                  what, (unsigned long long)count, remaining(r));
	return 0;
}

int th_read_list_begin(th_reader *r, int *elem_type, int32_t *count)
{
	const uint8_t *begin = r->p;
	uint8_t byte;
	uint64_t n;

	*elem_type = TH_STOP;
	*count = 0;
	if (read_byte(r, "a list header", &byte) < 0)
		return -1;
	int t = byte & 0x0f;
	n = byte >> 4;
	if (n == 15 && read_uvarint(r, &n) < 0)
		return -1;
	if (t == TH_BOOL_FALSE)
		t = TH_BOOL_TRUE;
	/* An empty list's element type is never used; some writers leave it 0. */
	if (n > 0 && !is_value_type(t))
		return corrupt_at(r, begin, "list of unknown element type %d", t);
	if (check_count(r, begin, "list", n, n > 0 ? min_element_size(t) : 1) < 0)
		return -1;
	*elem_type = t;
	*count = (int32_t)n;
	return 0;
}

/* A map header: a varint size, then (when not empty) key and value types. */
static int read_map_begin(th_reader *r, int *key_type, int *value_type, int32_t *count)
{
	const uint8_t *begin = r->p;
	uint64_t n;
	uint8_t types = 0;

	*key_type = *value_type = TH_STOP;
	*count = 0;
	if (read_uvarint(r, &n) < 0)
		return -1;
	if (n > 0 && read_byte(r, "a map header", &types) < 0)
		return -1;
	int k = types >> 4, v = types & 0x0f;
	if (n > 0 && (!is_value_type(k) || !is_value_type(v)))
		return corrupt_at(r, begin, "map of unknown key or value type (%d, %d)", k, v);
	if (check_count(r, begin, "map", n, n > 0 ? min_element_size(k) + min_element_size(v) : 1) < 0)
		return -1;
	*key_type = k;
	*value_type = v;
	*count = (int32_t)n;
	return 0;
}

/* Skips a value that is not a struct field, so a bool is one byte. */
static int skip_element(th_reader *r, int type);

static int skip_elements(th_reader *r, int32_t count, int type_a, int type_b)
{
	if (enter(r) < 0)
		return -1;
	for (int32_t i = 0; i < count; i++) {
		if (skip_element(r, type_a) < 0)
			return -1;
		if (type_b != TH_STOP && skip_element(r, type_b) < 0)
			return -1;
	}
	r->depth--;
	return 0;
}

static int skip_element(th_reader *r, int type)
{
	const uint8_t *begin = r->p;
	uint64_t ignored;
	int32_t count;
	int t1, t2;

	switch (type) {
	case TH_BOOL_TRUE:
	case TH_BOOL_FALSE: {
		bool v;
		r->pending_bool = false;
		return th_read_bool(r, type, &v);
	}
	case TH_I8:
		if (need(r, 1, "an i8") < 0)
			return -1;
		r->p++;
		return 0;
	case TH_I16:
	case TH_I32:
	case TH_I64:
		return read_uvarint(r, &ignored);
	case TH_DOUBLE:
	case TH_UUID:
		if (need(r, min_element_size(type), type == TH_DOUBLE ? "a double" : "a uuid") < 0)
			return -1;
		r->p += min_element_size(type);
		return 0;
	case TH_BINARY: {
		tl_bytes v;
		return th_read_binary(r, &v);
	}
	case TH_LIST:
	case TH_SET:
		if (th_read_list_begin(r, &t1, &count) < 0)
			return -1;
		return skip_elements(r, count, t1, TH_STOP);
	case TH_MAP:
		if (read_map_begin(r, &t1, &t2, &count) < 0)
			return -1;
		return skip_elements(r, count, t1, t2);
	case TH_STRUCT:
		if (th_read_struct_begin(r) < 0)
			return -1;
		for (;;) {
			int16_t id;
			int t;
			if (th_read_field(r, &id, &t) < 0)
				return -1;
			if (t == TH_STOP)
				break;
			if (th_skip(r, t) < 0)
				return -1;
		}
		return th_read_struct_end(r);
	default:
		return corrupt_at(r, begin, "cannot skip a value of unknown type %d", type);
	}
}

int th_skip(th_reader *r, int type)
{
	/* A bool field's value was its header: nothing to skip. */
	if ((type == TH_BOOL_TRUE || type == TH_BOOL_FALSE) && r->pending_bool) {
		r->pending_bool = false;
		return r->failed ? -1 : 0;
	}
	return skip_element(r, type);
}

/* ---------------------------------------------------------------- writer */

static void write_zigzag(th_writer *w, int64_t v)
{
	/* Shift as unsigned (a signed left shift of a negative is undefined). */
	uint64_t u = (uint64_t)v;
	tl_buf_append_uvarint(w->out, (u << 1) ^ (v < 0 ? UINT64_MAX : 0));
}

void th_writer_init(th_writer *w, tl_buf *out)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
}

void th_write_struct_begin(th_writer *w)
{
	assert(w->depth < TH_MAX_DEPTH);
	w->last_field[w->depth++] = 0;
}

void th_write_struct_end(th_writer *w)
{
	assert(w->depth > 0);
	tl_buf_append_byte(w->out, TH_STOP);
	w->depth--;
}

void th_write_field(th_writer *w, int16_t id, int type)
{
	assert(w->depth > 0 && is_value_type(type));
	int16_t *last = &w->last_field[w->depth - 1];
	int delta = id - *last;

	if (delta > 0 && delta <= 15) {
		tl_buf_append_byte(w->out, (uint8_t)(delta << 4 | type));
	} else {
		tl_buf_append_byte(w->out, (uint8_t)type);
		write_zigzag(w, id);
	}
	*last = id;
}

void th_write_bool_field(th_writer *w, int16_t id, bool v)
{
	th_write_field(w, id, v ? TH_BOOL_TRUE : TH_BOOL_FALSE);
}

void th_write_bool(th_writer *w, bool v)
{
	/* 1 and 2, as Thrift's C++ and Java libraries (and parquet-cpp) write them. */
	tl_buf_append_byte(w->out, v ? TH_BOOL_TRUE : TH_BOOL_FALSE);
}

void th_write_i8(th_writer *w, int8_t v)
{
	tl_buf_append_byte(w->out, (uint8_t)v);
}

void th_write_i16(th_writer *w, int16_t v)
{
	write_zigzag(w, v);
}

void th_write_i32(th_writer *w, int32_t v)
{
	write_zigzag(w, v);
}

void th_write_i64(th_writer *w, int64_t v)
{
	write_zigzag(w, v);
}

void th_write_double(th_writer *w, double v)
{
	uint64_t bits;
	uint8_t *p = tl_buf_extend(w->out, 8);
	if (p == NULL)
		return; /* out is failed; the writer checks it (buf.h) */

	memcpy(&bits, &v, sizeof(bits));
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(bits >> (8 * i));
}

void th_write_binary(th_writer *w, const void *data, size_t len)
{
	tl_buf_append_uvarint(w->out, len);
	tl_buf_append(w->out, data, len);
}

void th_write_list_begin(th_writer *w, int elem_type, int32_t count)
{
	assert(count >= 0 && is_value_type(elem_type));
	if (count < 15) {
		tl_buf_append_byte(w->out, (uint8_t)(count << 4 | elem_type));
	} else {
		tl_buf_append_byte(w->out, (uint8_t)(0xf0 | elem_type));
		tl_buf_append_uvarint(w->out, (uint64_t)count);
	}
}
