/*
 * avro.h: Avro schemas, values and object container files (OCF).
 *
 * Iceberg keeps manifests and manifest lists in Avro container files whose
 * header metadata carries the table schema and partition spec, which is why
 * this codec exists instead of libavro (which cannot write that metadata and
 * only writes to FILE*).
 *
 * Schemas: tl_avro_schema_parse turns schema JSON into a tree; Iceberg's
 * "field-id" on record fields and "element-id", "key-id", "value-id" on
 * arrays and maps are kept, logical types are kept as a string annotation.
 *
 * Values: one generic tl_avro_value tree, allocated in a tl_arena. Records are
 * looked up by field name or Iceberg field id; accessors promote int to long
 * and float to double, so a reader works against files whose writer used the
 * narrower type.
 *
 * Reading resolves "to the fields we read": records decode with the writer's
 * schema (from the file header) and the caller asks for the fields it knows,
 * so files with extra fields, written by other or later Iceberg versions,
 * read without a reader schema.
 *
 * Writer: tl_avro_writer_open, tl_avro_writer_append per record, then
 * tl_avro_writer_close. Reader: tl_avro_reader_open, tl_avro_reader_next until
 * it returns 0, then tl_avro_reader_free. Neither closes the tl_input or
 * tl_output it was given.
 */
#ifndef TIERLAKE_AVRO_H
#define TIERLAKE_AVRO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/io.h"

typedef enum tl_avro_type {
	TL_AVRO_NULL,
	TL_AVRO_BOOLEAN,
	TL_AVRO_INT,
	TL_AVRO_LONG,
	TL_AVRO_FLOAT,
	TL_AVRO_DOUBLE,
	TL_AVRO_BYTES,
	TL_AVRO_STRING,
	TL_AVRO_FIXED,
	TL_AVRO_ENUM,
	TL_AVRO_ARRAY,
	TL_AVRO_MAP,
	TL_AVRO_RECORD,
	TL_AVRO_UNION
} tl_avro_type;

/* "null", "record"... as the Avro specification spells them. */
const char *tl_avro_type_name(tl_avro_type type);

/* No Iceberg id on this field, element, key or value. */
#define TL_AVRO_NO_ID INT32_MIN

typedef struct tl_avro_schema tl_avro_schema;

typedef struct tl_avro_field {
	const char *name;
	tl_avro_schema *type;
	int32_t field_id;          /* Iceberg "field-id", or TL_AVRO_NO_ID */
	const char *default_json;  /* the "default" as compact JSON, or NULL */
} tl_avro_field;

struct tl_avro_schema {
	tl_avro_type type;
	const char *name;          /* full name of a record, enum or fixed */
	const char *logical_type;  /* "date", "decimal", "uuid"... or NULL */
	int32_t precision, scale;  /* decimal only */
	int32_t size;              /* fixed */
	const char **symbols;      /* enum */
	uint32_t n_symbols;
	tl_avro_schema *items;     /* array items, map values */
	int32_t element_id;        /* Iceberg "element-id" on arrays */
	int32_t key_id, value_id;  /* Iceberg "key-id" / "value-id" on maps */
	tl_avro_field *fields;     /* record */
	uint32_t n_fields;
	tl_avro_schema **branches; /* union */
	uint32_t n_branches;
	struct tl_avro_schema_doc *doc_; /* private: set on the root only */
};

/*
 * Parses schema JSON. Named types may be referenced by name after their
 * definition (recursive types included). Errors are TL_ERR_INVALID naming the
 * offending part, as a schema normally comes from the caller; a file reader
 * turns them into TL_ERR_CORRUPT.
 */
tl_avro_schema *tl_avro_schema_parse(const char *json, size_t len, tl_error *err);
void tl_avro_schema_free(tl_avro_schema *root);
/* The JSON text the root was parsed from (what a writer puts in avro.schema). */
const char *tl_avro_schema_json(const tl_avro_schema *root);
/* The index of a record's field, or -1. */
int tl_avro_schema_field_index(const tl_avro_schema *record, const char *name);

/* ------------------------------------------------------------------ values */

typedef struct tl_avro_value tl_avro_value;

struct tl_avro_value {
	/*
	 * The value's own schema: never a union. A value read through a union
	 * has the chosen branch's schema here and its index in `branch`.
	 */
	const tl_avro_schema *schema;
	int32_t branch;            /* union branch, or -1: let the writer choose */
	union {
		bool boolean;
		int32_t i32;           /* int */
		int64_t i64;           /* long */
		float f32;
		double f64;
		tl_bytes bytes;        /* bytes, string (not NUL-terminated), fixed */
		uint32_t symbol;       /* enum: index into schema->symbols */
		struct {
			tl_avro_value *items;
			tl_bytes *keys;    /* maps only */
			uint32_t n;
		} list;                /* array, map */
		struct {
			tl_avro_value *fields; /* in the schema's field order */
		} record;
	} u;
};

static inline tl_avro_type tl_avro_value_type(const tl_avro_value *v) { return v->schema->type; }
static inline bool tl_avro_is_null(const tl_avro_value *v) { return v == NULL || v->schema->type == TL_AVRO_NULL; }

/* A record's field by name or Iceberg field id; NULL if v is not a record or lacks it. */
const tl_avro_value *tl_avro_record_get(const tl_avro_value *v, const char *name);
const tl_avro_value *tl_avro_record_get_by_id(const tl_avro_value *v, int32_t field_id);

/*
 * Typed accessors: 0 on success, -1 if v is NULL, null or of another type.
 * get_long accepts int and long; get_double float, double, int and long;
 * get_bytes bytes, string and fixed; get_string also the symbol of an enum.
 */
int tl_avro_get_bool(const tl_avro_value *v, bool *out);
int tl_avro_get_int(const tl_avro_value *v, int32_t *out);
int tl_avro_get_long(const tl_avro_value *v, int64_t *out);
int tl_avro_get_double(const tl_avro_value *v, double *out);
int tl_avro_get_bytes(const tl_avro_value *v, tl_bytes *out);
int tl_avro_get_string(const tl_avro_value *v, tl_bytes *out);

/*
 * Builders, for writers. Values point into the arena and at the schema,
 * which must outlive them. A slot is prepared for one type: when its
 * declared schema is a union, the first branch of that type is chosen (a
 * union with two records of different names needs slot->branch set by hand).
 *
 *   tl_avro_value *rec = tl_avro_record_new(arena, entry_schema);
 *   tl_avro_record_field(rec, "status", TL_AVRO_INT)->u.i32 = 1;
 *   tl_avro_value *df = tl_avro_record_field(rec, "data_file", TL_AVRO_RECORD);
 *   tl_avro_init_record(arena, df);
 *
 * New records start with every field whose type is or includes null set to
 * null; other fields are unset and must be filled before writing.
 */
tl_avro_value *tl_avro_record_new(tl_arena *arena, const tl_avro_schema *record);
/* Prepares the named field for `type`; NULL if there is no such field or branch. */
tl_avro_value *tl_avro_record_field(tl_avro_value *record, const char *name, tl_avro_type type);
/* Prepares a slot declared as `declared` for `type`; NULL if it does not allow it. */
tl_avro_value *tl_avro_prepare(tl_avro_value *slot, const tl_avro_schema *declared, tl_avro_type type);
/* Allocates the fields of a slot prepared as a record. */
void tl_avro_init_record(tl_arena *arena, tl_avro_value *slot);
/* Allocates n items (and keys, for a map) of a slot prepared as an array or map. */
void tl_avro_init_list(tl_arena *arena, tl_avro_value *slot, uint32_t n);
/* Prepares item i of an array or map for `type`. */
tl_avro_value *tl_avro_item(tl_avro_value *list, uint32_t i, tl_avro_type type);

/* Schemas and values nested deeper than this are refused. */
#define TL_AVRO_MAX_DEPTH 64

/*
 * Binary encoding of one datum with `schema` (the Avro spec's binary
 * encoding). A value that does not fit the schema is TL_ERR_INVALID naming
 * the field.
 */
int tl_avro_encode(tl_buf *out, const tl_avro_schema *schema, const tl_avro_value *value, tl_error *err);
/*
 * Decodes one datum from data[0..len) into the arena; *used gets the bytes
 * consumed (used may be NULL). Bytes, strings and fixed values are views
 * into data. At most `max_values` values are created (each value counts one,
 * so nulls and empty records cannot make a few bytes allocate without bound);
 * pass a bound that fits memory, such as a small multiple of len.
 */
int tl_avro_decode(const uint8_t *data, size_t len, size_t *used, const tl_avro_schema *schema,
                   tl_arena *arena, uint64_t max_values, tl_avro_value *out, tl_error *err);

/* ------------------------------------------------------- container files */

typedef enum tl_avro_codec {
	TL_AVRO_CODEC_NULL,
	TL_AVRO_CODEC_DEFLATE,
	TL_AVRO_CODEC_SNAPPY,
	TL_AVRO_CODEC_ZSTD
} tl_avro_codec;

/* "null", "deflate", "snappy", "zstandard": the avro.codec spellings. */
const char *tl_avro_codec_name(tl_avro_codec codec);

/* A header metadata entry: Iceberg puts "schema", "partition-spec"... here. */
typedef struct tl_avro_meta {
	const char *key;
	tl_bytes value;
} tl_avro_meta;

typedef struct tl_avro_writer tl_avro_writer;

/*
 * Writes the header at once: avro.schema is the JSON text the schema was
 * parsed from (so Iceberg's attributes are kept verbatim), then the caller's
 * metadata; the sync marker is 16 random bytes. The schema must outlive the
 * writer; meta is copied out at once. Keys starting with "avro." are
 * reserved: TL_ERR_INVALID.
 */
tl_avro_writer *tl_avro_writer_open(tl_output *out, const tl_avro_schema *schema, tl_avro_codec codec,
                                    const tl_avro_meta *meta, size_t n_meta, tl_error *err);
/*
 * A block is written when it reaches this many bytes or records (defaults
 * 1 MiB, 10,000; bytes is capped at 32 MiB, so every block stays readable).
 */
void tl_avro_writer_set_block_limits(tl_avro_writer *w, size_t bytes, uint32_t records);
int tl_avro_writer_append(tl_avro_writer *w, const tl_avro_value *record, tl_error *err);
/* Writes the last block. Does not finish() or close the output. */
int tl_avro_writer_close(tl_avro_writer *w, tl_error *err);
void tl_avro_writer_free(tl_avro_writer *w);
int64_t tl_avro_writer_records(const tl_avro_writer *w);

typedef struct tl_avro_reader tl_avro_reader;

/*
 * Reads and checks the header: magic, metadata, schema, codec, sync marker.
 * Blocks are then read one at a time: a block over 64 MiB (stored or
 * decompressed), a count or size past the end of the file, a wrong sync
 * marker or snappy CRC is TL_ERR_CORRUPT; an unknown codec TL_ERR_UNSUPPORTED.
 * A block decodes to at most 2 values per byte plus 65,536.
 */
tl_avro_reader *tl_avro_reader_open(tl_input *in, tl_error *err);
void tl_avro_reader_free(tl_avro_reader *r);
const tl_avro_schema *tl_avro_reader_schema(const tl_avro_reader *r);
tl_avro_codec tl_avro_reader_codec(const tl_avro_reader *r);
/* A header metadata value by key, or NULL. Views stay valid until free. */
const tl_bytes *tl_avro_reader_meta(const tl_avro_reader *r, const char *key);
size_t tl_avro_reader_meta_count(const tl_avro_reader *r);
const tl_avro_meta *tl_avro_reader_meta_at(const tl_avro_reader *r, size_t i);
/*
 * The next record: 1 with *out set (valid until the next call), 0 at the end
 * of the file, -1 on error.
 */
int tl_avro_reader_next(tl_avro_reader *r, const tl_avro_value **out, tl_error *err);

#endif
