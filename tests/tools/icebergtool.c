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
 *   icebergtool rewrite-manifests METADATA_JSON OUT_DIR
 *       Reads the current snapshot's manifest list and every manifest it
 *       names with our readers, writes them again with our writers into
 *       OUT_DIR (m0.avro, m1.avro... and snap-ID.avro), and writes
 *       OUT_DIR/rewritten.metadata.json: the metadata with the current
 *       snapshot pointing at the new list. Prints the new list's path,
 *       then the new metadata's path. Entries keep their status, ids and
 *       (possibly null, inherited) sequence numbers; list entries keep
 *       their sequence numbers, so the rewritten table means the same.
 *       "file://" locations are read as local paths and the new paths get
 *       the same prefix.
 *
 * Exit status 0 on success, 1 with "icebergtool: message" on stderr otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/iceberg_manifest.h"
#include "tierlake/iceberg_metadata.h"

static int fail(const tl_error *err)
{
	fprintf(stderr, "icebergtool: %s\n", err->message);
	return 1;
}

static int fail_at(const char *what, const tl_error *err)
{
	fprintf(stderr, "icebergtool: %s: %s\n", what, err->message);
	return 1;
}

static int read_file(const char *path, tl_buf *text)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "icebergtool: cannot open %s\n", path);
		return 1;
	}
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		tl_buf_append(text, chunk, n);
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		fprintf(stderr, "icebergtool: cannot read %s\n", path);
		return 1;
	}
	return 0;
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
	tl_buf text;
	tl_buf_init(&text);
	if (read_file(path, &text) != 0) {
		tl_buf_free(&text);
		return 1;
	}
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

#define FILE_SCHEME "file://"

/* A location as a local path: "file://" is dropped. */
static const char *local_path(const char *location)
{
	size_t n = strlen(FILE_SCHEME);
	return strncmp(location, FILE_SCHEME, n) == 0 ? location + n : location;
}

/* "OUT_DIR/name" as a local path and as a location with like's scheme. */
static void new_location(const char *out_dir, const char *name, const char *like, tl_buf *path, tl_buf *location)
{
	tl_buf_reset(path);
	tl_buf_reset(location);
	tl_buf_printf(path, "%s/%s", out_dir, name);
	tl_buf_append_byte(path, '\0');
	tl_buf_printf(location, "%s%s", local_path(like) != like ? FILE_SCHEME : "", (const char *)path->data);
	tl_buf_append_byte(location, '\0');
}

/*
 * Copies one manifest, mf, to out_path; fills *copy as the new list entry
 * (its bounds point into *writer, which the caller frees after adding it).
 */
static int rewrite_manifest(const tl_ice_manifest_file *mf, const char *out_path, const char *out_location,
                            tl_ice_manifest_writer **writer, tl_ice_manifest_file *copy)
{
	tl_error err;
	tl_error_clear(&err);
	tl_input *in = tl_input_open_file(local_path(mf->manifest_path), &err);
	if (in == NULL)
		return fail_at(mf->manifest_path, &err);
	int rc = 1;
	tl_output *out = NULL;
	tl_ice_manifest_reader *r = tl_ice_manifest_reader_open(in, &err);
	if (r == NULL) {
		rc = fail_at(mf->manifest_path, &err);
		goto done;
	}
	out = tl_output_create_file(out_path, 1, &err);
	if (out == NULL) {
		rc = fail_at(out_path, &err);
		goto done;
	}
	*writer = tl_ice_manifest_writer_open(out, tl_ice_manifest_reader_schema(r), tl_ice_manifest_reader_spec(r),
	                                      tl_ice_manifest_reader_content(r), mf->added_snapshot_id, &err);
	if (*writer == NULL) {
		rc = fail_at(out_path, &err);
		goto done;
	}
	const tl_ice_manifest_entry *entry;
	int got;
	while ((got = tl_ice_manifest_reader_next(r, &entry, &err)) == 1)
		if (tl_ice_manifest_writer_add(*writer, entry, &err) < 0)
			break;
	if (got != 0) {
		rc = fail_at(got < 0 ? mf->manifest_path : out_path, &err);
		goto done;
	}
	if (tl_ice_manifest_writer_close(*writer, copy, &err) < 0 || out->finish(out, &err) < 0) {
		rc = fail_at(out_path, &err);
		goto done;
	}
	copy->manifest_path = out_location;
	/* The manifest is not new in this snapshot: keep when it was. */
	copy->sequence_number = mf->sequence_number;
	copy->min_sequence_number = mf->min_sequence_number;
	rc = 0;
done:
	tl_output_close(out);
	tl_ice_manifest_reader_free(r);
	tl_input_close(in);
	return rc;
}

static int write_text(const char *path, const tl_buf *text)
{
	tl_error err;
	tl_error_clear(&err);
	tl_output *out = tl_output_create_file(path, 1, &err);
	if (out == NULL)
		return fail_at(path, &err);
	int rc = 0;
	if (tl_output_write(out, text->data, text->len, &err) < 0 || out->finish(out, &err) < 0)
		rc = fail_at(path, &err);
	tl_output_close(out);
	return rc;
}

static int cmd_rewrite_manifests(const char *metadata_path, const char *out_dir)
{
	tl_error err;
	tl_error_clear(&err);
	tl_buf text;
	tl_buf_init(&text);
	if (read_file(metadata_path, &text) != 0) {
		tl_buf_free(&text);
		return 1;
	}
	tl_ice_table_metadata *md = tl_ice_metadata_parse((const char *)text.data, text.len, &err);
	tl_buf_free(&text);
	if (md == NULL)
		return fail_at(metadata_path, &err);
	tl_ice_snapshot *snap = NULL;
	for (int i = 0; i < md->nsnapshots; i++)
		if (md->snapshots[i].snapshot_id == md->current_snapshot_id)
			snap = &md->snapshots[i];
	if (snap == NULL || snap->manifest_list == NULL) {
		fprintf(stderr, "icebergtool: %s: no current snapshot with a manifest list\n", metadata_path);
		tl_ice_metadata_free(md);
		return 1;
	}

	int rc = 1;
	tl_buf path, location, list_path, list_location, name;
	tl_buf_init(&path);
	tl_buf_init(&location);
	tl_buf_init(&list_path);
	tl_buf_init(&list_location);
	tl_buf_init(&name);
	tl_input *in = NULL;
	tl_output *out = NULL;
	tl_ice_manifest_list_reader *lr = NULL;
	tl_ice_manifest_list_writer *lw = NULL;

	tl_buf_printf(&name, "snap-%lld.avro", (long long)snap->snapshot_id);
	tl_buf_append_byte(&name, '\0');
	new_location(out_dir, (const char *)name.data, snap->manifest_list, &list_path, &list_location);
	in = tl_input_open_file(local_path(snap->manifest_list), &err);
	if (in == NULL) {
		fail_at(snap->manifest_list, &err);
		goto done;
	}
	lr = tl_ice_manifest_list_reader_open(in, &err);
	if (lr == NULL) {
		fail_at(snap->manifest_list, &err);
		goto done;
	}
	out = tl_output_create_file((const char *)list_path.data, 1, &err);
	if (out == NULL) {
		fail_at((const char *)list_path.data, &err);
		goto done;
	}
	lw = tl_ice_manifest_list_writer_open(out, snap->snapshot_id, snap->parent_id, snap->sequence_number, &err);
	if (lw == NULL) {
		fail_at((const char *)list_path.data, &err);
		goto done;
	}
	const tl_ice_manifest_file *mf;
	int got;
	for (int i = 0; (got = tl_ice_manifest_list_reader_next(lr, &mf, &err)) == 1; i++) {
		tl_buf_reset(&name);
		tl_buf_printf(&name, "m%d.avro", i);
		tl_buf_append_byte(&name, '\0');
		new_location(out_dir, (const char *)name.data, mf->manifest_path, &path, &location);
		tl_ice_manifest_writer *mw = NULL;
		tl_ice_manifest_file copy;
		int bad = rewrite_manifest(mf, (const char *)path.data, (const char *)location.data, &mw, &copy);
		if (!bad && tl_ice_manifest_list_writer_add(lw, &copy, &err) < 0)
			bad = fail_at((const char *)list_path.data, &err);
		tl_ice_manifest_writer_free(mw);
		if (bad)
			goto done;
	}
	if (got < 0) {
		fail_at(snap->manifest_list, &err);
		goto done;
	}
	if (tl_ice_manifest_list_writer_close(lw, &err) < 0 || out->finish(out, &err) < 0) {
		fail_at((const char *)list_path.data, &err);
		goto done;
	}

	free(snap->manifest_list);
	snap->manifest_list = tl_strdup((const char *)list_location.data);
	tl_buf_reset(&path);
	tl_buf_printf(&path, "%s/rewritten.metadata.json", out_dir);
	tl_buf_append_byte(&path, '\0');
	tl_buf_reset(&text);
	if (tl_ice_metadata_write(md, &text, &err) < 0) {
		fail_at(metadata_path, &err);
		goto done;
	}
	if (write_text((const char *)path.data, &text) != 0)
		goto done;
	printf("%s\n%s\n", (const char *)list_location.data, (const char *)path.data);
	rc = 0;
done:
	tl_ice_manifest_list_writer_free(lw);
	tl_output_close(out);
	tl_ice_manifest_list_reader_free(lr);
	tl_input_close(in);
	tl_buf_free(&text);
	tl_buf_free(&path);
	tl_buf_free(&location);
	tl_buf_free(&list_path);
	tl_buf_free(&list_location);
	tl_buf_free(&name);
	tl_ice_metadata_free(md);
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
	if (argc == 4 && strcmp(argv[1], "rewrite-manifests") == 0)
		return cmd_rewrite_manifests(argv[2], argv[3]);
	fprintf(stderr, "usage: icebergtool transform TRANSFORM TYPE VALUE...\n"
	                "       icebergtool serialize TYPE VALUE...\n"
	                "       icebergtool metadata FILE\n"
	                "       icebergtool create LOCATION [SOURCE:TRANSFORM:NAME]...\n"
	                "       icebergtool rewrite-manifests METADATA_JSON OUT_DIR\n");
	return 2;
}
