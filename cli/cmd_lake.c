/*
 * cmd_lake.c: `tierdb lake info` and `tierdb lake cat`, for looking inside
 * Iceberg tables written by anyone.
 *
 * Both open a table the way engines do (tl_ice_table_open: the version
 * hint, else the newest numbered metadata file, or a metadata file named
 * directly). `info` prints what the metadata says (schema, partition spec,
 * properties, snapshots) and, for one snapshot, counts the live data and
 * delete files from its manifests. `cat` plans a scan at a snapshot and
 * prints its rows after every delete, rendered exactly like `tierdb
 * parquet cat`. All format work is the lake library's; this file prints.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "tierlake/iceberg_manifest.h"
#include "tierlake/iceberg_metadata.h"
#include "tierlake/iceberg_scan.h"
#include "tierlake/iceberg_table.h"

/* What `info` prints about one snapshot's files. */
typedef struct file_counts {
	int64_t manifests;
	int64_t data_files;
	int64_t position_delete_files;
	int64_t equality_delete_files;
	int64_t data_records; /* record counts of the live data files */
} file_counts;

/* Adds one manifest's live entries to counts. */
static int count_manifest(const char *manifest_path, file_counts *counts, tl_error *err)
{
	tl_input *in = tl_input_open_uri(manifest_path, err);
	if (in == NULL)
		return -1;
	int status = 0;
	tl_ice_manifest_reader *r = tl_ice_manifest_reader_open(in, err);
	if (r == NULL)
		status = -1;
	while (status == 0) {
		const tl_ice_manifest_entry *entry;
		int more = tl_ice_manifest_reader_next(r, &entry, err);
		if (more <= 0) {
			status = more;
			break;
		}
		if (entry->status == TL_ICE_STATUS_DELETED)
			continue;
		switch (entry->data_file.content) {
		case TL_ICE_CONTENT_DATA:
			counts->data_files++;
			/* Hostile counts must not overflow the sum. */
			if (entry->data_file.record_count < 0 ||
			    entry->data_file.record_count > INT64_MAX - counts->data_records)
				status = tl_error_set(err, TL_ERR_CORRUPT, "data file %s has an impossible record_count %" PRId64,
				                      entry->data_file.file_path, entry->data_file.record_count);
			else
				counts->data_records += entry->data_file.record_count;
			break;
		case TL_ICE_CONTENT_POSITION_DELETES:
			counts->position_delete_files++;
			break;
		case TL_ICE_CONTENT_EQUALITY_DELETES:
			counts->equality_delete_files++;
			break;
		default:
			status = tl_error_set(err, TL_ERR_CORRUPT, "data file %s has unknown content %d",
			                      entry->data_file.file_path, (int)entry->data_file.content);
		}
	}
	/* The readers' messages already name the file. */
	if (status == 0)
		counts->manifests++;
	tl_ice_manifest_reader_free(r);
	tl_input_close(in);
	return status;
}

/* Counts a snapshot's live files through its manifest list (or v1 manifest array). */
static int count_snapshot_files(const tl_ice_snapshot *snap, file_counts *counts, tl_error *err)
{
	memset(counts, 0, sizeof(*counts));
	if (snap->manifest_list == NULL) {
		for (int i = 0; i < snap->nmanifests; i++)
			if (count_manifest(snap->manifests[i], counts, err) < 0)
				return -1;
		return 0;
	}
	tl_input *in = tl_input_open_uri(snap->manifest_list, err);
	if (in == NULL)
		return -1;
	int status = 0;
	tl_ice_manifest_list_reader *r = tl_ice_manifest_list_reader_open(in, err);
	if (r == NULL)
		status = -1;
	while (status == 0) {
		const tl_ice_manifest_file *mf;
		int more = tl_ice_manifest_list_reader_next(r, &mf, err);
		if (more <= 0) {
			status = more;
			break;
		}
		status = count_manifest(mf->manifest_path, counts, err);
	}
	tl_ice_manifest_list_reader_free(r);
	tl_input_close(in);
	return status;
}

/* ================================================================ output */

static json_t *json_text_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* A summary count ("added-records") as a number when it is one, else as given. */
static json_t *json_summary_count(const tl_ice_snapshot *snap, const char *key)
{
	const char *s = tl_ice_snapshot_summary(snap, key);
	if (s == NULL)
		return json_null();
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0')
		return json_string(s);
	return json_integer(v);
}

static json_t *type_json(const tl_ice_type *type)
{
	tl_buf text;
	tl_buf_init(&text);
	tl_ice_type_text(type, &text);
	json_t *j = json_stringn((const char *)text.data, text.len);
	tl_buf_free(&text);
	return j;
}

static json_t *info_json(const char *metadata_file, const tl_ice_table_metadata *md, const tl_ice_snapshot *chosen,
                         const file_counts *counts)
{
	json_t *root = json_object();
	json_object_set_new(root, "metadata_file", json_string(metadata_file));
	json_object_set_new(root, "location", json_string(md->location));
	json_object_set_new(root, "table_uuid", json_text_or_null(md->table_uuid));
	json_object_set_new(root, "format_version", json_integer(md->format_version));

	const tl_ice_schema *schema = tl_ice_metadata_current_schema(md);
	json_t *js = json_object();
	json_object_set_new(js, "schema_id", json_integer(schema->schema_id));
	json_t *fields = json_array();
	for (int i = 0; i < schema->nfields; i++) {
		const tl_ice_field *f = &schema->fields[i];
		json_t *jf = json_object();
		json_object_set_new(jf, "id", json_integer(f->id));
		json_object_set_new(jf, "name", json_string(f->name));
		json_object_set_new(jf, "type", type_json(&f->type));
		json_object_set_new(jf, "required", json_boolean(f->required));
		json_array_append_new(fields, jf);
	}
	json_object_set_new(js, "fields", fields);
	json_object_set_new(root, "schema", js);

	const tl_ice_partition_spec *spec = tl_ice_metadata_default_spec(md);
	json_t *jspec = json_object();
	json_object_set_new(jspec, "spec_id", json_integer(spec->spec_id));
	json_t *pfields = json_array();
	for (int i = 0; i < spec->nfields; i++) {
		const tl_ice_partition_field *pf = &spec->fields[i];
		const tl_ice_field *source = tl_ice_schema_find_id(schema, pf->source_id);
		tl_buf transform;
		tl_buf_init(&transform);
		tl_ice_transform_text(&pf->transform, &transform);
		json_t *jf = json_object();
		json_object_set_new(jf, "field_id", json_integer(pf->field_id));
		json_object_set_new(jf, "name", json_string(pf->name));
		json_object_set_new(jf, "transform", json_stringn((const char *)transform.data, transform.len));
		json_object_set_new(jf, "source_id", json_integer(pf->source_id));
		json_object_set_new(jf, "source", json_text_or_null(source ? source->name : NULL));
		json_array_append_new(pfields, jf);
		tl_buf_free(&transform);
	}
	json_object_set_new(jspec, "fields", pfields);
	json_object_set_new(root, "partition_spec", jspec);

	json_t *props = json_object();
	for (int i = 0; i < md->nproperties; i++)
		json_object_set_new(props, md->properties[i].key, json_string(md->properties[i].value));
	json_object_set_new(root, "properties", props);

	json_object_set_new(root, "current_snapshot_id", md->current_snapshot_id == TL_ICE_NO_SNAPSHOT
	                                                         ? json_null()
	                                                         : json_integer(md->current_snapshot_id));
	json_t *snaps = json_array();
	for (int i = 0; i < md->nsnapshots; i++) {
		const tl_ice_snapshot *s = &md->snapshots[i];
		json_t *jsnap = json_object();
		json_object_set_new(jsnap, "snapshot_id", json_integer(s->snapshot_id));
		json_object_set_new(jsnap, "parent_id",
		                    s->parent_id == TL_ICE_NO_SNAPSHOT ? json_null() : json_integer(s->parent_id));
		json_object_set_new(jsnap, "sequence_number", json_integer(s->sequence_number));
		json_object_set_new(jsnap, "timestamp_ms", json_integer(s->timestamp_ms));
		json_object_set_new(jsnap, "operation", json_text_or_null(s->operation));
		json_object_set_new(jsnap, "added_records", json_summary_count(s, "added-records"));
		json_object_set_new(jsnap, "total_records", json_summary_count(s, "total-records"));
		json_array_append_new(snaps, jsnap);
	}
	json_object_set_new(root, "snapshots", snaps);

	if (chosen == NULL)
		json_object_set_new(root, "files", json_null());
	else {
		json_t *jfiles = json_object();
		json_object_set_new(jfiles, "snapshot_id", json_integer(chosen->snapshot_id));
		json_object_set_new(jfiles, "manifests", json_integer(counts->manifests));
		json_object_set_new(jfiles, "data_files", json_integer(counts->data_files));
		json_object_set_new(jfiles, "position_delete_files", json_integer(counts->position_delete_files));
		json_object_set_new(jfiles, "equality_delete_files", json_integer(counts->equality_delete_files));
		json_object_set_new(jfiles, "data_records", json_integer(counts->data_records));
		json_object_set_new(root, "files", jfiles);
	}
	return root;
}

static void print_text(const char *metadata_file, const tl_ice_table_metadata *md, const tl_ice_snapshot *chosen,
                       const file_counts *counts, FILE *out)
{
	fprintf(out, "Metadata file:   %s\n", metadata_file);
	fprintf(out, "Location:        %s\n", md->location);
	fprintf(out, "Table UUID:      %s\n", md->table_uuid ? md->table_uuid : "(none)");
	fprintf(out, "Format version:  %d\n", md->format_version);

	const tl_ice_schema *schema = tl_ice_metadata_current_schema(md);
	tl_buf text;
	tl_buf_init(&text);
	fprintf(out, "\nSchema %d:\n", (int)schema->schema_id);
	fprintf(out, "  %-6s %-24s %-20s %s\n", "id", "name", "type", "required");
	for (int i = 0; i < schema->nfields; i++) {
		const tl_ice_field *f = &schema->fields[i];
		tl_buf_reset(&text);
		tl_ice_type_text(&f->type, &text);
		tl_buf_append_byte(&text, '\0');
		fprintf(out, "  %-6d %-24s %-20s %s\n", (int)f->id, f->name, (const char *)text.data,
		        f->required ? "yes" : "no");
	}

	const tl_ice_partition_spec *spec = tl_ice_metadata_default_spec(md);
	fprintf(out, "\nPartition spec %d:%s\n", (int)spec->spec_id, spec->nfields == 0 ? " unpartitioned" : "");
	if (spec->nfields > 0)
		fprintf(out, "  %-24s %-16s %s\n", "field", "transform", "source");
	for (int i = 0; i < spec->nfields; i++) {
		const tl_ice_partition_field *pf = &spec->fields[i];
		const tl_ice_field *source = tl_ice_schema_find_id(schema, pf->source_id);
		tl_buf_reset(&text);
		tl_ice_transform_text(&pf->transform, &text);
		tl_buf_append_byte(&text, '\0');
		fprintf(out, "  %-24s %-16s %s (id %d)\n", pf->name, (const char *)text.data,
		        source ? source->name : "?", (int)pf->source_id);
	}
	tl_buf_free(&text);

	fprintf(out, "\nProperties:%s\n", md->nproperties == 0 ? " none" : "");
	for (int i = 0; i < md->nproperties; i++)
		fprintf(out, "  %s = %s\n", md->properties[i].key, md->properties[i].value);

	fprintf(out, "\nSnapshots:%s\n", md->nsnapshots == 0 ? " none" : "");
	if (md->nsnapshots > 0)
		fprintf(out, "  %-20s %-20s %-5s %-14s %-10s %-14s %s\n", "id", "parent", "seq", "timestamp_ms",
		        "operation", "added_records", "total_records");
	for (int i = 0; i < md->nsnapshots; i++) {
		const tl_ice_snapshot *s = &md->snapshots[i];
		char parent[24];
		if (s->parent_id == TL_ICE_NO_SNAPSHOT)
			snprintf(parent, sizeof(parent), "-");
		else
			snprintf(parent, sizeof(parent), "%" PRId64, s->parent_id);
		const char *added = tl_ice_snapshot_summary(s, "added-records");
		const char *total = tl_ice_snapshot_summary(s, "total-records");
		fprintf(out, "  %-20" PRId64 " %-20s %-5" PRId64 " %-14" PRId64 " %-10s %-14s %s%s\n", s->snapshot_id,
		        parent, s->sequence_number, s->timestamp_ms, s->operation ? s->operation : "-",
		        added ? added : "-", total ? total : "-",
		        s->snapshot_id == md->current_snapshot_id ? "  (current)" : "");
	}

	if (chosen != NULL) {
		fprintf(out, "\nFiles of snapshot %" PRId64 ":\n", chosen->snapshot_id);
		fprintf(out, "  manifests:              %" PRId64 "\n", counts->manifests);
		fprintf(out, "  data files:             %" PRId64 "\n", counts->data_files);
		fprintf(out, "  position delete files:  %" PRId64 "\n", counts->position_delete_files);
		fprintf(out, "  equality delete files:  %" PRId64 "\n", counts->equality_delete_files);
		fprintf(out, "  records in data files:  %" PRId64 "\n", counts->data_records);
	}
}

/* ================================================================ info */

static void info_usage(FILE *out)
{
	fputs("Usage: tierdb lake info LOCATION [--snapshot ID] [--json]\n"
	      "\n"
	      "Prints an Iceberg table's location, uuid, format version, current schema,\n"
	      "default partition spec, properties and snapshots, and for one snapshot the\n"
	      "number of live data files, delete files and records, read from its manifests.\n"
	      "\n"
	      "LOCATION is a table directory (its metadata/version-hint.text, else the\n"
	      "newest metadata/*.metadata.json, is read) or a metadata JSON file.\n"
	      "\n"
	      "Options:\n"
	      "  --snapshot ID   count the files of this snapshot (default: the current one)\n"
	      "  --json          print the same as one JSON document\n"
	      "  --help          print this help\n",
	      out);
}

static int cmd_info(int argc, char **argv)
{
	enum { OPT_SNAPSHOT = 1, OPT_JSON };
	static const cli_option options[] = {
		{"snapshot", true, OPT_SNAPSHOT},
		{"json", false, OPT_JSON},
		{NULL, false, 0},
	};
	const char *cmd = "tierdb lake info";
	const char *location = NULL;
	bool json = false;
	bool has_snapshot = false;
	int64_t snapshot_id = 0;
	cli_parser p;
	cli_parser_init(&p, cmd, info_usage, options, argc, argv);
	for (int opt; (opt = cli_next(&p)) != CLI_END;) {
		switch (opt) {
		case CLI_HELP:
			return cli_help(&p);
		case CLI_ERROR:
			return CLI_EXIT_USAGE;
		case CLI_POSITIONAL:
			if (location != NULL)
				return cli_usage_error(cmd, "unexpected argument '%s'", p.value);
			location = p.value;
			break;
		case OPT_SNAPSHOT:
			if (cli_parse_int(&p, INT64_MIN, INT64_MAX, &snapshot_id) < 0)
				return CLI_EXIT_USAGE;
			has_snapshot = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		}
	}
	if (location == NULL)
		return cli_usage_error(cmd, "a table location is required");

	tl_error err;
	tl_error_clear(&err);
	tl_ice_table *table = tl_ice_table_open(location, &err);
	if (table == NULL)
		return cli_fail("%s", err.message);
	const tl_ice_table_metadata *md = table->metadata;
	const char *metadata_file = table->metadata_file;

	int status = CLI_EXIT_OK;
	const tl_ice_snapshot *chosen = NULL;
	file_counts counts;
	memset(&counts, 0, sizeof(counts));
	if (has_snapshot) {
		chosen = tl_ice_metadata_snapshot(md, snapshot_id);
		if (chosen == NULL)
			status = cli_fail("%s has no snapshot %" PRId64, metadata_file, snapshot_id);
	} else
		chosen = tl_ice_metadata_current_snapshot(md);
	if (status == CLI_EXIT_OK && chosen != NULL && count_snapshot_files(chosen, &counts, &err) < 0)
		status = cli_fail("%s", err.message);

	if (status == CLI_EXIT_OK) {
		if (json) {
			json_t *root = info_json(metadata_file, md, chosen, &counts);
			json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
			fputc('\n', stdout);
			json_decref(root);
		} else
			print_text(metadata_file, md, chosen, &counts, stdout);
		if (fflush(stdout) != 0 || ferror(stdout))
			status = cli_fail("writing output: %s", strerror(errno ? errno : EIO));
	}
	tl_ice_table_free(table);
	return status;
}

/* ================================================================ cat */

static void cat_usage(FILE *out)
{
	fputs("Usage: tierdb lake cat LOCATION [--snapshot ID] [--columns a,b] [--limit N]\n"
	      "\n"
	      "Prints the rows of an Iceberg table at a snapshot, after its position and\n"
	      "equality deletes, as JSON, one object per line, rendered like\n"
	      "`tierdb parquet cat`. Rows come file by file in manifest order.\n"
	      "\n"
	      "LOCATION is a table directory or a metadata JSON file.\n"
	      "\n"
	      "Options:\n"
	      "  --snapshot ID   read this snapshot (default: the current one)\n"
	      "  --columns a,b   print only these columns, in this order (others are not read)\n"
	      "  --limit N       stop after N rows\n"
	      "  --help          print this help\n",
	      out);
}

/*
 * Field ids for the --columns names, or NULL after printing a failure that
 * names the missing column and lists the table's.
 */
static int32_t *resolve_fields(const cli_column_list *list, const char *location, const tl_ice_schema *schema)
{
	int32_t *ids = tl_malloc((size_t)list->count * sizeof(int32_t));
	for (int i = 0; i < list->count; i++) {
		const tl_ice_field *field = tl_ice_schema_find_name(schema, list->names[i]);
		if (field != NULL && strchr(list->names[i], '.') == NULL) {
			ids[i] = field->id;
			continue;
		}
		tl_buf names;
		tl_buf_init(&names);
		for (int c = 0; c < schema->nfields; c++)
			tl_buf_printf(&names, "%s%s", c > 0 ? ", " : "", schema->fields[c].name);
		tl_buf_append_byte(&names, '\0');
		cli_fail("%s has no column named \"%s\"; its columns are: %s", location, list->names[i],
		         (const char *)names.data);
		tl_buf_free(&names);
		free(ids);
		return NULL;
	}
	return ids;
}

/* cli_print_rows' source of batches. */
static int64_t next_lake_batch(void *reader, tl_pq_batch *batch, tl_error *err)
{
	return tl_ice_reader_next(reader, batch, err);
}

static int cat_rows(tl_ice_reader *r, int64_t limit)
{
	tl_pq_batch *batch = tl_ice_reader_batch_new(r, limit < CLI_CAT_BATCH_ROWS ? limit : CLI_CAT_BATCH_ROWS);
	int status = cli_print_rows(tl_ice_reader_schema(r), NULL, batch, next_lake_batch, r, limit);
	tl_pq_batch_free(batch);
	return status;
}

/* Plans the scan and prints its rows; the caller owns `table`. */
static int cat_table(const tl_ice_table *table, int64_t snapshot_id, const cli_column_list *columns,
                     int64_t limit)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_scan *scan = tl_ice_scan_plan(table->metadata, snapshot_id, NULL, &err);
	if (scan == NULL)
		return cli_fail("%s: %s", table->location, err.message);
	int status = CLI_EXIT_OK;
	int32_t *field_ids = NULL;
	if (columns->count > 0) {
		field_ids = resolve_fields(columns, table->location, tl_ice_scan_schema(scan));
		if (field_ids == NULL)
			status = CLI_EXIT_FAILURE;
	}
	tl_ice_reader *reader = NULL;
	if (status == CLI_EXIT_OK) {
		reader = tl_ice_reader_open(scan, field_ids, columns->count, &err);
		if (reader == NULL)
			status = cli_fail("%s: %s", table->location, err.message);
	}
	if (status == CLI_EXIT_OK && limit > 0) {
		static char stdout_buffer[1 << 16];
		setvbuf(stdout, stdout_buffer, _IOFBF, sizeof(stdout_buffer));
		status = cat_rows(reader, limit);
	}
	tl_ice_reader_free(reader);
	free(field_ids);
	tl_ice_scan_free(scan);
	return status;
}

static int cmd_cat(int argc, char **argv)
{
	enum { OPT_SNAPSHOT = 1, OPT_COLUMNS, OPT_LIMIT };
	static const cli_option options[] = {
		{"snapshot", true, OPT_SNAPSHOT},
		{"columns", true, OPT_COLUMNS},
		{"limit", true, OPT_LIMIT},
		{NULL, false, 0},
	};
	const char *cmd = "tierdb lake cat";
	const char *location = NULL, *columns = NULL;
	int64_t snapshot_id = TL_ICE_NO_SNAPSHOT;
	int64_t limit = INT64_MAX;
	cli_parser p;
	cli_parser_init(&p, cmd, cat_usage, options, argc, argv);
	for (int opt; (opt = cli_next(&p)) != CLI_END;) {
		switch (opt) {
		case CLI_HELP:
			return cli_help(&p);
		case CLI_ERROR:
			return CLI_EXIT_USAGE;
		case CLI_POSITIONAL:
			if (location != NULL)
				return cli_usage_error(cmd, "unexpected argument '%s'", p.value);
			location = p.value;
			break;
		case OPT_SNAPSHOT:
			/* Snapshot ids are positive; -1 would mean "current" to the library. */
			if (cli_parse_int(&p, 0, INT64_MAX, &snapshot_id) < 0)
				return CLI_EXIT_USAGE;
			break;
		case OPT_COLUMNS:
			columns = p.value;
			break;
		case OPT_LIMIT:
			if (cli_parse_int(&p, 0, INT64_MAX, &limit) < 0)
				return CLI_EXIT_USAGE;
			break;
		}
	}
	if (location == NULL)
		return cli_usage_error(cmd, "a table location is required");
	cli_column_list list = {NULL, NULL, 0};
	if (columns != NULL && cli_split_columns(cmd, columns, &list) < 0) {
		cli_column_list_free(&list);
		return CLI_EXIT_USAGE;
	}

	tl_error err;
	tl_error_clear(&err);
	int status;
	tl_ice_table *table = tl_ice_table_open(location, &err);
	if (table == NULL)
		status = cli_fail("%s", err.message);
	else
		status = cat_table(table, snapshot_id, &list, limit);
	tl_ice_table_free(table);
	cli_column_list_free(&list);
	int flushed = cli_finish_output();
	return status != CLI_EXIT_OK ? status : flushed;
}

/* ================================================================ dispatch */

static void describe_lake(FILE *out)
{
	fputs("Looks inside Iceberg tables.\n", out);
}

static const cli_command info_command = {"info", "print a table's schema, spec, snapshots and file counts",
                                         cmd_info};
static const cli_command cat_command = {"cat", "print a table's rows at a snapshot, after deletes", cmd_cat};
static const cli_command *const lake_commands[] = {&info_command, &cat_command};

static int run_lake(int argc, char **argv)
{
	return cli_dispatch("tierdb lake", describe_lake, lake_commands, 2, argc, argv);
}

const cli_command cli_lake_command = {"lake", "inspect Iceberg tables (info, cat)", run_lake};
