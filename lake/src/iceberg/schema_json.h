/*
 * schema_json.h: Iceberg schemas and partition specs to and from the
 * metadata JSON's objects, as jansson values. Internal to the lake library
 * (and its tests and tools): jansson types stay out of the public headers.
 */
#ifndef TIERLAKE_ICEBERG_SCHEMA_JSON_H
#define TIERLAKE_ICEBERG_SCHEMA_JSON_H

#include <jansson.h>

#include "tierlake/iceberg_schema.h"
#include "tierlake/iceberg_transform.h"

/* Parses a schema object of the metadata JSON. The result is freed with tl_ice_schema_free. */
int tl_ice_schema_from_json(const json_t *json, tl_ice_schema *out, tl_error *err);
/* A new JSON object in the metadata form (the caller owns the reference); NULL when out of memory. */
json_t *tl_ice_schema_to_json(const tl_ice_schema *schema);

/*
 * Parses {"spec-id": N, "fields": [...]} or, with spec_id >= 0, a bare
 * v1 field array; fields without "field-id" (old v1 writers) get 1000 + index.
 */
int tl_ice_partition_spec_from_json(const json_t *json, int32_t spec_id,
                                    tl_ice_partition_spec *out, tl_error *err);
/* The same for a spec; NULL when out of memory. */
json_t *tl_ice_partition_spec_to_json(const tl_ice_partition_spec *spec);

#endif
