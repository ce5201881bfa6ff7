/*
 * iceberg_transform.h: partition transforms and partition specs.
 *
 * The transforms compute partition values exactly as the Iceberg spec says
 * (bucket uses the spec's murmur3 hash of the value's hash form; truncate
 * floors toward negative infinity; year/month/day/hour count from 1970 and
 * floor negative values), so files we partition land where Java Iceberg,
 * Spark and pyiceberg expect them, and scan planning can prune on them.
 */
#ifndef TIERLAKE_ICEBERG_TRANSFORM_H
#define TIERLAKE_ICEBERG_TRANSFORM_H

#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/iceberg_schema.h"
#include "tierlake/iceberg_value.h"

typedef enum tl_ice_transform_kind {
	TL_ICE_IDENTITY = 0,
	TL_ICE_BUCKET,     /* param: number of buckets N > 0 */
	TL_ICE_TRUNCATE,   /* param: width W > 0 */
	TL_ICE_YEAR,
	TL_ICE_MONTH,
	TL_ICE_DAY,
	TL_ICE_HOUR,
	TL_ICE_VOID
} tl_ice_transform_kind;

typedef struct tl_ice_transform {
	tl_ice_transform_kind kind;
	int32_t param;
} tl_ice_transform;

/* "identity", "bucket[16]", "truncate[10]", "day", ...; unknown names are TL_ERR_UNSUPPORTED. */
int tl_ice_transform_parse(const char *text, tl_ice_transform *out, tl_error *err);
void tl_ice_transform_text(const tl_ice_transform *t, tl_buf *out);

/*
 * The type of the transform's result for a source type, or -1 with
 * TL_ERR_UNSUPPORTED when the transform does not apply to it (say, day of
 * a string). bucket, year, month and hour give int; day gives date (as
 * Java Iceberg and pyiceberg); identity, truncate and void keep the source.
 */
int tl_ice_transform_result_type(const tl_ice_transform *t, const tl_ice_type *source,
                                 tl_ice_type *result, tl_error *err);

/*
 * Applies the transform to a value of the source type. Nulls map to null
 * (void maps everything to null). A truncated string or binary points into
 * the input's bytes. Invalid UTF-8 in a truncated string is TL_ERR_CORRUPT.
 */
int tl_ice_transform_apply(const tl_ice_transform *t, const tl_ice_type *source,
                           const tl_ice_value *in, tl_ice_value *out, tl_error *err);

/* The spec's 32-bit bucket hash of a non-null value (murmur3_x86_32, seed 0). */
int tl_ice_bucket_hash(const tl_ice_type *source, const tl_ice_value *value,
                       int32_t *hash, tl_error *err);

/* murmur3_x86_32 with seed 0 of raw bytes. */
int32_t tl_murmur3_32(const void *data, size_t len);

/*
 * The human string of a transform result as Java Iceberg renders it for
 * paths: dates "2024-01-02", months "2024-01", years "2024", hours
 * "2024-01-02-10", buckets and truncated ints as numbers, null as "null".
 * `result` is the value tl_ice_transform_apply returned.
 */
void tl_ice_transform_human(const tl_ice_transform *t, const tl_ice_type *source,
                            const tl_ice_value *result, tl_buf *out);

typedef struct tl_ice_partition_field {
	int32_t source_id;
	int32_t field_id;        /* 1000 and up by convention */
	char *name;
	tl_ice_transform transform;
} tl_ice_partition_field;

/* Specs with more fields than this are refused when read. */
#define TL_ICE_MAX_PARTITION_FIELDS 1000

typedef struct tl_ice_partition_spec {
	int32_t spec_id;
	int nfields;
	tl_ice_partition_field *fields;
} tl_ice_partition_spec;

/* The spec (id 0 with no fields) of an unpartitioned table. */
void tl_ice_partition_spec_init(tl_ice_partition_spec *spec, int32_t spec_id);
/* Appends a field (the name is copied); -1 when out of memory (spec unchanged). */
int tl_ice_partition_spec_add(tl_ice_partition_spec *spec, int32_t source_id, int32_t field_id,
                              const char *name, tl_ice_transform transform);
/* -1 when out of memory (dst is then empty). */
int tl_ice_partition_spec_copy(const tl_ice_partition_spec *src, tl_ice_partition_spec *dst);
void tl_ice_partition_spec_free(tl_ice_partition_spec *spec);
bool tl_ice_partition_spec_equal(const tl_ice_partition_spec *a, const tl_ice_partition_spec *b);

/*
 * Checks the spec against a schema: each source id names a primitive field
 * the transform applies to, field ids and names are unique.
 */
int tl_ice_partition_spec_check(const tl_ice_partition_spec *spec, const tl_ice_schema *schema,
                                tl_error *err);

/*
 * The partition tuple's type as manifests declare it: a struct of optional
 * fields, one per partition field (its field id and name, the transform's
 * result type). Free with tl_ice_type_free.
 */
int tl_ice_partition_type(const tl_ice_partition_spec *spec, const tl_ice_schema *schema,
                          tl_ice_type *out, tl_error *err);


/*
 * The partition directory of one row's partition tuple, as Java's
 * PartitionSpec.partitionToPath: "name=human/name=human", each part
 * URL-encoded like java.net.URLEncoder. values[i] are results of the
 * spec's field i. An unpartitioned spec gives "".
 */
int tl_ice_partition_path(const tl_ice_partition_spec *spec, const tl_ice_schema *schema,
                          const tl_ice_value *values, tl_buf *out, tl_error *err);

#endif
