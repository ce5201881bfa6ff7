/*
 * pgmap.c: the SPEC §6 type mapping (see pgmap.h).
 *
 * The mapping keeps every value exact: types with an Iceberg counterpart
 * that holds all their values map to it, and everything else (intervals,
 * arrays, ranges, inet, money, numeric without a usable typmod, ...) is
 * stored as the type's own text output, which Postgres reads back to the
 * same value.
 */
#include <string.h>

#include "pgmap.h"

/* numeric's typmod packs ((precision << 16) | scale) + VARHDRSZ, the scale as an 11-bit signed field (PG 15). */
#define NUMERIC_TYPMOD_HEADER 4

static bool numeric_typmod(int32_t typmod, int32_t *precision, int32_t *scale)
{
	if (typmod < NUMERIC_TYPMOD_HEADER)
		return false;
	int32_t packed = typmod - NUMERIC_TYPMOD_HEADER;
	*precision = (packed >> 16) & 0xffff;
	*scale = ((packed & 0x7ff) ^ 1024) - 1024;
	return true;
}

void tdb_pg_map_type(uint32_t type_oid, int32_t typmod, bool is_enum, tl_ice_type *ice_type, bool *copy_as_text)
{
	memset(ice_type, 0, sizeof(*ice_type));
	*copy_as_text = false;
	if (is_enum) {
		/* An enum's binary form is its label. */
		ice_type->id = TL_ICE_STRING;
		return;
	}
	switch (type_oid) {
	case TDB_BOOLOID: ice_type->id = TL_ICE_BOOLEAN; return;
	case TDB_INT2OID:
	case TDB_INT4OID: ice_type->id = TL_ICE_INT; return;
	case TDB_INT8OID: ice_type->id = TL_ICE_LONG; return;
	case TDB_FLOAT4OID: ice_type->id = TL_ICE_FLOAT; return;
	case TDB_FLOAT8OID: ice_type->id = TL_ICE_DOUBLE; return;
	case TDB_DATEOID: ice_type->id = TL_ICE_DATE; return;
	case TDB_TIMEOID: ice_type->id = TL_ICE_TIME; return;
	case TDB_TIMESTAMPOID: ice_type->id = TL_ICE_TIMESTAMP; return;
	case TDB_TIMESTAMPTZOID: ice_type->id = TL_ICE_TIMESTAMPTZ; return;
	case TDB_UUIDOID: ice_type->id = TL_ICE_UUID; return;
	case TDB_BYTEAOID: ice_type->id = TL_ICE_BINARY; return;
	/* Binary forms that are the text itself (jsonb: a version byte, then the text). */
	case TDB_TEXTOID:
	case TDB_VARCHAROID:
	case TDB_BPCHAROID:
	case TDB_NAMEOID:
	case TDB_JSONOID:
	case TDB_JSONBOID: ice_type->id = TL_ICE_STRING; return;
	case TDB_NUMERICOID: {
		int32_t precision, scale;
		/*
		 * Iceberg decimals hold precision 1..38 and scale 0..precision.
		 * PG 15 also allows a negative scale or one above the precision;
		 * those, and numeric without a typmod (which holds NaN, infinities
		 * and any number of digits), are kept as text.
		 */
		if (numeric_typmod(typmod, &precision, &scale) && precision >= 1 &&
		    precision <= TL_ICE_DECIMAL_MAX_PRECISION && scale >= 0 && scale <= precision) {
			ice_type->id = TL_ICE_DECIMAL;
			ice_type->precision = precision;
			ice_type->scale = scale;
			return;
		}
		break;
	}
	default: break;
	}
	ice_type->id = TL_ICE_STRING;
	*copy_as_text = true;
}

const char *tdb_pg_bloom_refusal(const tdb_pg_column *col)
{
	if (col->type_oid == TDB_BOOLOID)
		return "a boolean has two values, which row group statistics already rule out, and Parquet writers give "
		       "booleans no bloom filter";
	if (col->type_oid == TDB_NUMERICOID && col->ice_type.id != TL_ICE_DECIMAL)
		return "a numeric without a precision (or with a scale Iceberg has not) is kept in the lake as text, where "
		       "= on it is not compared; give it a precision, numeric(p,s)";
	if (col->copy_as_text)
		return "its values are kept in the lake as text, where = on it is not compared, so no read would consult "
		       "the filter";
	if (col->ice_type.id == TL_ICE_STRING && col->type_oid != TDB_TEXTOID && col->type_oid != TDB_VARCHAROID)
		return "= on it is not compared in the lake (of the string types only text and varchar are), so no read "
		       "would consult the filter";
	return NULL;
}
