/*
 * json_fields.h: reading required fields of Iceberg's JSON objects (schemas,
 * partition specs) with errors that name the object and the field.
 */
#ifndef TIERLAKE_ICEBERG_JSON_FIELDS_H
#define TIERLAKE_ICEBERG_JSON_FIELDS_H

#include <stdint.h>

#include <jansson.h>

#include "tierlake/error.h"

/* obj[key] as a 32-bit integer; `what` names obj in the error ("partition spec 0 field 1"). */
static inline int ice_json_int32(const json_t *obj, const char *key, const char *what, int32_t *out, tl_error *err)
{
	const json_t *v = json_object_get(obj, key);
	if (v == NULL)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: missing required field \"%s\"", what, key);
	if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN || json_integer_value(v) > INT32_MAX)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: \"%s\" is not a 32-bit integer", what, key);
	*out = (int32_t)json_integer_value(v);
	return 0;
}

#endif
