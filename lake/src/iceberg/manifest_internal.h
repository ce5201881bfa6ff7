/*
 * manifest_internal.h: field access helpers shared by the manifest and
 * manifest list code (manifest.c, manifest_list.c).
 *
 * Each looks a field up by Iceberg field id and turns a missing, null or
 * mistyped required field into TL_ERR_CORRUPT naming the field.
 */
#ifndef TIERLAKE_ICEBERG_MANIFEST_INTERNAL_H
#define TIERLAKE_ICEBERG_MANIFEST_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/avro.h"
#include "tierlake/buf.h"
#include "tierlake/error.h"

/* *present says whether the field was there and non-null (present may be NULL). */
int tl_ice_manifest_get_long(const tl_avro_value *rec, int32_t id, const char *name, bool required,
                             int64_t *out, bool *present, tl_error *err);
int tl_ice_manifest_get_int(const tl_avro_value *rec, int32_t id, const char *name, bool required,
                            int32_t *out, bool *present, tl_error *err);
/* A required string copied NUL-terminated into the arena; NULL with err set. */
const char *tl_ice_manifest_get_string(const tl_avro_value *rec, int32_t id, const char *name,
                                       tl_arena *arena, tl_error *err);
/* Appends s as a quoted, escaped JSON string. */
void tl_ice_manifest_json_string(tl_buf *out, const char *s);

#endif
