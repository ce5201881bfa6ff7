/*
 * avrocat: the Avro interop tests' window into the lake library's Avro code.
 *
 *   avrocat FILE                      prints each record as one JSON line
 *   avrocat --meta FILE               prints {"codec": ..., "meta": {key: value}} as one line
 *   avrocat --write SCHEMA.json ROWS.jsonl OUT [--codec C] [--meta k=v]... [--block-records N]
 *                                     writes the rows (one JSON value per line) to OUT
 *
 * The JSON mapping, both ways: bytes and fixed are lowercase hex strings,
 * enums their symbol, unions the bare value of their branch, maps objects,
 * records objects in field order; NaN and infinities are the strings "NaN",
 * "Infinity" and "-Infinity". Errors go to stderr with exit status 1.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/avro.h"

static json_t *hex(const uint8_t *p, size_t len)
{
	char *s = malloc(2 * len + 1);
	for (size_t i = 0; i < len; i++)
		snprintf(s + 2 * i, 3, "%02x", p[i]);
	s[2 * len] = '\0';
	json_t *j = json_string(s);
	free(s);
	return j;
}

/* A string as JSON, or as "hex:..." if it is not UTF-8 (jansson refuses those). */
static json_t *text(const uint8_t *p, size_t len)
{
	json_t *j = json_stringn((const char *)p, len);
	if (j != NULL)
		return j;
	json_t *h = hex(p, len);
	char *s = malloc(json_string_length(h) + 5);
	sprintf(s, "hex:%s", json_string_value(h));
	j = json_string(s);
	free(s);
	json_decref(h);
	return j;
}

static json_t *real(double d)
{
	if (isnan(d))
		return json_string("NaN");
	if (isinf(d))
		return json_string(d > 0 ? "Infinity" : "-Infinity");
	return json_real(d);
}

static json_t *to_json(const tl_avro_value *v)
{
	const tl_avro_schema *s = v->schema;
	switch (s->type) {
	case TL_AVRO_NULL: return json_null();
	case TL_AVRO_BOOLEAN: return json_boolean(v->u.boolean);
	case TL_AVRO_INT: return json_integer(v->u.i32);
	case TL_AVRO_LONG: return json_integer(v->u.i64);
	case TL_AVRO_FLOAT: return real(v->u.f32);
	case TL_AVRO_DOUBLE: return real(v->u.f64);
	case TL_AVRO_BYTES:
	case TL_AVRO_FIXED: return hex(v->u.bytes.ptr, v->u.bytes.len);
	case TL_AVRO_STRING: return text(v->u.bytes.ptr, v->u.bytes.len);
	case TL_AVRO_ENUM: return json_string(s->symbols[v->u.symbol]);
	case TL_AVRO_ARRAY: {
		json_t *a = json_array();
		for (uint32_t i = 0; i < v->u.list.n; i++)
			json_array_append_new(a, to_json(&v->u.list.items[i]));
		return a;
	}
	case TL_AVRO_MAP: {
		json_t *o = json_object();
		for (uint32_t i = 0; i < v->u.list.n; i++) {
			json_t *k = text(v->u.list.keys[i].ptr, v->u.list.keys[i].len);
			json_object_set_new(o, json_string_value(k), to_json(&v->u.list.items[i]));
			json_decref(k);
		}
		return o;
	}
	case TL_AVRO_RECORD: {
		json_t *o = json_object();
		for (uint32_t i = 0; i < s->n_fields; i++)
			json_object_set_new(o, s->fields[i].name, to_json(&v->u.record.fields[i]));
		return o;
	}
	case TL_AVRO_UNION: break;
	}
	return json_null();
}

static int fail(const char *what, const tl_error *err)
{
	fprintf(stderr, "avrocat: %s: %s\n", what, err->message);
	return 1;
}

static int cat(const char *path, int meta_only)
{
	tl_error err;
	tl_error_clear(&err);
	tl_input *in = tl_input_open_file(path, &err);
	if (in == NULL)
		return fail(path, &err);
	tl_avro_reader *r = tl_avro_reader_open(in, &err);
	if (r == NULL) {
		tl_input_close(in);
		return fail(path, &err);
	}
	int rc = 0;
	if (meta_only) {
		json_t *meta = json_object();
		for (size_t i = 0; i < tl_avro_reader_meta_count(r); i++) {
			const tl_avro_meta *m = tl_avro_reader_meta_at(r, i);
			json_object_set_new(meta, m->key, text(m->value.ptr, m->value.len));
		}
		json_t *o = json_pack("{s:s, s:o}", "codec", tl_avro_codec_name(tl_avro_reader_codec(r)), "meta", meta);
		char *line = json_dumps(o, JSON_COMPACT);
		puts(line);
		free(line);
		json_decref(o);
	} else {
		const tl_avro_value *v;
		int got;
		while ((got = tl_avro_reader_next(r, &v, &err)) == 1) {
			json_t *j = to_json(v);
			char *line = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
			puts(line);
			free(line);
			json_decref(j);
		}
		if (got < 0)
			rc = fail(path, &err);
	}
	tl_avro_reader_free(r);
	tl_input_close(in);
	return rc;
}

/* ------------------------------------------------------------- writing */

static int unhex(const char *s, tl_arena *arena, tl_bytes *out)
{
	size_t len = strlen(s);
	if (len % 2 != 0)
		return -1;
	uint8_t *p = tl_arena_alloc(arena, len / 2 + 1);
	for (size_t i = 0; i < len / 2; i++) {
		unsigned byte;
		if (sscanf(s + 2 * i, "%2x", &byte) != 1)
			return -1;
		p[i] = (uint8_t)byte;
	}
	*out = (tl_bytes){p, (uint32_t)(len / 2)};
	return 0;
}

static int from_json(json_t *j, const tl_avro_schema *s, tl_avro_value *out, tl_arena *arena);

static int number(json_t *j, double *out)
{
	if (json_is_number(j)) {
		*out = json_number_value(j);
		return 0;
	}
	if (json_is_string(j)) {
		const char *s = json_string_value(j);
		if (strcmp(s, "NaN") == 0)
			*out = NAN;
		else if (strcmp(s, "Infinity") == 0)
			*out = INFINITY;
		else if (strcmp(s, "-Infinity") == 0)
			*out = -INFINITY;
		else
			return -1;
		return 0;
	}
	return -1;
}

static tl_bytes copy_string(json_t *j, tl_arena *arena)
{
	return tl_arena_copy(arena, json_string_value(j), (uint32_t)json_string_length(j));
}

static int from_json(json_t *j, const tl_avro_schema *s, tl_avro_value *out, tl_arena *arena)
{
	if (s->type == TL_AVRO_UNION) {
		for (uint32_t i = 0; i < s->n_branches; i++)
			if (from_json(j, s->branches[i], out, arena) == 0) {
				out->branch = (int32_t)i;
				return 0;
			}
		return -1;
	}
	out->schema = s;
	out->branch = -1;
	double d;
	switch (s->type) {
	case TL_AVRO_NULL: return json_is_null(j) ? 0 : -1;
	case TL_AVRO_BOOLEAN:
		if (!json_is_boolean(j))
			return -1;
		out->u.boolean = json_is_true(j);
		return 0;
	case TL_AVRO_INT:
		if (!json_is_integer(j) || json_integer_value(j) < INT32_MIN || json_integer_value(j) > INT32_MAX)
			return -1;
		out->u.i32 = (int32_t)json_integer_value(j);
		return 0;
	case TL_AVRO_LONG:
		if (!json_is_integer(j))
			return -1;
		out->u.i64 = json_integer_value(j);
		return 0;
	case TL_AVRO_FLOAT:
		if (number(j, &d) != 0)
			return -1;
		out->u.f32 = (float)d;
		return 0;
	case TL_AVRO_DOUBLE:
		if (number(j, &d) != 0)
			return -1;
		out->u.f64 = d;
		return 0;
	case TL_AVRO_BYTES:
	case TL_AVRO_FIXED:
		if (!json_is_string(j) || unhex(json_string_value(j), arena, &out->u.bytes) != 0)
			return -1;
		return s->type == TL_AVRO_FIXED && out->u.bytes.len != (uint32_t)s->size ? -1 : 0;
	case TL_AVRO_STRING:
		if (!json_is_string(j))
			return -1;
		out->u.bytes = copy_string(j, arena);
		return 0;
	case TL_AVRO_ENUM:
		if (!json_is_string(j))
			return -1;
		for (uint32_t i = 0; i < s->n_symbols; i++)
			if (strcmp(s->symbols[i], json_string_value(j)) == 0) {
				out->u.symbol = i;
				return 0;
			}
		return -1;
	case TL_AVRO_ARRAY:
		if (!json_is_array(j))
			return -1;
		tl_avro_init_list(arena, out, (uint32_t)json_array_size(j));
		for (uint32_t i = 0; i < out->u.list.n; i++)
			if (from_json(json_array_get(j, i), s->items, &out->u.list.items[i], arena) != 0)
				return -1;
		return 0;
	case TL_AVRO_MAP: {
		if (!json_is_object(j))
			return -1;
		tl_avro_init_list(arena, out, (uint32_t)json_object_size(j));
		const char *key;
		json_t *value;
		uint32_t i = 0;
		json_object_foreach(j, key, value) {
			out->u.list.keys[i] = tl_arena_copy(arena, key, (uint32_t)strlen(key));
			if (from_json(value, s->items, &out->u.list.items[i], arena) != 0)
				return -1;
			i++;
		}
		return 0;
	}
	case TL_AVRO_RECORD:
		if (!json_is_object(j))
			return -1;
		tl_avro_init_record(arena, out);
		for (uint32_t i = 0; i < s->n_fields; i++) {
			json_t *f = json_object_get(j, s->fields[i].name);
			if (from_json(f ? f : json_null(), s->fields[i].type, &out->u.record.fields[i], arena) != 0)
				return -1;
		}
		return 0;
	case TL_AVRO_UNION: break;
	}
	return -1;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	tl_buf b;
	tl_buf_init(&b);
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		tl_buf_append(&b, chunk, n);
	fclose(f);
	tl_buf_append_byte(&b, 0);
	*len = b.len - 1;
	return (char *)b.data;
}

static int write_file(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: avrocat --write SCHEMA.json ROWS.jsonl OUT [--codec C] [--meta k=v]... [--block-records N]\n");
		return 2;
	}
	tl_avro_codec codec = TL_AVRO_CODEC_NULL;
	tl_avro_meta meta[32];
	size_t n_meta = 0;
	uint32_t block_records = 10000;
	for (int i = 5; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--codec") == 0) {
			int found = 0;
			for (int c = TL_AVRO_CODEC_NULL; c <= TL_AVRO_CODEC_ZSTD; c++)
				if (strcmp(argv[i + 1], tl_avro_codec_name((tl_avro_codec)c)) == 0) {
					codec = (tl_avro_codec)c;
					found = 1;
				}
			if (!found) {
				fprintf(stderr, "avrocat: unknown codec %s\n", argv[i + 1]);
				return 2;
			}
		} else if (strcmp(argv[i], "--meta") == 0 && strchr(argv[i + 1], '=') != NULL && n_meta < 32) {
			char *eq = strchr(argv[i + 1], '=');
			*eq = '\0';
			meta[n_meta].key = argv[i + 1];
			meta[n_meta].value = (tl_bytes){(const uint8_t *)eq + 1, (uint32_t)strlen(eq + 1)};
			n_meta++;
		} else if (strcmp(argv[i], "--block-records") == 0) {
			block_records = (uint32_t)strtoul(argv[i + 1], NULL, 10);
		} else {
			fprintf(stderr, "avrocat: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	size_t len;
	char *schema_json = slurp(argv[2], &len);
	if (schema_json == NULL) {
		fprintf(stderr, "avrocat: cannot read %s\n", argv[2]);
		return 1;
	}
	tl_error err;
	tl_error_clear(&err);
	tl_avro_schema *schema = tl_avro_schema_parse(schema_json, len, &err);
	free(schema_json);
	if (schema == NULL)
		return fail(argv[2], &err);
	FILE *rows = fopen(argv[3], "r");
	tl_output *out = rows ? tl_output_create_file(argv[4], 0, &err) : NULL;
	tl_avro_writer *w = out ? tl_avro_writer_open(out, schema, codec, meta, n_meta, &err) : NULL;
	int rc = w ? 0 : 1;
	if (rows == NULL)
		fprintf(stderr, "avrocat: cannot read %s\n", argv[3]);
	else if (w == NULL)
		fail(argv[4], &err);
	else
		tl_avro_writer_set_block_limits(w, (size_t)1 << 20, block_records);
	tl_arena arena;
	tl_arena_init(&arena, 65536);
	char *line = NULL;
	size_t cap = 0;
	long lineno = 0;
	while (rc == 0 && getline(&line, &cap, rows) > 0) {
		lineno++;
		json_error_t jerr;
		json_t *j = json_loads(line, JSON_DECODE_ANY, &jerr);
		tl_avro_value v;
		memset(&v, 0, sizeof(v));
		if (j == NULL || from_json(j, schema, &v, &arena) != 0) {
			fprintf(stderr, "avrocat: %s line %ld does not fit the schema\n", argv[3], lineno);
			rc = 1;
		} else if (tl_avro_writer_append(w, &v, &err) != 0) {
			rc = fail(argv[4], &err);
		}
		json_decref(j);
		tl_arena_reset(&arena);
	}
	free(line);
	if (rc == 0 && (tl_avro_writer_close(w, &err) != 0 || out->finish(out, &err) != 0))
		rc = fail(argv[4], &err);
	tl_arena_free(&arena);
	tl_avro_writer_free(w);
	tl_output_close(out);
	if (rows)
		fclose(rows);
	tl_avro_schema_free(schema);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "--write") == 0)
		return write_file(argc, argv);
	if (argc == 3 && strcmp(argv[1], "--meta") == 0)
		return cat(argv[2], 1);
	if (argc == 2)
		return cat(argv[1], 0);
	fprintf(stderr, "usage: avrocat [--meta] FILE | avrocat --write SCHEMA.json ROWS.jsonl OUT [options]\n");
	return 2;
}
