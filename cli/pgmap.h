/*
 * pgmap.h: how a Postgres column maps into the lake (SPEC §6 type mapping),
 * without libpq: the tierdb command (pgtypes.h reads the columns from the
 * catalogs) and the extension (direct writes, from a relation's tuple
 * descriptor) share it, with the binary COPY decoder (pgcopy.h).
 */
#ifndef TIERDB_PGMAP_H
#define TIERDB_PGMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/iceberg_schema.h"

/* The built-in type oids the mapping names (pg_type.dat; stable across releases). */
enum {
	TDB_BOOLOID = 16,
	TDB_BYTEAOID = 17,
	TDB_NAMEOID = 19,
	TDB_INT8OID = 20,
	TDB_INT2OID = 21,
	TDB_INT4OID = 23,
	TDB_TEXTOID = 25,
	TDB_JSONOID = 114,
	TDB_FLOAT4OID = 700,
	TDB_FLOAT8OID = 701,
	TDB_BPCHAROID = 1042,
	TDB_VARCHAROID = 1043,
	TDB_DATEOID = 1082,
	TDB_TIMEOID = 1083,
	TDB_TIMESTAMPOID = 1114,
	TDB_TIMESTAMPTZOID = 1184,
	TDB_NUMERICOID = 1700,
	TDB_UUIDOID = 2950,
	TDB_JSONBOID = 3802
};

/* A table column and how it maps into the lake (SPEC §6 type mapping). */
typedef struct tdb_pg_column {
	char *name;
	uint32_t type_oid;    /* the base type (domains resolved) */
	int32_t typmod;       /* the column's, else the innermost domain's that has one; -1 if none */
	bool not_null;        /* the column's NOT NULL or any of its domains' */
	tl_ice_type ice_type; /* the lake column's type (always primitive) */
	bool copy_as_text;    /* COPY reads "col"::text (types stored in the lake as their text form) */
} tdb_pg_column;

/*
 * The Iceberg type of a base type: the SPEC §6 mapping. `is_enum` says the
 * type is an enum (pg_type.typtype 'e'). Sets *copy_as_text for the types
 * the lake holds as their text form.
 */
void tdb_pg_map_type(uint32_t type_oid, int32_t typmod, bool is_enum, tl_ice_type *ice_type, bool *copy_as_text);

/*
 * Why a Parquet bloom filter on the column would never be read, or NULL
 * when one would be: the lake's readers consult a bloom filter only for an
 * = or IN the extension compares in the lake (cold_conditions.c,
 * lake_value_of), and the Parquet writer gives booleans none. A table's
 * policy refuses the others (bloom_columns, cmd_policy.c).
 */
const char *tdb_pg_bloom_refusal(const tdb_pg_column *col);

#endif
