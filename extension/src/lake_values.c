/*-------------------------------------------------------------------------
 *
 * lake_values.c
 *		Lake column values -> Postgres Datums (see lake_values.h).
 *
 * Each conversion undoes one step of cli/pgcopy.c: Unix-epoch dates and
 * timestamps move back to Postgres' 2000-01-01 epoch, unscaled decimals
 * get their scale back as the numeric's display scale, strings are checked
 * to be UTF-8 (the lake's encoding) and converted to the database's.
 * Values Postgres cannot hold (a foreign writer's, or a damaged file's) are
 * errors, never wrapped or clamped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "lake_values.h"

/* Iceberg counts days and microseconds from 1970-01-01, Postgres from 2000-01-01. */
#define LAKE_EPOCH_DAYS		((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE))
#define LAKE_EPOCH_MICROS	(LAKE_EPOCH_DAYS * USECS_PER_DAY)

/* ------------------------------------------------------------ setup */

/*
 * The pairs of Postgres base type and lake type read without going through
 * text: the SPEC §6 mapping, plus int -> bigint (Iceberg's own promotion,
 * so a column widened after some rows moved still reads them).
 */
static const struct
{
	Oid			pg_type;
	tl_ice_type_id lake_type;
	LakeValueKind kind;
}			binary_pairs[] =
{
	{BOOLOID, TL_ICE_BOOLEAN, LAKE_VALUE_BOOL},
	{INT2OID, TL_ICE_INT, LAKE_VALUE_INT2},
	{INT4OID, TL_ICE_INT, LAKE_VALUE_INT4},
	{INT8OID, TL_ICE_LONG, LAKE_VALUE_INT8},
	{INT8OID, TL_ICE_INT, LAKE_VALUE_INT8},
	{FLOAT4OID, TL_ICE_FLOAT, LAKE_VALUE_FLOAT4},
	{FLOAT8OID, TL_ICE_DOUBLE, LAKE_VALUE_FLOAT8},
	{FLOAT8OID, TL_ICE_FLOAT, LAKE_VALUE_FLOAT8},
	{NUMERICOID, TL_ICE_DECIMAL, LAKE_VALUE_DECIMAL},
	{DATEOID, TL_ICE_DATE, LAKE_VALUE_DATE},
	{TIMEOID, TL_ICE_TIME, LAKE_VALUE_TIME},
	{TIMESTAMPOID, TL_ICE_TIMESTAMP, LAKE_VALUE_TIMESTAMP},
	{TIMESTAMPTZOID, TL_ICE_TIMESTAMPTZ, LAKE_VALUE_TIMESTAMP},
	{UUIDOID, TL_ICE_UUID, LAKE_VALUE_UUID},
	{BYTEAOID, TL_ICE_BINARY, LAKE_VALUE_BYTEA},
};

/* Whether the lake field's type can hold this Postgres base type's values, and how to read them. */
static bool
choose_kind(Oid base_type, const tl_ice_type *lake, LakeValueKind *kind)
{
	/* Every type's text form reads back through its input function. */
	if (lake->id == TL_ICE_STRING)
	{
		*kind = (base_type == TEXTOID || base_type == VARCHAROID || base_type == BPCHAROID)
			? LAKE_VALUE_TEXT : LAKE_VALUE_INPUT;
		return true;
	}
	for (size_t i = 0; i < lengthof(binary_pairs); i++)
	{
		if (binary_pairs[i].pg_type == base_type && binary_pairs[i].lake_type == lake->id)
		{
			*kind = binary_pairs[i].kind;
			return true;
		}
	}
	return false;
}

static char *
lake_type_text(const tl_ice_type *type)
{
	tl_buf		buf;
	char	   *text;

	tl_buf_init(&buf);
	tl_ice_type_text(type, &buf);
	text = pnstrdup((const char *) buf.data, buf.len);
	tl_buf_free(&buf);
	return text;
}

void
lake_value_converter_init(LakeValueConverter *conv, Form_pg_attribute att,
						  const tl_ice_field *field, const tl_pq_column *pqcol,
						  const char *const *file, MemoryContext cxt)
{
	int32		typmod = att->atttypmod;
	Oid			base_type = getBaseTypeAndTypmod(att->atttypid, &typmod);

	memset(conv, 0, sizeof(*conv));
	conv->column = MemoryContextStrdup(cxt, NameStr(att->attname));
	conv->file = file;
	conv->physical = pqcol->physical;
	if (!choose_kind(base_type, &field->type, &conv->kind))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of type %s cannot be read from lake field \"%s\" of type %s",
						NameStr(att->attname), format_type_with_typemod(att->atttypid, att->atttypmod),
						field->name, lake_type_text(&field->type)),
				 errdetail("TierDB stores each column as the Iceberg type SPEC §6 maps its type to."),
				 errhint("The column's type changed after its rows moved to the lake: "
						 "change it back, or rewrite the lake table for the new type.")));

	if (conv->kind == LAKE_VALUE_DECIMAL)
	{
		conv->decimal_scale = field->type.scale;
		conv->decimal_bytes = pqcol->type_length;
	}
	else if (conv->kind == LAKE_VALUE_INPUT)
	{
		Oid			input_fn;

		getTypeInputInfo(base_type, &input_fn, &conv->input_ioparam);
		fmgr_info_cxt(input_fn, &conv->input, cxt);
		conv->input_typmod = typmod;
	}
}

/* ------------------------------------------------------------ errors */

static void
pg_attribute_noreturn()
value_error(const LakeValueConverter *conv, int sqlstate, const char *what)
{
	ereport(ERROR,
			(errcode(sqlstate),
			 errmsg("lake data file %s holds a value of column \"%s\" that %s",
					*conv->file, conv->column, what),
			 errhint("The file was not written by TierDB from this table, or it is damaged; "
					 "restore it, or rewrite the snapshot without it.")));
}

/* ------------------------------------------------------------ values */

static Datum
decimal_from_int128(int128 unscaled, int scale)
{
	/* Sign, 39 digits, a point, a leading zero and the terminator fit easily. */
	char		digits[48];
	char		text[64];
	uint128		magnitude = unscaled < 0 ? -(uint128) unscaled : (uint128) unscaled;
	int			n = 0;
	char	   *p = text;

	do
	{
		digits[n++] = (char) ('0' + (int) (magnitude % 10));
		magnitude /= 10;
	} while (magnitude != 0);
	/* At least one digit before the point. */
	while (n <= scale)
		digits[n++] = '0';
	if (unscaled < 0)
		*p++ = '-';
	for (int i = n - 1; i >= 0; i--)
	{
		*p++ = digits[i];
		if (i == scale && scale > 0)
			*p++ = '.';
	}
	*p = '\0';
	/* numeric_in keeps the digits written after the point as the display scale. */
	return DirectFunctionCall3(numeric_in, CStringGetDatum(text),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

static Datum
decimal_datum(const LakeValueConverter *conv, const tl_vector *vec, int64 row)
{
	int128		unscaled = 0;
	tl_bytes	bytes;

	switch (conv->physical)
	{
		case TL_PQ_INT32:
			return NumericGetDatum(int64_div_fast_to_numeric(vec->v.i32[row], conv->decimal_scale));
		case TL_PQ_INT64:
			return NumericGetDatum(int64_div_fast_to_numeric(vec->v.i64[row], conv->decimal_scale));
		default:
			break;
	}
	/* Big-endian two's complement in decimal_bytes bytes (at most 16 for precision 38). */
	bytes = vec->v.bytes[row];
	if (bytes.len != (uint32) conv->decimal_bytes || bytes.len == 0 || bytes.len > 16)
		value_error(conv, ERRCODE_DATA_CORRUPTED, "is not a decimal of the column's width");
	unscaled = (bytes.ptr[0] & 0x80) ? -1 : 0;
	for (uint32 i = 0; i < bytes.len; i++)
		unscaled = (int128) (((uint128) unscaled << 8) | bytes.ptr[i]);
	if (unscaled >= PG_INT64_MIN && unscaled <= PG_INT64_MAX)
		return NumericGetDatum(int64_div_fast_to_numeric((int64) unscaled, conv->decimal_scale));
	return decimal_from_int128(unscaled, conv->decimal_scale);
}

static Datum
date_datum(const LakeValueConverter *conv, int32 days)
{
	int64		pg_days = (int64) days - LAKE_EPOCH_DAYS;

	if (!IS_VALID_DATE(pg_days))
		value_error(conv, ERRCODE_DATETIME_VALUE_OUT_OF_RANGE, "is outside the range of type date");
	return DateADTGetDatum((DateADT) pg_days);
}

static Datum
timestamp_datum(const LakeValueConverter *conv, int64 micros)
{
	int64		pg_micros;

	if (pg_sub_s64_overflow(micros, LAKE_EPOCH_MICROS, &pg_micros) || !IS_VALID_TIMESTAMP(pg_micros))
		value_error(conv, ERRCODE_DATETIME_VALUE_OUT_OF_RANGE, "is outside the range of type timestamp");
	/* timestamp and timestamptz share their representation. */
	return TimestampGetDatum(pg_micros);
}

static Datum
time_datum(const LakeValueConverter *conv, int64 micros)
{
	if (micros < 0 || micros > USECS_PER_DAY)
		value_error(conv, ERRCODE_DATETIME_VALUE_OUT_OF_RANGE, "is not a time of day");
	return TimeADTGetDatum(micros);
}

static Datum
bytes_varlena(tl_bytes bytes)
{
	bytea	   *result = (bytea *) palloc(VARHDRSZ + bytes.len);

	SET_VARSIZE(result, VARHDRSZ + bytes.len);
	memcpy(VARDATA(result), bytes.ptr, bytes.len);
	return PointerGetDatum(result);
}

/*
 * A lake string in the database encoding, NUL-terminated.  The lake holds
 * UTF-8; anything else (or a NUL byte, which no Postgres string holds) is
 * refused here so that the message can name the column and the file.
 */
static char *
server_string(const LakeValueConverter *conv, tl_bytes bytes, int *len)
{
	const char *utf8 = (const char *) bytes.ptr;
	char	   *server;
	char	   *copy;

	if (!pg_verify_mbstr(PG_UTF8, utf8, (int) bytes.len, true))
		value_error(conv, ERRCODE_CHARACTER_NOT_IN_REPERTOIRE, "is not valid UTF-8 text");
	server = pg_any_to_server(utf8, (int) bytes.len, PG_UTF8);
	if (server != utf8)
	{
		*len = (int) strlen(server);
		return server;
	}
	copy = palloc(bytes.len + 1);
	memcpy(copy, utf8, bytes.len);
	copy[bytes.len] = '\0';
	*len = (int) bytes.len;
	return copy;
}

static Datum
text_datum(const LakeValueConverter *conv, tl_bytes bytes)
{
	int			len;
	char	   *s;

	/* A UTF-8 database takes the bytes as they are, once checked: one copy, one check. */
	if (GetDatabaseEncoding() == PG_UTF8)
	{
		if (!pg_verify_mbstr(PG_UTF8, (const char *) bytes.ptr, (int) bytes.len, true))
			value_error(conv, ERRCODE_CHARACTER_NOT_IN_REPERTOIRE, "is not valid UTF-8 text");
		return PointerGetDatum(cstring_to_text_with_len((const char *) bytes.ptr, (int) bytes.len));
	}
	s = server_string(conv, bytes, &len);
	return PointerGetDatum(cstring_to_text_with_len(s, len));
}

static Datum
input_datum(LakeValueConverter *conv, tl_bytes bytes)
{
	int			len;
	char	   *s = server_string(conv, bytes, &len);

	return InputFunctionCall(&conv->input, s, conv->input_ioparam, conv->input_typmod);
}

static Datum
uuid_datum(const LakeValueConverter *conv, tl_bytes bytes)
{
	pg_uuid_t  *uuid;

	if (bytes.len != UUID_LEN)
		value_error(conv, ERRCODE_DATA_CORRUPTED, "is not a 16-byte uuid");
	uuid = palloc(sizeof(pg_uuid_t));
	memcpy(uuid->data, bytes.ptr, UUID_LEN);
	return UUIDPGetDatum(uuid);
}

static Datum
int2_datum(const LakeValueConverter *conv, int32 value)
{
	if (value < PG_INT16_MIN || value > PG_INT16_MAX)
		value_error(conv, ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, "is outside the range of type smallint");
	return Int16GetDatum((int16) value);
}

Datum
lake_value_to_datum(LakeValueConverter *conv, const tl_vector *vec, int64 row, bool *isnull)
{
	*isnull = tl_vector_is_null(vec, row);
	if (*isnull)
		return (Datum) 0;
	switch (conv->kind)
	{
		case LAKE_VALUE_BOOL:
			return BoolGetDatum(vec->v.b[row] != 0);
		case LAKE_VALUE_INT2:
			return int2_datum(conv, vec->v.i32[row]);
		case LAKE_VALUE_INT4:
			return Int32GetDatum(vec->v.i32[row]);
		case LAKE_VALUE_INT8:
			if (conv->physical == TL_PQ_INT32)
				return Int64GetDatum(vec->v.i32[row]);
			return Int64GetDatum(vec->v.i64[row]);
		case LAKE_VALUE_FLOAT4:
			return Float4GetDatum(vec->v.f32[row]);
		case LAKE_VALUE_FLOAT8:
			if (conv->physical == TL_PQ_FLOAT)
				return Float8GetDatum(vec->v.f32[row]);
			return Float8GetDatum(vec->v.f64[row]);
		case LAKE_VALUE_DECIMAL:
			return decimal_datum(conv, vec, row);
		case LAKE_VALUE_DATE:
			return date_datum(conv, vec->v.i32[row]);
		case LAKE_VALUE_TIME:
			return time_datum(conv, vec->v.i64[row]);
		case LAKE_VALUE_TIMESTAMP:
			return timestamp_datum(conv, vec->v.i64[row]);
		case LAKE_VALUE_UUID:
			return uuid_datum(conv, vec->v.bytes[row]);
		case LAKE_VALUE_BYTEA:
			return bytes_varlena(vec->v.bytes[row]);
		case LAKE_VALUE_TEXT:
			return text_datum(conv, vec->v.bytes[row]);
		case LAKE_VALUE_INPUT:
			return input_datum(conv, vec->v.bytes[row]);
	}
	elog(ERROR, "unknown lake value kind %d", (int) conv->kind);
	return (Datum) 0;			/* keep the compiler quiet */
}
