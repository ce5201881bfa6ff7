/*
 * iceberg_expr_fixture.c: the helpers of iceberg_expr_fixture.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg_expr_fixture.h"

static tl_ice_field nested_child = {.id = 100, .name = "inner", .type = {.id = TL_ICE_INT}};

int ex_make_schema(tl_ice_schema *schema, tl_error *err)
{
	tl_ice_field fields[] = {
		{.id = F_I, .name = "i", .type = {.id = TL_ICE_INT}},
		{.id = F_L, .name = "l", .type = {.id = TL_ICE_LONG}},
		{.id = F_S, .name = "s", .type = {.id = TL_ICE_STRING}},
		{.id = F_D, .name = "d", .type = {.id = TL_ICE_DATE}},
		{.id = F_TS, .name = "ts", .type = {.id = TL_ICE_TIMESTAMP}},
		{.id = F_DEC, .name = "dec", .type = {.id = TL_ICE_DECIMAL, .precision = 9, .scale = 2}},
		{.id = F_F, .name = "f", .type = {.id = TL_ICE_DOUBLE}},
		{.id = F_BIN, .name = "bin", .type = {.id = TL_ICE_BINARY}},
		{.id = F_FL, .name = "fl", .type = {.id = TL_ICE_FLOAT}},
		{.id = F_B, .name = "b", .type = {.id = TL_ICE_BOOLEAN}},
		{.id = F_U, .name = "u", .type = {.id = TL_ICE_UUID}},
		{.id = F_TZ, .name = "tz", .type = {.id = TL_ICE_TIMESTAMPTZ}},
		{.id = F_WEIRD, .name = "weird col", .type = {.id = TL_ICE_INT}},
		{.id = F_AND, .name = "and", .type = {.id = TL_ICE_INT}},
		{.id = F_NESTED, .name = "st", .type = {.id = TL_ICE_STRUCT, .nfields = 1, .fields = &nested_child}},
	};
	return tl_ice_schema_init(schema, 0, fields, (int)(sizeof(fields) / sizeof(fields[0])), err);
}

const tl_ice_type *ex_type_of(const tl_ice_schema *schema, int32_t id)
{
	return &tl_ice_schema_find_id(schema, id)->type;
}

tl_ice_value ex_i32(int32_t x)
{
	tl_ice_value v = {0};
	v.v.i32 = x;
	return v;
}

tl_ice_value ex_i64(int64_t x)
{
	tl_ice_value v = {0};
	v.v.i64 = x;
	return v;
}

tl_ice_value ex_f64(double x)
{
	tl_ice_value v = {0};
	v.v.f64 = x;
	return v;
}

tl_ice_value ex_f32(float x)
{
	tl_ice_value v = {0};
	v.v.f32 = x;
	return v;
}

tl_ice_value ex_str(const char *s)
{
	tl_ice_value v = {0};
	v.ptr = (const uint8_t *)s;
	v.len = strlen(s);
	return v;
}

/* A value of `type` parsed from text (bytes in the arena), for readable cases. */
tl_ice_value ex_parsed(const tl_ice_type *type, const char *text, tl_arena *arena)
{
	tl_ice_value v;
	tl_error err;
	tl_error_clear(&err);
	if (tl_ice_value_parse(type, text, arena, &v, &err) < 0) {
		fprintf(stderr, "test value %s: %s\n", text, err.message);
		abort();
	}
	return v;
}

int ex_fixture_init(ex_fixture *fx)
{
	tl_error_clear(&fx->err);
	tl_arena_init(&fx->arena, 4096);
	tl_ice_partition_spec_init(&fx->spec, 0);
	return ex_make_schema(&fx->schema, &fx->err);
}

void ex_fixture_free(ex_fixture *fx)
{
	tl_ice_partition_spec_free(&fx->spec);
	tl_ice_schema_free(&fx->schema);
	tl_arena_free(&fx->arena);
}

void ex_add_field(ex_fixture *fx, int32_t source, const char *transform)
{
	tl_ice_transform t;
	tl_error err;
	tl_error_clear(&err);
	if (tl_ice_transform_parse(transform, &t, &err) < 0)
		abort();
	char name[32];
	snprintf(name, sizeof(name), "p%d", fx->spec.nfields);
	tl_ice_partition_spec_add(&fx->spec, source, 1000 + fx->spec.nfields, name, t);
}

const tl_ice_expr *ex_filter(ex_fixture *fx, const char *text)
{
	const tl_ice_expr *e;
	tl_error_clear(&fx->err);
	if (tl_ice_expr_parse(&fx->schema, text, &fx->arena, &e, &fx->err) < 0) {
		fprintf(stderr, "filter %s: %s\n", text, fx->err.message);
		abort();
	}
	return e;
}

tl_bytes ex_serialized(const tl_ice_type *type, const tl_ice_value *v, tl_arena *arena)
{
	tl_buf b;
	tl_buf_init(&b);
	if (tl_ice_value_serialize(type, v, &b, NULL) < 0)
		abort();
	tl_bytes out = tl_arena_copy(arena, b.data ? (const void *)b.data : "", (uint32_t)b.len);
	tl_buf_free(&b);
	return out;
}


void ex_attach_metrics(tl_ice_data_file *f, ex_column_metrics *m, bool counts[3], bool has_lower, bool has_upper)
{
	memset(f, 0, sizeof(*f));
	f->record_count = m->values;
	f->value_counts = (tl_ice_long_map){counts[0], &m->key, &m->values};
	f->null_value_counts = (tl_ice_long_map){counts[1], &m->key, &m->nulls};
	f->nan_value_counts = (tl_ice_long_map){counts[2], &m->key, &m->nans};
	f->lower_bounds = (tl_ice_bytes_map){has_lower, &m->key, &m->lower};
	f->upper_bounds = (tl_ice_bytes_map){has_upper, &m->key, &m->upper};
}

