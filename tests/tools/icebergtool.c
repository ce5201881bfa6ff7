/*
 * icebergtool.c: exposes the lake library's Iceberg modules to the interop
 * tests, which compare them with pyiceberg.
 *
 *   icebergtool transform TRANSFORM TYPE VALUE...
 *       One line per value: the transform's human string and, for bucket,
 *       year, month, day and hour, a tab and the integer result. VALUE is
 *       the textual form (dates 2024-01-02, timestamps 2024-01-02T10:11:12.5,
 *       decimals 14.20, binary and fixed as hex); "null" is null.
 *   icebergtool serialize TYPE VALUE...
 *       One line per value: the single-value binary form in hex, then a tab
 *       and the human string of the value read back from those bytes.
 *   icebergtool metadata FILE
 *       Reads table metadata JSON (v1 or v2) and writes it as v2 to stdout.
 *   icebergtool create LOCATION [SOURCE:TRANSFORM:NAME]...
 *       New-table metadata (v2) for the schema id long required, ts
 *       timestamp, at timestamptz, name string, amount decimal(12, 2),
 *       partitioned as given (field ids from 1000), to stdout.
 *
 * Exit status 0 on success, 1 with "icebergtool: message" on stderr otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/iceberg_metadata.h"

static int fail(const tl_error *err)
{
	fprintf(stderr, "icebergtool: %s\n", err->message);
	return 1;
}

static int cmd_transform(int argc, char **argv)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_transform t;
	tl_ice_type type, result;
	if (tl_ice_transform_parse(argv[0], &t, &err) < 0 || tl_ice_type_parse_primitive(argv[1], &type, &err) < 0 ||
	    tl_ice_transform_result_type(&t, &type, &result, &err) < 0)
		return fail(&err);
	bool integer = t.kind == TL_ICE_BUCKET || t.kind == TL_ICE_YEAR || t.kind == TL_ICE_MONTH ||
	               t.kind == TL_ICE_DAY || t.kind == TL_ICE_HOUR;
	tl_arena arena;
	tl_arena_init(&arena, 4096);
	tl_buf line;
	tl_buf_init(&line);
	int rc = 0;
	for (int i = 2; i < argc && rc == 0; i++) {
		tl_ice_value in, out;
		if (strcmp(argv[i], "null") == 0)
			in = tl_ice_null();
		else if (tl_ice_value_parse(&type, argv[i], &arena, &in, &err) < 0) {
			rc = fail(&err);
			break;
		}
		if (tl_ice_transform_apply(&t, &type, &in, &out, &err) < 0) {
			rc = fail(&err);
			break;
		}
		tl_buf_reset(&line);
		tl_ice_transform_human(&t, &type, &out, &line);
		if (integer && !out.is_null)
			tl_buf_printf(&line, "\t%d", (int)out.v.i32);
		printf("%.*s\n", (int)line.len, (const char *)line.data);
	}
	tl_buf_free(&line);
	tl_arena_free(&arena);
	return rc;
}

static int cmd_serialize(int argc, char **argv)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_type type;
	if (tl_ice_type_parse_primitive(argv[0], &type, &err) < 0)
		return fail(&err);
	tl_arena arena;
	tl_arena_init(&arena, 4096);
	tl_buf bytes, line;
	tl_buf_init(&bytes);
	tl_buf_init(&line);
	int rc = 0;
	for (int i = 1; i < argc && rc == 0; i++) {
		tl_ice_value v, back;
		tl_buf_reset(&bytes);
		tl_buf_reset(&line);
		if (tl_ice_value_parse(&type, argv[i], &arena, &v, &err) < 0 ||
		    tl_ice_value_serialize(&type, &v, &bytes, &err) < 0 ||
		    tl_ice_value_deserialize(&type, bytes.data, bytes.len, &back, &err) < 0) {
			rc = fail(&err);
			break;
		}
		for (size_t k = 0; k < bytes.len; k++)
			tl_buf_printf(&line, "%02x", bytes.data[k]);
		tl_buf_append_byte(&line, '\t');
		tl_ice_value_human(&type, &back, &line);
		printf("%.*s\n", (int)line.len, (const char *)line.data);
	}
	tl_buf_free(&bytes);
	tl_buf_free(&line);
	tl_arena_free(&arena);
	return rc;
}

static int print_metadata(const tl_ice_table_metadata *md)
{
	tl_error err;
	tl_error_clear(&err);
	tl_buf out;
	tl_buf_init(&out);
	int rc = tl_ice_metadata_write(md, &out, &err) < 0 ? fail(&err) : 0;
	if (rc == 0)
		fwrite(out.data, 1, out.len, stdout);
	tl_buf_free(&out);
	return rc;
}

static int cmd_metadata(const char *path)
{
	tl_error err;
	tl_error_clear(&err);
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "icebergtool: cannot open %s\n", path);
		return 1;
	}
	tl_buf text;
	tl_buf_init(&text);
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		tl_buf_append(&text, chunk, n);
	fclose(f);
	tl_ice_table_metadata *md = tl_ice_metadata_parse((const char *)text.data, text.len, &err);
	tl_buf_free(&text);
	if (md == NULL)
		return fail(&err);
	int rc = print_metadata(md);
	tl_ice_metadata_free(md);
	return rc;
}

static int cmd_create(int argc, char **argv)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_field fields[] = {
		{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}},
		{.id = 2, .name = "ts", .type = {.id = TL_ICE_TIMESTAMP}},
		{.id = 3, .name = "at", .type = {.id = TL_ICE_TIMESTAMPTZ}},
		{.id = 4, .name = "name", .type = {.id = TL_ICE_STRING}},
		{.id = 5, .name = "amount", .type = {.id = TL_ICE_DECIMAL, .precision = 12, .scale = 2}},
	};
	tl_ice_schema schema;
	if (tl_ice_schema_init(&schema, 0, fields, 5, &err) < 0)
		return fail(&err);
	tl_ice_partition_spec spec;
	tl_ice_partition_spec_init(&spec, 0);
	int rc = 0;
	for (int i = 1; i < argc && rc == 0; i++) {
		char *arg = tl_strdup(argv[i]);
		char *c1 = strchr(arg, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		tl_ice_transform t;
		const tl_ice_field *src = NULL;
		if (c2 != NULL) {
			*c1 = *c2 = '\0';
			src = tl_ice_schema_find_name(&schema, arg);
		}
		if (src == NULL) {
			fprintf(stderr, "icebergtool: bad partition field \"%s\" (SOURCE:TRANSFORM:NAME)\n", argv[i]);
			rc = 1;
		} else if (tl_ice_transform_parse(c1 + 1, &t, &err) < 0) {
			rc = fail(&err);
		} else {
			tl_ice_partition_spec_add(&spec, src->id, 1000 + spec.nfields, c2 + 1, t);
		}
		free(arg);
	}
	if (rc == 0) {
		tl_ice_table_metadata *md = tl_ice_metadata_create(argv[0], &schema, &spec, NULL, 0, &err);
		rc = md ? print_metadata(md) : fail(&err);
		tl_ice_metadata_free(md);
	}
	tl_ice_partition_spec_free(&spec);
	tl_ice_schema_free(&schema);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "transform") == 0)
		return cmd_transform(argc - 2, argv + 2);
	if (argc >= 3 && strcmp(argv[1], "serialize") == 0)
		return cmd_serialize(argc - 2, argv + 2);
	if (argc == 3 && strcmp(argv[1], "metadata") == 0)
		return cmd_metadata(argv[2]);
	if (argc >= 3 && strcmp(argv[1], "create") == 0)
		return cmd_create(argc - 2, argv + 2);
	fprintf(stderr, "usage: icebergtool transform TRANSFORM TYPE VALUE...\n"
	                "       icebergtool serialize TYPE VALUE...\n"
	                "       icebergtool metadata FILE\n"
	                "       icebergtool create LOCATION [SOURCE:TRANSFORM:NAME]...\n");
	return 2;
}
