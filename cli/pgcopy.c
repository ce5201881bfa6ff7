/*
 * pgcopy.c: the binary COPY decoder (see pgcopy.h).
 *
 * The stream (PostgreSQL docs, "COPY", binary format) is an 11-byte
 * signature, an int32 flags word and an int32-length header extension,
 * then tuples: an int16 field count and, per field, an int32 length (-1
 * for NULL) and that many bytes in the type's send format; an int16 -1
 * ends it. The backend sends one CopyData message per tuple, the header
 * riding in the first one and the trailer in the last.
 *
 * Each value's bytes are what the type's *_send function in
 * src/backend/utils/adt wrote: big-endian integers and IEEE floats;
 * numeric as base-10000 digits; dates, times and timestamps counted from
 * 2000-01-01 rather than the Unix epoch; text in the client encoding.
 * The decoder converts them to what the lake stores (pgtypes.h) and
 * checks every length before reading.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgcopy.h"
#include "tierlake/iceberg_value.h"

/* Postgres' epoch (2000-01-01) relative to the Unix epoch. */
#define PG_EPOCH_DAYS   INT32_C(10957)
#define PG_EPOCH_MICROS INT64_C(946684800000000)
#define MICROS_PER_DAY  INT64_C(86400000000)

/* numeric_send's sign word. */
#define NUMERIC_POS  0x0000
#define NUMERIC_NEG  0x4000
#define NUMERIC_NAN  0xC000
#define NUMERIC_PINF 0xD000
#define NUMERIC_NINF 0xF000

#define JSONB_VERSION 1

static const char copy_signature[11] = "PGCOPY\n\377\r\n\0";

/* How a column's binary values are read; fixed by its Postgres type. */
typedef enum value_kind {
	KIND_BOOL,
	KIND_INT2,
	KIND_INT4,
	KIND_INT8,
	KIND_FLOAT4,
	KIND_FLOAT8,
	KIND_DECIMAL,
	KIND_DATE,
	KIND_TIME,
	KIND_TIMESTAMP,
	KIND_UUID,
	KIND_BYTES, /* text, varchar, bpchar, name, enums, json, bytea and ::text columns: stored as sent */
	KIND_JSONB
} value_kind;

typedef struct column_decoder {
	char *name;
	value_kind kind;
	const char *type_name;  /* for messages: "timestamp", "decimal(10, 2)" */
	char decimal_name[32];
	int32_t precision;      /* KIND_DECIMAL */
	int32_t scale;
	tl_pq_physical storage; /* KIND_DECIMAL: INT32, INT64 or FIXED_LEN_BYTE_ARRAY */
	int32_t fixed_len;      /* KIND_DECIMAL stored as FIXED_LEN_BYTE_ARRAY */
} column_decoder;

struct tdb_copy_decoder {
	int ncolumns;
	column_decoder *columns;
	bool header_seen;
	bool trailer_seen;
	int64_t rows;           /* rows decoded; the row in an error message is rows + 1 */
	tl_int128 pow10[TL_ICE_DECIMAL_MAX_PRECISION + 1];
};

/* ------------------------------------------------------------ input */

/* The unread part of a message. */
typedef struct cursor {
	const uint8_t *p;
	const uint8_t *end;
} cursor;

static inline uint16_t get_u16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }

static inline uint32_t get_u32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t get_u64(const uint8_t *p) { return ((uint64_t)get_u32(p) << 32) | get_u32(p + 4); }

static inline bool has(const cursor *c, size_t n) { return (size_t)(c->end - c->p) >= n; }

/* ------------------------------------------------------------ setup */

static int column_kind(const tdb_pg_column *col, column_decoder *cd, tl_error *err)
{
	const tl_ice_type *t = &col->ice_type;
	if (col->copy_as_text) {
		if (t->id != TL_ICE_STRING)
			goto mismatch;
		cd->kind = KIND_BYTES;
		cd->type_name = "text";
		return 0;
	}
	switch (t->id) {
	case TL_ICE_BOOLEAN: cd->kind = KIND_BOOL; cd->type_name = "boolean"; break;
	case TL_ICE_INT:
		if (col->type_oid != TDB_INT2OID && col->type_oid != TDB_INT4OID)
			goto mismatch;
		cd->kind = col->type_oid == TDB_INT2OID ? KIND_INT2 : KIND_INT4;
		cd->type_name = col->type_oid == TDB_INT2OID ? "smallint" : "integer";
		break;
	case TL_ICE_LONG: cd->kind = KIND_INT8; cd->type_name = "bigint"; break;
	case TL_ICE_FLOAT: cd->kind = KIND_FLOAT4; cd->type_name = "real"; break;
	case TL_ICE_DOUBLE: cd->kind = KIND_FLOAT8; cd->type_name = "double precision"; break;
	case TL_ICE_DATE: cd->kind = KIND_DATE; cd->type_name = "date"; break;
	case TL_ICE_TIME: cd->kind = KIND_TIME; cd->type_name = "time"; break;
	case TL_ICE_TIMESTAMP: cd->kind = KIND_TIMESTAMP; cd->type_name = "timestamp"; break;
	case TL_ICE_TIMESTAMPTZ: cd->kind = KIND_TIMESTAMP; cd->type_name = "timestamptz"; break;
	case TL_ICE_UUID: cd->kind = KIND_UUID; cd->type_name = "uuid"; break;
	case TL_ICE_BINARY: cd->kind = KIND_BYTES; cd->type_name = "bytea"; break;
	case TL_ICE_STRING:
		cd->kind = col->type_oid == TDB_JSONBOID ? KIND_JSONB : KIND_BYTES;
		cd->type_name = "text";
		break;
	case TL_ICE_DECIMAL: {
		if (t->precision < 1 || t->precision > TL_ICE_DECIMAL_MAX_PRECISION || t->scale < 0 ||
		    t->scale > t->precision)
			goto mismatch;
		/* The physical form is the writer's: ask the function that decides it. */
		tl_ice_field field = {.id = 1, .name = col->name, .required = false, .type = *t};
		tl_pq_column pq;
		if (tl_ice_field_to_pq_column(&field, &pq, err) < 0)
			return -1;
		cd->kind = KIND_DECIMAL;
		cd->precision = t->precision;
		cd->scale = t->scale;
		cd->storage = pq.physical;
		cd->fixed_len = pq.type_length;
		snprintf(cd->decimal_name, sizeof(cd->decimal_name), "decimal(%d, %d)", t->precision, t->scale);
		cd->type_name = cd->decimal_name;
		break;
	}
	default: goto mismatch;
	}
	return 0;
mismatch:
	return tl_error_set(err, TL_ERR_INVALID,
	                    "column \"%s\" (type oid %u) cannot be decoded into the lake type it was given", col->name,
	                    col->type_oid);
}

tdb_copy_decoder *tdb_copy_decoder_new(const tdb_pg_column *cols, int n, tl_error *err)
{
	tdb_copy_decoder *d = tl_calloc(1, sizeof(*d));
	d->ncolumns = n;
	d->columns = tl_calloc((size_t)(n > 0 ? n : 1), sizeof(column_decoder));
	for (int i = 0; i < n; i++) {
		d->columns[i].name = tl_strdup(cols[i].name);
		if (column_kind(&cols[i], &d->columns[i], err) < 0) {
			tdb_copy_decoder_free(d);
			return NULL;
		}
	}
	d->pow10[0] = 1;
	for (int i = 1; i <= TL_ICE_DECIMAL_MAX_PRECISION; i++)
		d->pow10[i] = d->pow10[i - 1] * 10;
	return d;
}

void tdb_copy_decoder_free(tdb_copy_decoder *d)
{
	if (d == NULL)
		return;
	for (int i = 0; i < d->ncolumns; i++)
		free(d->columns[i].name);
	free(d->columns);
	free(d);
}

int64_t tdb_copy_decoder_rows(const tdb_copy_decoder *d) { return d->rows; }

/* ------------------------------------------------------------ errors */

/* An error about one value: says which column and row, then what. */
static int value_error(const tdb_copy_decoder *d, const column_decoder *cd, tl_error *err, tl_error_code code,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int value_error(const tdb_copy_decoder *d, const column_decoder *cd, tl_error *err, tl_error_code code,
                       const char *fmt, ...)
{
	char what[TL_ERROR_MESSAGE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return tl_error_set(err, code, "column \"%s\", row %" PRId64 " of the COPY stream: %s", cd->name, d->rows + 1,
	                    what);
}

static int bad_length(const tdb_copy_decoder *d, const column_decoder *cd, int32_t len, tl_error *err)
{
	return value_error(d, cd, err, TL_ERR_CORRUPT, "%" PRId32 " bytes cannot be a binary %s value", len,
	                   cd->type_name);
}

/* ------------------------------------------------------------ numeric */

/*
 * numeric_send: int16 ndigits, weight, sign, dscale, then ndigits base-10000
 * digits; the value is sum(digit[i] * 10000^(weight - i)). The unscaled
 * decimal is that times 10^scale, built by Horner's rule: digit i counts in
 * units of 10^(4 * (weight - i) + scale). A column's values never carry
 * more fractional digits than its typmod's scale, but the last base-10000
 * digit may straddle the scale (0.5 at scale 1 is the digit 5000 in units
 * of 10^-3), so that digit is divided down, exactly.
 */
static int decode_numeric(const tdb_copy_decoder *d, const column_decoder *cd, const uint8_t *p, int32_t len,
                          tl_int128 *out, tl_error *err)
{
	if (len < 8)
		return bad_length(d, cd, len, err);
	int ndigits = (int16_t)get_u16(p);
	int weight = (int16_t)get_u16(p + 2);
	uint16_t sign = get_u16(p + 4);
	if (ndigits < 0 || len != 8 + 2 * ndigits)
		return bad_length(d, cd, len, err);
	if (sign == NUMERIC_NAN || sign == NUMERIC_PINF || sign == NUMERIC_NINF)
		return value_error(d, cd, err, TL_ERR_UNSUPPORTED,
		                   "the value is %s, which an Iceberg %s cannot hold; update the row to a number "
		                   "(numeric without a typmod keeps such values, as text)",
		                   sign == NUMERIC_NAN ? "NaN" : sign == NUMERIC_PINF ? "Infinity" : "-Infinity",
		                   cd->type_name);
	if (sign != NUMERIC_POS && sign != NUMERIC_NEG)
		return value_error(d, cd, err, TL_ERR_CORRUPT, "numeric sign word 0x%04x is not valid", sign);

	tl_int128 acc = 0;
	int unit = 0; /* acc counts units of 10^unit */
	for (int i = 0; i < ndigits; i++) {
		int digit = get_u16(p + 8 + 2 * i);
		if (digit > 9999)
			return value_error(d, cd, err, TL_ERR_CORRUPT, "numeric digit %d is not base 10000", digit);
		int exponent = 4 * (weight - i) + cd->scale;
		int shift = 4; /* the power of ten to move acc to the new unit */
		if (exponent < 0) {
			if (exponent <= -4 || digit % (int)d->pow10[-exponent] != 0) {
				if (digit == 0)
					continue;
				return value_error(d, cd, err, TL_ERR_CORRUPT, "the value has more fractional digits than %s allows",
				                   cd->type_name);
			}
			digit /= (int)d->pow10[-exponent];
			shift = 4 + exponent;
			exponent = 0;
		}
		if (__builtin_mul_overflow(acc, d->pow10[shift], &acc) || __builtin_add_overflow(acc, digit, &acc))
			goto out_of_range;
		unit = exponent;
	}
	if (ndigits > 0 && (unit > TL_ICE_DECIMAL_MAX_PRECISION || __builtin_mul_overflow(acc, d->pow10[unit], &acc)))
		goto out_of_range;
	if (acc >= d->pow10[cd->precision])
		goto out_of_range;
	*out = sign == NUMERIC_NEG ? -acc : acc;
	return 0;
out_of_range:
	return value_error(d, cd, err, TL_ERR_CORRUPT, "the value has more digits than %s holds", cd->type_name);
}

/* Stores an unscaled decimal in the column's physical form (range already checked). */
static void store_decimal(const column_decoder *cd, tl_int128 v, tl_vector *vec, int64_t row, tl_arena *arena)
{
	switch (cd->storage) {
	case TL_PQ_INT32: vec->v.i32[row] = (int32_t)v; return;
	case TL_PQ_INT64: vec->v.i64[row] = (int64_t)v; return;
	default: {
		/* Big-endian two's complement, fixed_len bytes (Parquet DECIMAL). */
		uint8_t *bytes = tl_arena_alloc(arena, (size_t)cd->fixed_len);
		__extension__ unsigned __int128 u = (unsigned __int128)v;
		for (int i = cd->fixed_len - 1; i >= 0; i--) {
			bytes[i] = (uint8_t)u;
			u >>= 8;
		}
		vec->v.bytes[row].ptr = bytes;
		vec->v.bytes[row].len = (uint32_t)cd->fixed_len;
		return;
	}
	}
}

/* ------------------------------------------------------------ values */

/* A finite timestamp moved to the Unix epoch; infinities are refused. */
static int decode_timestamp(const tdb_copy_decoder *d, const column_decoder *cd, int64_t pg, int64_t *out,
                            tl_error *err)
{
	if (pg == INT64_MAX || pg == INT64_MIN)
		return value_error(d, cd, err, TL_ERR_UNSUPPORTED,
		                   "the value is %sinfinity, which an Iceberg %s cannot hold; update the row to a finite "
		                   "value before it moves to the lake",
		                   pg == INT64_MIN ? "-" : "", cd->type_name);
	if (__builtin_add_overflow(pg, PG_EPOCH_MICROS, out))
		return value_error(d, cd, err, TL_ERR_UNSUPPORTED,
		                   "the value is after 294247-01-10 04:00:54.775807, the last instant an Iceberg %s "
		                   "holds (64-bit microseconds since 1970)",
		                   cd->type_name);
	return 0;
}

static int decode_date(const tdb_copy_decoder *d, const column_decoder *cd, int32_t pg, int32_t *out, tl_error *err)
{
	if (pg == INT32_MAX || pg == INT32_MIN)
		return value_error(d, cd, err, TL_ERR_UNSUPPORTED,
		                   "the value is %sinfinity, which an Iceberg date cannot hold; update the row to a finite "
		                   "date before it moves to the lake",
		                   pg == INT32_MIN ? "-" : "");
	if (__builtin_add_overflow(pg, PG_EPOCH_DAYS, out))
		return value_error(d, cd, err, TL_ERR_UNSUPPORTED, "the date is past what an Iceberg date holds");
	return 0;
}

static int decode_time(const tdb_copy_decoder *d, const column_decoder *cd, int64_t micros, tl_error *err)
{
	if (micros == MICROS_PER_DAY)
		return value_error(d, cd, err, TL_ERR_UNSUPPORTED,
		                   "the value is 24:00:00, which an Iceberg time cannot hold (times end at "
		                   "23:59:59.999999); update the row before it moves to the lake");
	if (micros < 0 || micros > MICROS_PER_DAY)
		return value_error(d, cd, err, TL_ERR_CORRUPT, "%" PRId64 " microseconds is not a time of day", micros);
	return 0;
}

/* Decodes one non-NULL value of len bytes at p into row `row` of vec. */
static int decode_value(const tdb_copy_decoder *d, const column_decoder *cd, const uint8_t *p, int32_t len,
                        tl_vector *vec, int64_t row, tl_arena *arena, tl_error *err)
{
	switch (cd->kind) {
	case KIND_BOOL:
		if (len != 1)
			return bad_length(d, cd, len, err);
		if (p[0] > 1)
			return value_error(d, cd, err, TL_ERR_CORRUPT, "boolean byte %d is neither 0 nor 1", p[0]);
		vec->v.b[row] = p[0];
		return 0;
	case KIND_INT2:
		if (len != 2)
			return bad_length(d, cd, len, err);
		vec->v.i32[row] = (int16_t)get_u16(p);
		return 0;
	case KIND_INT4:
		if (len != 4)
			return bad_length(d, cd, len, err);
		vec->v.i32[row] = (int32_t)get_u32(p);
		return 0;
	case KIND_INT8:
		if (len != 8)
			return bad_length(d, cd, len, err);
		vec->v.i64[row] = (int64_t)get_u64(p);
		return 0;
	case KIND_FLOAT4: {
		if (len != 4)
			return bad_length(d, cd, len, err);
		uint32_t bits = get_u32(p);
		memcpy(&vec->v.f32[row], &bits, 4);
		return 0;
	}
	case KIND_FLOAT8: {
		if (len != 8)
			return bad_length(d, cd, len, err);
		uint64_t bits = get_u64(p);
		memcpy(&vec->v.f64[row], &bits, 8);
		return 0;
	}
	case KIND_DECIMAL: {
		tl_int128 unscaled = 0;
		if (decode_numeric(d, cd, p, len, &unscaled, err) < 0)
			return -1;
		store_decimal(cd, unscaled, vec, row, arena);
		return 0;
	}
	case KIND_DATE:
		if (len != 4)
			return bad_length(d, cd, len, err);
		return decode_date(d, cd, (int32_t)get_u32(p), &vec->v.i32[row], err);
	case KIND_TIME:
		if (len != 8)
			return bad_length(d, cd, len, err);
		vec->v.i64[row] = (int64_t)get_u64(p);
		return decode_time(d, cd, vec->v.i64[row], err);
	case KIND_TIMESTAMP:
		if (len != 8)
			return bad_length(d, cd, len, err);
		return decode_timestamp(d, cd, (int64_t)get_u64(p), &vec->v.i64[row], err);
	case KIND_UUID:
		if (len != 16)
			return bad_length(d, cd, len, err);
		vec->v.bytes[row] = tl_arena_copy(arena, p, 16);
		return 0;
	case KIND_JSONB:
		/* jsonb_send: a version byte, then the jsonb's text form. */
		if (len < 1)
			return bad_length(d, cd, len, err);
		if (p[0] != JSONB_VERSION)
			return value_error(d, cd, err, TL_ERR_UNSUPPORTED, "jsonb binary format version %d is not known",
			                   p[0]);
		vec->v.bytes[row] = tl_arena_copy(arena, p + 1, (uint32_t)len - 1);
		return 0;
	case KIND_BYTES:
		vec->v.bytes[row] = tl_arena_copy(arena, p, (uint32_t)len);
		return 0;
	}
	return value_error(d, cd, err, TL_ERR_INVALID, "no decoder for this column");
}

/* ------------------------------------------------------------ stream */

static int corrupt(const tdb_copy_decoder *d, tl_error *err, const char *what)
{
	return tl_error_set(err, TL_ERR_CORRUPT, "binary COPY stream, after %" PRId64 " rows: %s", d->rows, what);
}

static int read_header(tdb_copy_decoder *d, cursor *c, tl_error *err)
{
	if (!has(c, sizeof(copy_signature) + 8) || memcmp(c->p, copy_signature, sizeof(copy_signature)) != 0)
		return corrupt(d, err, "the stream does not start with the binary COPY signature");
	c->p += sizeof(copy_signature);
	uint32_t flags = get_u32(c->p);
	uint32_t extension = get_u32(c->p + 4);
	c->p += 8;
	/* Bit 16 is "OIDs included"; bits 17-31 are reserved and critical: a reader must stop at any it does not know. */
	if (flags & 0xffff0000u)
		return corrupt(d, err, "the header sets flags this decoder does not know (OIDs or a newer format)");
	if (!has(c, extension))
		return corrupt(d, err, "the header extension is cut off");
	c->p += extension;
	d->header_seen = true;
	return 0;
}

/* Decodes the fields of one tuple (the field count already read) into row `row`. */
static int decode_row(tdb_copy_decoder *d, cursor *c, tl_pq_batch *batch, int64_t row, tl_error *err)
{
	for (int i = 0; i < d->ncolumns; i++) {
		const column_decoder *cd = &d->columns[i];
		tl_vector *vec = &batch->columns[i];
		if (!has(c, 4))
			return corrupt(d, err, "a row is cut off inside its CopyData message");
		int32_t len = (int32_t)get_u32(c->p);
		c->p += 4;
		if (len == -1) {
			if (vec->valid == NULL)
				return value_error(d, cd, err, TL_ERR_INVALID,
				                   "the value is NULL, but the lake column is required (NOT NULL)");
			vec->valid[row] = 0;
			continue;
		}
		if (len < 0 || !has(c, (size_t)len))
			return corrupt(d, err, "a value's length runs past the end of its CopyData message");
		if (decode_value(d, cd, c->p, len, vec, row, &batch->arena, err) < 0)
			return -1;
		if (vec->valid != NULL)
			vec->valid[row] = 1;
		c->p += len;
	}
	return 0;
}

int tdb_copy_decoder_feed(tdb_copy_decoder *d, const char *msg, size_t len, tl_pq_batch *batch, tl_error *err)
{
	cursor c = {(const uint8_t *)msg, (const uint8_t *)msg + len};
	if (batch->ncolumns != d->ncolumns)
		return tl_error_set(err, TL_ERR_INVALID, "the batch has %d columns but the COPY has %d", batch->ncolumns,
		                    d->ncolumns);
	if (d->trailer_seen)
		return corrupt(d, err, "data follows the trailer");
	if (!d->header_seen && read_header(d, &c, err) < 0)
		return -1;
	int appended = 0;
	while (c.p < c.end) {
		if (!has(&c, 2))
			return corrupt(d, err, "a tuple's field count is cut off");
		int fields = (int16_t)get_u16(c.p);
		c.p += 2;
		if (fields == -1) {
			if (c.p != c.end)
				return corrupt(d, err, "data follows the trailer");
			d->trailer_seen = true;
			break;
		}
		if (fields != d->ncolumns) {
			char what[96];
			snprintf(what, sizeof(what), "a tuple has %d fields, expected %d", fields, d->ncolumns);
			return corrupt(d, err, what);
		}
		if (batch->nrows >= batch->capacity)
			return tl_error_set(err, TL_ERR_INVALID,
			                    "the batch is full (%" PRId64 " rows); flush it before feeding more", batch->capacity);
		if (decode_row(d, &c, batch, batch->nrows, err) < 0)
			return -1;
		batch->nrows++;
		d->rows++;
		appended++;
	}
	return appended;
}

int tdb_copy_decoder_finish(tdb_copy_decoder *d, tl_error *err)
{
	if (d->trailer_seen)
		return 0;
	return corrupt(d, err, d->header_seen ? "the stream ended without its trailer" : "the stream is empty");
}
