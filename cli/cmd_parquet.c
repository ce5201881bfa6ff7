/*
 * cmd_parquet.c: `tierdb parquet schema` and `tierdb parquet cat`, for
 * looking inside Parquet files.
 *
 * `schema` prints what the footer says (columns, row groups, column
 * chunks, statistics) as aligned text or, with --json, as one JSON
 * document for scripts. `cat` streams rows as JSON Lines, reading only the
 * columns asked for, one batch at a time, so it runs in bounded memory on
 * files of any size. Values look the same in both because both render
 * through tierlake/render.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tierlake/parquet.h"
#include "tierlake/render.h"
#include "tierlake/storage.h"

/* Values longer than this are shortened in the text form of `schema`. */
#define TEXT_VALUE_MAX 40

/* An open file and its reader, released together. */
typedef struct parquet_file {
	tl_input *in;
	tl_pq_reader *reader;
} parquet_file;

static int open_parquet(const char *path, parquet_file *f)
{
	tl_error err;
	tl_error_clear(&err);
	f->reader = NULL;
	f->in = tl_storage_open_read(path, &err);
	if (f->in)
		f->reader = tl_pq_reader_open(f->in, &err);
	if (f->reader == NULL) {
		tl_input_close(f->in);
		f->in = NULL;
		cli_fail("%s", err.message);
		return -1;
	}
	return 0;
}

static void close_parquet(parquet_file *f)
{
	tl_pq_reader_free(f->reader);
	tl_input_close(f->in);
}


/* ================================================================ cat */

static void cat_usage(FILE *out)
{
	fputs("Usage: tierdb parquet cat FILE [--columns a,b] [--limit N]\n"
	      "\n"
	      "Prints the rows of a Parquet file as JSON, one object per line, with keys in\n"
	      "schema order (or in --columns order).\n"
	      "\n"
	      "Options:\n"
	      "  --columns a,b   print only these columns, in this order (others are not read)\n"
	      "  --limit N       stop after N rows\n"
	      "  --help          print this help\n",
	      out);
}

/*
 * Schema indexes for the names, or NULL after printing a failure that
 * names the missing column and lists the ones the file has.
 */
static int *resolve_columns(const cli_column_list *list, const char *path, const tl_pq_schema *schema)
{
	int *idx = tl_malloc((size_t)list->count * sizeof(int));
	for (int i = 0; i < list->count; i++) {
		idx[i] = tl_pq_schema_find(schema, list->names[i]);
		if (idx[i] >= 0)
			continue;
		tl_buf names;
		tl_buf_init(&names);
		for (int c = 0; c < schema->ncolumns; c++) {
			if (c > 0)
				tl_buf_append_str(&names, ", ");
			tl_buf_append_str(&names, schema->columns[c].name);
		}
		tl_buf_append_byte(&names, '\0');
		cli_fail("%s has no column named \"%s\"; its columns are: %s", path, list->names[i],
		         (const char *)names.data);
		tl_buf_free(&names);
		free(idx);
		return NULL;
	}
	return idx;
}

/* cli_print_rows' source of batches. */
static int64_t next_parquet_batch(void *reader, tl_pq_batch *batch, tl_error *err)
{
	return tl_pq_reader_next(reader, batch, err);
}

static int cat_rows(tl_pq_reader *r, const int *projection, int64_t limit)
{
	tl_pq_batch *batch = tl_pq_reader_batch_new(r, limit < CLI_CAT_BATCH_ROWS ? limit : CLI_CAT_BATCH_ROWS);
	int status = cli_print_rows(tl_pq_reader_schema(r), projection, batch, next_parquet_batch, r, limit);
	tl_pq_batch_free(batch);
	return status;
}

static int cmd_cat(int argc, char **argv)
{
	enum { OPT_COLUMNS = 1, OPT_LIMIT };
	static const cli_option options[] = {
		{"columns", true, OPT_COLUMNS},
		{"limit", true, OPT_LIMIT},
		{NULL, false, 0},
	};
	const char *cmd = "tierdb parquet cat";
	const char *path = NULL, *columns = NULL;
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
			if (path != NULL)
				return cli_usage_error(cmd, "unexpected argument '%s'", p.value);
			path = p.value;
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
	if (path == NULL)
		return cli_usage_error(cmd, "a Parquet file is required");
	cli_column_list list = {NULL, NULL, 0};
	if (columns != NULL && cli_split_columns(cmd, columns, &list) < 0) {
		cli_column_list_free(&list);
		return CLI_EXIT_USAGE;
	}

	parquet_file f;
	int status = CLI_EXIT_OK;
	int *projection = NULL;
	if (open_parquet(path, &f) < 0)
		status = CLI_EXIT_FAILURE;
	else if (columns != NULL) {
		tl_error err;
		tl_error_clear(&err);
		projection = resolve_columns(&list, path, tl_pq_reader_schema(f.reader));
		if (projection == NULL)
			status = CLI_EXIT_FAILURE;
		else if (tl_pq_reader_project(f.reader, projection, list.count, &err) < 0)
			status = cli_fail("%s", err.message);
	}
	if (status == CLI_EXIT_OK && limit > 0) {
		static char stdout_buffer[1 << 16];
		setvbuf(stdout, stdout_buffer, _IOFBF, sizeof(stdout_buffer));
		status = cat_rows(f.reader, projection, limit);
	}
	free(projection);
	cli_column_list_free(&list);
	if (f.reader)
		close_parquet(&f);
	int flushed = cli_finish_output();
	return status != CLI_EXIT_OK ? status : flushed;
}

/* ================================================================ schema */

static void schema_usage(FILE *out)
{
	fputs("Usage: tierdb parquet schema FILE [--json]\n"
	      "\n"
	      "Prints a Parquet file's columns (name, type, repetition, field id), its\n"
	      "facts (rows, row groups, writer, key-value metadata), and for every row\n"
	      "group its column chunks: codec, encodings, sizes, null count, min and max.\n"
	      "\n"
	      "Options:\n"
	      "  --json   print the same as one JSON document\n"
	      "  --help   print this help\n",
	      out);
}

static const char *logical_name(tl_pq_logical l)
{
	switch (l) {
	case TL_PQ_LOGICAL_NONE: return NULL;
	case TL_PQ_LOGICAL_STRING: return "STRING";
	case TL_PQ_LOGICAL_DATE: return "DATE";
	case TL_PQ_LOGICAL_TIMESTAMP: return "TIMESTAMP";
	case TL_PQ_LOGICAL_TIME: return "TIME";
	case TL_PQ_LOGICAL_DECIMAL: return "DECIMAL";
	case TL_PQ_LOGICAL_UUID: return "UUID";
	case TL_PQ_LOGICAL_INT: return "INT";
	case TL_PQ_LOGICAL_JSON: return "JSON";
	case TL_PQ_LOGICAL_ENUM: return "ENUM";
	}
	return NULL;
}

static const char *unit_name(tl_pq_time_unit u)
{
	return u == TL_PQ_MILLIS ? "MILLIS" : u == TL_PQ_MICROS ? "MICROS" : "NANOS";
}

/* Statistics of INT96 columns have no defined order, so they are not shown. */
static bool shows_min_max(const tl_pq_column *col, const tl_pq_chunk_info *chunk)
{
	return chunk->stats.has_min_max && col->physical != TL_PQ_INT96;
}

static void append_encodings(uint32_t mask, const char *separator, bool quoted, tl_buf *out)
{
	bool first = true;
	for (int e = 0; e < 32; e++) {
		if (!(mask & (UINT32_C(1) << e)))
			continue;
		if (!first)
			tl_buf_append_str(out, separator);
		first = false;
		if (quoted)
			tl_buf_printf(out, "\"%s\"", tl_pq_encoding_name(e));
		else
			tl_buf_append_str(out, tl_pq_encoding_name(e));
	}
}

/* ---------------------------------------------------------------- --json */

static void json_key(tl_buf *out, const char *key)
{
	tl_render_json_string(key, strlen(key), out);
	tl_buf_append_byte(out, ':');
}

static void json_text(tl_buf *out, const char *key, const char *value)
{
	json_key(out, key);
	if (value)
		tl_render_json_string(value, strlen(value), out);
	else
		tl_buf_append_str(out, "null");
	tl_buf_append_byte(out, ',');
}

static void json_int(tl_buf *out, const char *key, int64_t value)
{
	json_key(out, key);
	tl_buf_printf(out, "%lld,", (long long)value);
}

static void json_bool(tl_buf *out, const char *key, bool value)
{
	json_key(out, key);
	tl_buf_append_str(out, value ? "true," : "false,");
}

/* Replaces the trailing comma of the last member with `close`. */
static void json_close(tl_buf *out, char close)
{
	if (out->len && out->data[out->len - 1] == ',')
		out->data[out->len - 1] = (uint8_t)close;
	else
		tl_buf_append_byte(out, (uint8_t)close);
}

static void json_column(tl_buf *out, int index, const tl_pq_column *col)
{
	tl_buf type;
	tl_buf_init(&type);
	tl_pq_column_type_text(col, &type);
	tl_buf_append_byte(&type, '\0');

	tl_buf_append_byte(out, '{');
	json_int(out, "index", index);
	json_text(out, "name", col->name);
	json_text(out, "type", (const char *)type.data);
	json_text(out, "physical_type", tl_pq_physical_name(col->physical));
	json_text(out, "logical_type", logical_name(col->logical));
	if (col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY)
		json_int(out, "type_length", col->type_length);
	if (col->logical == TL_PQ_LOGICAL_DECIMAL) {
		json_int(out, "precision", col->precision);
		json_int(out, "scale", col->scale);
	}
	if (col->logical == TL_PQ_LOGICAL_TIMESTAMP || col->logical == TL_PQ_LOGICAL_TIME) {
		json_text(out, "unit", unit_name(col->unit));
		json_bool(out, "utc_adjusted", col->utc_adjusted);
	}
	if (col->logical == TL_PQ_LOGICAL_INT) {
		json_int(out, "bit_width", col->int_bit_width);
		json_bool(out, "signed", col->int_signed);
	}
	json_bool(out, "required", col->required);
	json_key(out, "field_id");
	if (col->field_id >= 0)
		tl_buf_printf(out, "%d,", col->field_id);
	else
		tl_buf_append_str(out, "null,");
	json_close(out, '}');
	tl_buf_free(&type);
}

static void json_chunk(tl_buf *out, const tl_pq_column *col, const tl_pq_chunk_info *chunk)
{
	tl_buf_append_byte(out, '{');
	json_text(out, "name", col->name);
	json_text(out, "codec", tl_pq_codec_name(chunk->codec));
	json_key(out, "encodings");
	tl_buf_append_byte(out, '[');
	append_encodings(chunk->encodings_mask, ",", true, out);
	tl_buf_append_str(out, "],");
	json_int(out, "num_values", chunk->num_values);
	json_int(out, "compressed_size", chunk->compressed_size);
	json_int(out, "uncompressed_size", chunk->uncompressed_size);
	json_key(out, "null_count");
	if (chunk->stats.has_null_count)
		tl_buf_printf(out, "%lld,", (long long)chunk->stats.null_count);
	else
		tl_buf_append_str(out, "null,");
	json_key(out, "min");
	if (shows_min_max(col, chunk))
		tl_render_stat(col, &chunk->stats.min, out);
	else
		tl_buf_append_str(out, "null");
	tl_buf_append_byte(out, ',');
	json_key(out, "max");
	if (shows_min_max(col, chunk))
		tl_render_stat(col, &chunk->stats.max, out);
	else
		tl_buf_append_str(out, "null");
	tl_buf_append_byte(out, '}');
}

static void schema_json(const char *path, tl_pq_reader *r, tl_buf *out)
{
	const tl_pq_schema *schema = tl_pq_reader_schema(r);
	int ngroups = tl_pq_reader_num_row_groups(r);

	tl_buf_append_byte(out, '{');
	json_text(out, "file", path);
	json_int(out, "num_rows", tl_pq_reader_num_rows(r));
	json_int(out, "num_row_groups", ngroups);
	json_text(out, "created_by", tl_pq_reader_created_by(r));
	json_key(out, "columns");
	tl_buf_append_byte(out, '[');
	for (int i = 0; i < schema->ncolumns; i++) {
		json_column(out, i, &schema->columns[i]);
		tl_buf_append_byte(out, ',');
	}
	json_close(out, ']');
	tl_buf_append_byte(out, ',');

	json_key(out, "metadata");
	tl_buf_append_byte(out, '{');
	for (int i = 0; i < tl_pq_reader_num_metadata(r); i++) {
		const tl_pq_kv *kv = tl_pq_reader_metadata(r, i);
		json_text(out, kv->key, kv->value);
	}
	json_close(out, '}');
	tl_buf_append_byte(out, ',');

	json_key(out, "row_groups");
	tl_buf_append_byte(out, '[');
	for (int g = 0; g < ngroups; g++) {
		tl_buf_append_byte(out, '{');
		json_int(out, "index", g);
		json_int(out, "num_rows", tl_pq_reader_row_group_rows(r, g));
		json_key(out, "columns");
		tl_buf_append_byte(out, '[');
		for (int c = 0; c < schema->ncolumns; c++) {
			json_chunk(out, &schema->columns[c], tl_pq_reader_chunk(r, g, c));
			tl_buf_append_byte(out, ',');
		}
		json_close(out, ']');
		tl_buf_append_str(out, "},");
	}
	json_close(out, ']');
	tl_buf_append_str(out, "}\n");
}

/* ---------------------------------------------------------------- text */

/* Cells of an aligned table, row by row; every cell is owned. */
typedef struct text_table {
	int ncols;
	int ncells;
	int cap;
	char **cells;
} text_table;

static void table_init(text_table *t, int ncols)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
}

static void table_add(text_table *t, const char *cell)
{
	if (t->ncells == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->cells = tl_realloc(t->cells, (size_t)t->cap * sizeof(char *));
	}
	t->cells[t->ncells++] = tl_strdup(cell);
}

static void table_addf(text_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void table_addf(text_table *t, const char *fmt, ...)
{
	char cell[64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cell, sizeof(cell), fmt, ap);
	va_end(ap);
	table_add(t, cell);
}

/* Terminal columns a UTF-8 cell takes (one per code point: good enough). */
static int display_width(const char *s)
{
	int w = 0;
	for (; *s; s++)
		w += ((uint8_t)*s & 0xC0) != 0x80;
	return w;
}

static void table_print(text_table *t, FILE *out)
{
	int *width = tl_calloc((size_t)t->ncols, sizeof(int));
	for (int i = 0; i < t->ncells; i++) {
		int w = display_width(t->cells[i]);
		if (w > width[i % t->ncols])
			width[i % t->ncols] = w;
	}
	for (int i = 0; i < t->ncells; i++) {
		int col = i % t->ncols;
		fputs("  ", out);
		fputs(t->cells[i], out);
		if (col == t->ncols - 1 || i == t->ncells - 1)
			fputc('\n', out);
		else
			for (int pad = display_width(t->cells[i]); pad < width[col]; pad++)
				fputc(' ', out);
	}
	free(width);
}

static void table_free(text_table *t)
{
	for (int i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	free(t->cells);
}

/* Sets out to text[0..len) cut to `max` code points, "..." marking a cut, and a terminator. */
static void set_shortened(const uint8_t *text, size_t len, size_t max, tl_buf *out)
{
	size_t chars = 0, cut = len;
	for (size_t i = 0; i < len; i++)
		if ((text[i] & 0xC0) != 0x80 && chars++ == max) {
			cut = i;
			break;
		}
	tl_buf_reset(out);
	tl_buf_append(out, text, cut);
	if (cut < len)
		tl_buf_append_str(out, "...");
	tl_buf_append_byte(out, '\0');
}

/*
 * Text from the file (names, metadata) made safe for a terminal: control
 * characters escaped and invalid UTF-8 replaced, as in a JSON string
 * without its quotes, and cut to `max` code points.
 */
static void printable(const char *s, size_t len, size_t max, tl_buf *out)
{
	tl_buf quoted;
	tl_buf_init(&quoted);
	tl_render_json_string(s, len, &quoted);
	set_shortened(quoted.data + 1, quoted.len - 2, max, out);
	tl_buf_free(&quoted);
}

/* A statistic rendered as `cat` renders the value, shortened for the table. */
static void stat_cell(text_table *t, const tl_pq_column *col, const union tl_pq_stat_value *value)
{
	tl_buf rendered, cell;
	tl_buf_init(&rendered);
	tl_buf_init(&cell);
	tl_render_stat(col, value, &rendered);
	set_shortened(rendered.data, rendered.len, TEXT_VALUE_MAX, &cell);
	table_add(t, (const char *)cell.data);
	tl_buf_free(&rendered);
	tl_buf_free(&cell);
}

static void schema_text(const char *path, tl_pq_reader *r, FILE *out)
{
	const tl_pq_schema *schema = tl_pq_reader_schema(r);
	int ngroups = tl_pq_reader_num_row_groups(r);
	tl_buf text;
	tl_buf_init(&text);

	text_table facts;
	table_init(&facts, 2);
	printable(path, strlen(path), SIZE_MAX, &text);
	table_add(&facts, "file");
	table_add(&facts, (const char *)text.data);
	table_add(&facts, "rows");
	table_addf(&facts, "%lld", (long long)tl_pq_reader_num_rows(r));
	table_add(&facts, "row groups");
	table_addf(&facts, "%d", ngroups);
	const char *created_by = tl_pq_reader_created_by(r);
	printable(created_by ? created_by : "", created_by ? strlen(created_by) : 0, SIZE_MAX, &text);
	table_add(&facts, "created by");
	table_add(&facts, (const char *)text.data);
	fputs("File\n", out);
	table_print(&facts, out);
	table_free(&facts);

	text_table cols;
	table_init(&cols, 5);
	table_add(&cols, "#");
	table_add(&cols, "name");
	table_add(&cols, "type");
	table_add(&cols, "repetition");
	table_add(&cols, "field id");
	for (int i = 0; i < schema->ncolumns; i++) {
		const tl_pq_column *col = &schema->columns[i];
		table_addf(&cols, "%d", i);
		printable(col->name, strlen(col->name), SIZE_MAX, &text);
		table_add(&cols, (const char *)text.data);
		tl_buf_reset(&text);
		tl_pq_column_type_text(col, &text);
		tl_buf_append_byte(&text, '\0');
		table_add(&cols, (const char *)text.data);
		table_add(&cols, col->required ? "required" : "optional");
		if (col->field_id >= 0)
			table_addf(&cols, "%d", col->field_id);
		else
			table_add(&cols, "-");
	}
	fprintf(out, "\nColumns (%d)\n", schema->ncolumns);
	table_print(&cols, out);
	table_free(&cols);

	int nmeta = tl_pq_reader_num_metadata(r);
	if (nmeta > 0) {
		text_table meta;
		table_init(&meta, 2);
		for (int i = 0; i < nmeta; i++) {
			const tl_pq_kv *kv = tl_pq_reader_metadata(r, i);
			printable(kv->key, strlen(kv->key), SIZE_MAX, &text);
			table_add(&meta, (const char *)text.data);
			if (kv->value == NULL)
				table_add(&meta, "(no value)");
			else {
				size_t len = strlen(kv->value);
				printable(kv->value, len, 2 * TEXT_VALUE_MAX, &text);
				if (len > 2 * TEXT_VALUE_MAX) {
					text.len--; /* the terminator */
					tl_buf_printf(&text, " (%zu bytes)", len);
					tl_buf_append_byte(&text, '\0');
				}
				table_add(&meta, (const char *)text.data);
			}
		}
		fprintf(out, "\nKey-value metadata (%d)\n", nmeta);
		table_print(&meta, out);
		table_free(&meta);
	}

	for (int g = 0; g < ngroups; g++) {
		text_table chunks;
		table_init(&chunks, 8);
		static const char *const headings[] = {"column", "codec", "encodings", "compressed",
		                                       "uncompressed", "nulls", "min", "max"};
		for (int h = 0; h < 8; h++)
			table_add(&chunks, headings[h]);
		for (int c = 0; c < schema->ncolumns; c++) {
			const tl_pq_column *col = &schema->columns[c];
			const tl_pq_chunk_info *chunk = tl_pq_reader_chunk(r, g, c);
			printable(col->name, strlen(col->name), SIZE_MAX, &text);
			table_add(&chunks, (const char *)text.data);
			table_add(&chunks, tl_pq_codec_name(chunk->codec));
			tl_buf_reset(&text);
			append_encodings(chunk->encodings_mask, ",", false, &text);
			tl_buf_append_byte(&text, '\0');
			table_add(&chunks, (const char *)text.data);
			table_addf(&chunks, "%lld", (long long)chunk->compressed_size);
			table_addf(&chunks, "%lld", (long long)chunk->uncompressed_size);
			if (chunk->stats.has_null_count)
				table_addf(&chunks, "%lld", (long long)chunk->stats.null_count);
			else
				table_add(&chunks, "-");
			if (shows_min_max(col, chunk)) {
				stat_cell(&chunks, col, &chunk->stats.min);
				stat_cell(&chunks, col, &chunk->stats.max);
			} else {
				table_add(&chunks, "-");
				table_add(&chunks, "-");
			}
		}
		int64_t rows = tl_pq_reader_row_group_rows(r, g);
		fprintf(out, "\nRow group %d: %lld row%s\n", g, (long long)rows, rows == 1 ? "" : "s");
		table_print(&chunks, out);
		table_free(&chunks);
	}
	tl_buf_free(&text);
}

static int cmd_schema(int argc, char **argv)
{
	enum { OPT_JSON = 1 };
	static const cli_option options[] = {
		{"json", false, OPT_JSON},
		{NULL, false, 0},
	};
	const char *cmd = "tierdb parquet schema";
	const char *path = NULL;
	bool json = false;
	cli_parser p;
	cli_parser_init(&p, cmd, schema_usage, options, argc, argv);
	for (int opt; (opt = cli_next(&p)) != CLI_END;) {
		switch (opt) {
		case CLI_HELP:
			return cli_help(&p);
		case CLI_ERROR:
			return CLI_EXIT_USAGE;
		case CLI_POSITIONAL:
			if (path != NULL)
				return cli_usage_error(cmd, "unexpected argument '%s'", p.value);
			path = p.value;
			break;
		case OPT_JSON:
			json = true;
			break;
		}
	}
	if (path == NULL)
		return cli_usage_error(cmd, "a Parquet file is required");

	parquet_file f;
	if (open_parquet(path, &f) < 0)
		return CLI_EXIT_FAILURE;
	if (json) {
		tl_buf out;
		tl_buf_init(&out);
		schema_json(path, f.reader, &out);
		cli_write_out(&out);
		tl_buf_free(&out);
	} else
		schema_text(path, f.reader, stdout);
	close_parquet(&f);
	return cli_finish_output();
}

/* ================================================================ dispatch */

static void describe_parquet(FILE *out)
{
	fputs("Looks inside Parquet files.\n", out);
}

static const cli_command schema_command = {"schema", "print the columns, row groups and statistics", cmd_schema};
static const cli_command cat_command = {"cat", "print rows as JSON, one object per line", cmd_cat};
static const cli_command *const parquet_commands[] = {&schema_command, &cat_command};

static int run_parquet(int argc, char **argv)
{
	return cli_dispatch("tierdb parquet", describe_parquet, parquet_commands, 2, argc, argv);
}

const cli_command cli_parquet_command = {"parquet", "inspect Parquet files (schema, cat)", run_parquet};
