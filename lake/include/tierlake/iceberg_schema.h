/*
 * iceberg_schema.h: Iceberg types and schemas with field ids.
 *
 * A schema is the tree of fields a table's metadata JSON describes. TierDB
 * writes flat tables, but tables written by other engines may nest structs,
 * lists and maps; those parse and are kept with their ids so a later writer
 * of the same metadata does not lose them. List elements and map keys and
 * values are fields too (named "element", "key", "value"), which lets lookup
 * by id treat every id in the tree alike.
 */
#ifndef TIERLAKE_ICEBERG_SCHEMA_H
#define TIERLAKE_ICEBERG_SCHEMA_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/parquet.h"

typedef enum tl_ice_type_id {
	TL_ICE_BOOLEAN = 0,
	TL_ICE_INT,
	TL_ICE_LONG,
	TL_ICE_FLOAT,
	TL_ICE_DOUBLE,
	TL_ICE_DECIMAL,      /* precision 1..38, scale 0..precision */
	TL_ICE_DATE,         /* int days since 1970-01-01 */
	TL_ICE_TIME,         /* long microseconds since midnight */
	TL_ICE_TIMESTAMP,    /* long microseconds since the epoch, no zone */
	TL_ICE_TIMESTAMPTZ,  /* long microseconds since the epoch, UTC */
	TL_ICE_STRING,
	TL_ICE_UUID,
	TL_ICE_FIXED,        /* `length` bytes */
	TL_ICE_BINARY,
	TL_ICE_STRUCT,       /* nested: fields[0..nfields) */
	TL_ICE_LIST,         /* nested: fields[0] is the element */
	TL_ICE_MAP           /* nested: fields[0] is the key, fields[1] the value */
} tl_ice_type_id;

/* The decimal maximum precision Iceberg allows (16-byte unscaled values). */
#define TL_ICE_DECIMAL_MAX_PRECISION 38

typedef struct tl_ice_field tl_ice_field;

typedef struct tl_ice_type {
	tl_ice_type_id id;
	int32_t precision;     /* DECIMAL */
	int32_t scale;         /* DECIMAL */
	int32_t length;        /* FIXED */
	int nfields;           /* STRUCT, LIST (1), MAP (2) */
	tl_ice_field *fields;
} tl_ice_type;

struct tl_ice_field {
	int32_t id;
	char *name;
	bool required;
	char *doc;             /* NULL when absent */
	tl_ice_type type;
	/*
	 * "initial-default": the value rows written before the field existed
	 * read, as the spec's single-value JSON text (42, "2024-01-04",
	 * "1.25"); NULL when absent (they read null). Kept as written.
	 */
	char *initial_default;
};

typedef struct tl_ice_schema {
	int32_t schema_id;
	int nfields;
	tl_ice_field *fields;
	int nidentifier_ids;
	int32_t *identifier_ids;   /* "identifier-field-ids" */
} tl_ice_schema;

/* True for every type but struct, list and map. */
bool tl_ice_type_is_primitive(tl_ice_type_id id);

/* Iceberg's spelling of a type: "long", "decimal(10, 2)", "fixed[16]", "struct". */
void tl_ice_type_text(const tl_ice_type *type, tl_buf *out);

/* Same type: id, decimal precision and scale, fixed length, nested fields (ids, names, required) alike. */
bool tl_ice_type_equal(const tl_ice_type *a, const tl_ice_type *b);

/* Frees the fields of a nested type (the struct itself is the caller's). */
void tl_ice_type_free(tl_ice_type *type);

/* Parses a primitive type's spelling ("decimal(10,2)" with or without the space). */
int tl_ice_type_parse_primitive(const char *text, tl_ice_type *out, tl_error *err);

/*
 * Builds a flat schema from caller-filled fields (deep-copied). Checks that
 * ids are positive and unique and names unique; 0 or -1 with err set.
 */
int tl_ice_schema_init(tl_ice_schema *schema, int32_t schema_id,
                       const tl_ice_field *fields, int nfields, tl_error *err);

/* Deep copy; -1 when out of memory (dst is then empty). */
int tl_ice_schema_copy(const tl_ice_schema *src, tl_ice_schema *dst);
void tl_ice_schema_free(tl_ice_schema *schema);
/* Same ids, names, types, required flags and identifier ids (docs ignored). */
bool tl_ice_schema_equal(const tl_ice_schema *a, const tl_ice_schema *b);

/* The field with this id anywhere in the tree, or NULL. */
const tl_ice_field *tl_ice_schema_find_id(const tl_ice_schema *schema, int32_t id);
/* A top-level field by name, or a nested struct field by dotted path ("a.b"); or NULL. */
const tl_ice_field *tl_ice_schema_find_name(const tl_ice_schema *schema, const char *name);
/* The largest field id in the tree (0 for an empty schema). */
int32_t tl_ice_schema_max_id(const tl_ice_schema *schema);

/*
 * The Parquet column the Iceberg spec prescribes for a primitive field:
 * name, physical and logical type, width, required flag and field id.
 * col->name points at field->name (not copied; tl_pq_schema_add copies it).
 * Nested types are TL_ERR_UNSUPPORTED.
 */
int tl_ice_field_to_pq_column(const tl_ice_field *field, tl_pq_column *col, tl_error *err);

/*
 * The Parquet schema of a flat Iceberg schema, one column per top-level
 * field in order (free with tl_pq_schema_free); NULL with
 * TL_ERR_UNSUPPORTED if a field is nested.
 */
tl_pq_schema *tl_ice_schema_to_pq_schema(const tl_ice_schema *schema, tl_error *err);

#endif
