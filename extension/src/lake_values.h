/*-------------------------------------------------------------------------
 *
 * lake_values.h
 *		Lake column values -> Postgres Datums: the read half of the SPEC §6
 *		type mapping.
 *
 * The daemon writes a heap row into the lake through cli/pgtypes.c (which
 * Iceberg type a column gets) and cli/pgcopy.c (the value in the Parquet
 * physical form tl_ice_field_to_pq_column gives that type).  A
 * LakeValueConverter is the exact inverse for one column: built once per
 * scan from the column's attribute and its lake field, it turns the value
 * at one row of a batch vector into the Datum the heap held, bit for bit
 * (float signs and NaNs, numeric display scale, bytea zero bytes,
 * multibyte text).
 *
 * Types the lake keeps as their text form (and any column whose lake field
 * is a string) go through the type's input function, looked up once per
 * column.  Domains are read as their base type: the values were checked
 * against the domain when they entered the heap.
 *
 * Errors (a value Postgres cannot hold, bytes that are not valid UTF-8, a
 * column whose lake type does not fit its Postgres type) are ereport(ERROR)
 * naming the column and the file; the caller sets the file.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_LAKE_VALUES_H
#define TIERDB_LAKE_VALUES_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "fmgr.h"

#include "tierlake_pg.h"

/* How a column's lake values become Datums; fixed by the pair of types. */
typedef enum LakeValueKind
{
	LAKE_VALUE_BOOL,
	LAKE_VALUE_INT2,			/* an Iceberg int, range-checked */
	LAKE_VALUE_INT4,
	LAKE_VALUE_INT8,
	LAKE_VALUE_FLOAT4,
	LAKE_VALUE_FLOAT8,
	LAKE_VALUE_DECIMAL,			/* unscaled int32, int64 or big-endian bytes */
	LAKE_VALUE_DATE,
	LAKE_VALUE_TIME,
	LAKE_VALUE_TIMESTAMP,		/* timestamp and timestamptz alike */
	LAKE_VALUE_UUID,
	LAKE_VALUE_BYTEA,
	LAKE_VALUE_TEXT,			/* text, varchar, bpchar: the string as is */
	LAKE_VALUE_INPUT			/* a string through the type's input function */
} LakeValueKind;

typedef struct LakeValueConverter
{
	LakeValueKind kind;
	const char *column;			/* the attribute's name, for messages */
	const char *const *file;	/* where the current batch came from */
	tl_pq_physical physical;	/* of the lake column in the batch */
	int32		decimal_scale;	/* LAKE_VALUE_DECIMAL */
	int32		decimal_bytes;	/* ... stored as FIXED_LEN_BYTE_ARRAY */
	FmgrInfo	input;			/* LAKE_VALUE_INPUT */
	Oid			input_ioparam;
	int32		input_typmod;
} LakeValueConverter;

/*
 * Prepares conv for attribute att read from lake field `field`, whose
 * batch column is `pqcol`.  *file must point at the name of the file the
 * current batch came from whenever a value is converted (errors name it).
 * Lookups (the input function) are cached in memory context `cxt`.  A
 * lake type that cannot hold the attribute's values is an ERROR naming
 * both types.
 */
extern void lake_value_converter_init(LakeValueConverter *conv, Form_pg_attribute att,
									  const tl_ice_field *field, const tl_pq_column *pqcol,
									  const char *const *file, MemoryContext cxt);

/*
 * The Datum of the value at `row` of vec (a column of the batch), in
 * CurrentMemoryContext; *isnull for a null.  conv is not const: the input
 * function may cache in its FmgrInfo.
 */
extern Datum lake_value_to_datum(LakeValueConverter *conv, const tl_vector *vec,
								 int64 row, bool *isnull);

#endif							/* TIERDB_LAKE_VALUES_H */
