/*
 * pqgen.c: writes a Parquet file through TierDB's writer from JSON input,
 * so tests can make files with any schema, values, codec and page layout.
 *
 *   pqgen --schema SCHEMA.json --rows ROWS.jsonl --out FILE.parquet
 *         [--codec none|snappy|gzip|zstd|lz4_raw] [--level N]
 *         [--no-dictionary] [--dictionary-bytes N]
 *         [--page-bytes N] [--page-rows N]
 *         [--row-group-rows N] [--row-group-bytes N]
 *         [--crc | --no-crc] [--kv KEY=VALUE]... [--batch-rows N]
 *         [--no-page-index] [--bloom COLUMN]... [--bloom-fpp P]
 *
 * SCHEMA.json is a JSON array of columns, in file order:
 *
 *   [{"name": "id", "type": "int64", "required": true, "field_id": 1},
 *    {"name": "price", "type": "decimal(10,2)"}]
 *
 *   name       the column name (required)
 *   type       one of the types below (required)
 *   required   true for a REQUIRED column; default false (OPTIONAL)
 *   field_id   the Iceberg field id; default none
 *
 *   type                  Parquet physical and logical type
 *   boolean               BOOLEAN
 *   int8, int16, int32    INT32, INT(bits, signed)
 *   int64                 INT64, INT(64, signed)
 *   uint8, uint16, uint32 INT32, INT(bits, unsigned)
 *   uint64                INT64, INT(64, unsigned)
 *   float, double         FLOAT, DOUBLE
 *   string, json, enum    BYTE_ARRAY STRING, JSON, ENUM
 *   binary                BYTE_ARRAY
 *   fixed[N]              FIXED_LEN_BYTE_ARRAY(N)
 *   date                  INT32 DATE
 *   timestamp             INT64 TIMESTAMP(MICROS, not UTC-adjusted)
 *   timestamptz           INT64 TIMESTAMP(MICROS, UTC-adjusted)
 *   timestamp_ms          INT64 TIMESTAMP(MILLIS, not UTC-adjusted)
 *   timestamp_ns          INT64 TIMESTAMP(NANOS, not UTC-adjusted)
 *   time                  INT64 TIME(MICROS)
 *   time_ms               INT32 TIME(MILLIS)
 *   decimal(P,S)          DECIMAL(P,S) on INT32 (P <= 9), INT64 (P <= 18),
 *                         else the narrowest FIXED_LEN_BYTE_ARRAY
 *   decimal(P,S,fixed)    DECIMAL(P,S) on the narrowest FIXED_LEN_BYTE_ARRAY
 *   uuid                  FIXED_LEN_BYTE_ARRAY(16) UUID
 *
 * ROWS.jsonl ("-" for standard input) holds one JSON object per line,
 * keyed by column name; a missing key is a null, a key naming no column is
 * an error, blank lines are skipped. Values are written as
 * `tierdb parquet cat` prints them (see tierlake/render.h), plus plain
 * JSON numbers for float, double and decimal columns. Rows are written in
 * batches of --batch-rows (default 4096), so large inputs stream.
 *
 * Any error (a bad option, schema or value, a null in a required column)
 * exits 1 with a message naming the line and column, and removes the
 * partly written output.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "tierlake/parquet.h"
#include "tierlake/render.h"
#include "common/render_json.h"

static void usage(FILE *out)
{
	fputs("Usage: pqgen --schema SCHEMA.json --rows ROWS.jsonl --out FILE.parquet\n"
	      "             [--codec none|snappy|gzip|zstd|lz4_raw] [--level N]\n"
	      "             [--no-dictionary] [--dictionary-bytes N] [--page-bytes N] [--page-rows N]\n"
	      "             [--row-group-rows N] [--row-group-bytes N] [--crc | --no-crc]\n"
	      "             [--kv KEY=VALUE]... [--batch-rows N]\n"
	      "             [--no-page-index] [--bloom COLUMN]... [--bloom-fpp P]\n"
	      "\n"
	      "Writes the rows of ROWS.jsonl (one JSON object per line, values as\n"
	      "`tierdb parquet cat` prints them) to a Parquet file with the columns of\n"
	      "SCHEMA.json. The schema format is described at the top of pqgen.c.\n",
	      out);
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;
	fputs("pqgen: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

/* ---------------------------------------------------------------- schema */

/* The fewest bytes whose two's complement holds every P-digit number. */
static int32_t decimal_width(int precision)
{
	/* 10^P - 1 < 2^(8w - 1): compare digit counts with log10(2) = 0.30103. */
	int32_t w = 1;
	while ((double)(8 * w - 1) * 0.30102999566398120 < (double)precision)
		w++;
	return w;
}

static const struct simple_type {
	const char *name;
	tl_pq_physical physical;
	tl_pq_logical logical;
	int bits;        /* INT */
	bool is_signed;  /* INT */
	tl_pq_time_unit unit;
	bool utc;
} simple_types[] = {
	{"boolean", TL_PQ_BOOLEAN, TL_PQ_LOGICAL_NONE, 0, false, 0, false},
	{"int8", TL_PQ_INT32, TL_PQ_LOGICAL_INT, 8, true, 0, false},
	{"int16", TL_PQ_INT32, TL_PQ_LOGICAL_INT, 16, true, 0, false},
	{"int32", TL_PQ_INT32, TL_PQ_LOGICAL_INT, 32, true, 0, false},
	{"int64", TL_PQ_INT64, TL_PQ_LOGICAL_INT, 64, true, 0, false},
	{"uint8", TL_PQ_INT32, TL_PQ_LOGICAL_INT, 8, false, 0, false},
	{"uint16", TL_PQ_INT32, TL_PQ_LOGICAL_INT, 16, false, 0, false},
	{"uint32", TL_PQ_INT32, TL_PQ_LOGICAL_INT, 32, false, 0, false},
	{"uint64", TL_PQ_INT64, TL_PQ_LOGICAL_INT, 64, false, 0, false},
	{"float", TL_PQ_FLOAT, TL_PQ_LOGICAL_NONE, 0, false, 0, false},
	{"double", TL_PQ_DOUBLE, TL_PQ_LOGICAL_NONE, 0, false, 0, false},
	{"string", TL_PQ_BYTE_ARRAY, TL_PQ_LOGICAL_STRING, 0, false, 0, false},
	{"json", TL_PQ_BYTE_ARRAY, TL_PQ_LOGICAL_JSON, 0, false, 0, false},
	{"enum", TL_PQ_BYTE_ARRAY, TL_PQ_LOGICAL_ENUM, 0, false, 0, false},
	{"binary", TL_PQ_BYTE_ARRAY, TL_PQ_LOGICAL_NONE, 0, false, 0, false},
	{"date", TL_PQ_INT32, TL_PQ_LOGICAL_DATE, 0, false, 0, false},
	{"timestamp", TL_PQ_INT64, TL_PQ_LOGICAL_TIMESTAMP, 0, false, TL_PQ_MICROS, false},
	{"timestamptz", TL_PQ_INT64, TL_PQ_LOGICAL_TIMESTAMP, 0, false, TL_PQ_MICROS, true},
	{"timestamp_ms", TL_PQ_INT64, TL_PQ_LOGICAL_TIMESTAMP, 0, false, TL_PQ_MILLIS, false},
	{"timestamp_ns", TL_PQ_INT64, TL_PQ_LOGICAL_TIMESTAMP, 0, false, TL_PQ_NANOS, false},
	{"time", TL_PQ_INT64, TL_PQ_LOGICAL_TIME, 0, false, TL_PQ_MICROS, false},
	{"time_ms", TL_PQ_INT32, TL_PQ_LOGICAL_TIME, 0, false, TL_PQ_MILLIS, false},
};

/* Fills col's type from a type name; 0, or -1 with a message in why. */
static int parse_type(const char *type, tl_pq_column *col, char *why, size_t whylen)
{
	for (size_t i = 0; i < sizeof(simple_types) / sizeof(simple_types[0]); i++) {
		const struct simple_type *t = &simple_types[i];
		if (strcmp(type, t->name) == 0) {
			col->physical = t->physical;
			col->logical = t->logical;
			col->int_bit_width = t->bits;
			col->int_signed = t->is_signed;
			col->unit = t->unit;
			col->utc_adjusted = t->utc;
			return 0;
		}
	}
	if (strcmp(type, "uuid") == 0) {
		col->physical = TL_PQ_FIXED_LEN_BYTE_ARRAY;
		col->type_length = 16;
		col->logical = TL_PQ_LOGICAL_UUID;
		return 0;
	}
	int n = 0, width = 0, precision = 0, scale = 0;
	if (sscanf(type, "fixed[%d]%n", &width, &n) == 1 && type[n] == '\0') {
		if (width < 1) {
			snprintf(why, whylen, "fixed[N] needs N >= 1");
			return -1;
		}
		col->physical = TL_PQ_FIXED_LEN_BYTE_ARRAY;
		col->type_length = width;
		return 0;
	}
	bool fixed = false;
	n = 0;
	if (sscanf(type, "decimal(%d,%d)%n", &precision, &scale, &n) == 2 && n > 0 && type[n] == '\0')
		fixed = false;
	else if ((n = 0, sscanf(type, "decimal(%d,%d,fixed)%n", &precision, &scale, &n)) == 2 && n > 0 &&
	         type[n] == '\0')
		fixed = true;
	else {
		snprintf(why, whylen,
		         "unknown type \"%s\" (expected boolean, int8..int64, uint8..uint64, float, double, string, "
		         "json, enum, binary, fixed[N], date, timestamp, timestamptz, timestamp_ms, timestamp_ns, "
		         "time, time_ms, decimal(P,S), decimal(P,S,fixed) or uuid)",
		         type);
		return -1;
	}
	if (precision < 1 || scale < 0 || scale > precision) {
		snprintf(why, whylen, "%s needs 1 <= P and 0 <= S <= P", type);
		return -1;
	}
	col->logical = TL_PQ_LOGICAL_DECIMAL;
	col->precision = precision;
	col->scale = scale;
	if (!fixed && precision <= 9)
		col->physical = TL_PQ_INT32;
	else if (!fixed && precision <= 18)
		col->physical = TL_PQ_INT64;
	else {
		col->physical = TL_PQ_FIXED_LEN_BYTE_ARRAY;
		col->type_length = decimal_width(precision);
	}
	return 0;
}

static tl_pq_schema *load_schema(const char *path)
{
	json_error_t jerr;
	json_t *root = json_load_file(path, 0, &jerr);
	if (root == NULL) {
		if (jerr.line > 0)
			fail("%s: line %d: %s", path, jerr.line, jerr.text);
		else
			fail("%s", jerr.text);
		return NULL;
	}
	if (!json_is_array(root) || json_array_size(root) == 0) {
		fail("%s: expected a non-empty JSON array of columns", path);
		json_decref(root);
		return NULL;
	}
	tl_pq_schema *schema = tl_pq_schema_new();
	size_t i;
	json_t *entry;
	json_array_foreach(root, i, entry) {
		char why[512] = "";
		json_t *name = json_object_get(entry, "name");
		json_t *type = json_object_get(entry, "type");
		json_t *required = json_object_get(entry, "required");
		json_t *field_id = json_object_get(entry, "field_id");
		tl_pq_column col = {.field_id = -1};
		const char *key;
		json_t *value;
		if (!json_is_object(entry))
			snprintf(why, sizeof(why), "expected an object");
		else if (!json_is_string(name) || json_string_length(name) == 0)
			snprintf(why, sizeof(why), "\"name\" must be a non-empty string");
		else if (!json_is_string(type))
			snprintf(why, sizeof(why), "\"type\" must be a string");
		else if (required && !json_is_boolean(required))
			snprintf(why, sizeof(why), "\"required\" must be true or false");
		else if (field_id && (!json_is_integer(field_id) || json_integer_value(field_id) < 0 ||
		                      json_integer_value(field_id) > INT32_MAX))
			snprintf(why, sizeof(why), "\"field_id\" must be a non-negative 32-bit integer");
		else if (tl_pq_schema_find(schema, json_string_value(name)) >= 0)
			snprintf(why, sizeof(why), "column \"%s\" appears twice", json_string_value(name));
		else
			json_object_foreach(entry, key, value) {
				if (strcmp(key, "name") && strcmp(key, "type") && strcmp(key, "required") &&
				    strcmp(key, "field_id")) {
					snprintf(why, sizeof(why), "unknown key \"%s\"", key);
					break;
				}
			}
		if (why[0] == '\0')
			parse_type(json_string_value(type), &col, why, sizeof(why));
		if (why[0] != '\0') {
			fail("%s: column %zu%s%s%s: %s", path, i, json_is_string(name) ? " (\"" : "",
			     json_is_string(name) ? json_string_value(name) : "", json_is_string(name) ? "\")" : "", why);
			tl_pq_schema_free(schema);
			json_decref(root);
			return NULL;
		}
		col.name = (char *)json_string_value(name);
		col.required = json_is_true(required);
		if (field_id)
			col.field_id = (int32_t)json_integer_value(field_id);
		tl_pq_schema_add(schema, &col);
	}
	json_decref(root);

	tl_error err;
	tl_error_clear(&err);
	if (tl_pq_schema_validate(schema, &err) < 0) {
		fail("%s: %s", path, err.message);
		tl_pq_schema_free(schema);
		return NULL;
	}
	return schema;
}

/* ---------------------------------------------------------------- options */

typedef struct pqgen_args {
	const char *schema_path;
	const char *rows_path;
	const char *out_path;
	int64_t batch_rows;
	tl_pq_writer_options opts;
	tl_pq_kv *kv;
	int nkv;
	const char *bloom[64];    /* columns to give bloom filters, by name */
	int nbloom;
} pqgen_args;

static int parse_number(const char *option, const char *text, int64_t min, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (text[0] == '\0' || *end != '\0' || errno == ERANGE || v < min) {
		fail("%s needs an integer of at least %lld, not '%s'", option, (long long)min, text);
		return -1;
	}
	*out = v;
	return 0;
}

/* 0 to go on, or the exit status (0 after --help). */
static int parse_args(int argc, char **argv, pqgen_args *a, bool *done)
{
	*done = false;
	a->batch_rows = 4096;
	tl_pq_writer_options_init(&a->opts);
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *value = NULL;
		char name[64];
		const char *eq = strchr(arg, '=');
		if (strncmp(arg, "--", 2) != 0 || (eq && (size_t)(eq - arg) >= sizeof(name))) {
			usage(stderr);
			return fail("unexpected argument '%s'", arg);
		}
		if (eq) {
			memcpy(name, arg, (size_t)(eq - arg));
			name[eq - arg] = '\0';
			value = eq + 1;
		} else
			snprintf(name, sizeof(name), "%s", arg);

		static const char *const flags[] = {"--help", "--no-dictionary", "--crc", "--no-crc", "--no-page-index"};
		bool is_flag = false;
		for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++)
			is_flag |= strcmp(name, flags[k]) == 0;
		if (is_flag && value)
			return fail("%s takes no value", name);
		if (!is_flag && !value) {
			if (i + 1 >= argc)
				return fail("%s needs a value", name);
			value = argv[++i];
		}

		int64_t n = 0;
		if (strcmp(name, "--help") == 0) {
			usage(stdout);
			*done = true;
			return 0;
		} else if (strcmp(name, "--no-dictionary") == 0)
			a->opts.dictionary = false;
		else if (strcmp(name, "--no-page-index") == 0)
			a->opts.write_page_index = false;
		else if (strcmp(name, "--bloom") == 0) {
			if (a->nbloom == 64)
				return fail("at most 64 --bloom columns");
			a->bloom[a->nbloom++] = value;
		} else if (strcmp(name, "--bloom-fpp") == 0) {
			char *end;
			a->opts.bloom_fpp = strtod(value, &end);
			if (*end != '\0')
				return fail("--bloom-fpp needs a number, not '%s'", value);
		}
		else if (strcmp(name, "--crc") == 0 || strcmp(name, "--no-crc") == 0)
			a->opts.write_page_crc = strcmp(name, "--crc") == 0; /* the writer's default is on */
		else if (strcmp(name, "--schema") == 0)
			a->schema_path = value;
		else if (strcmp(name, "--rows") == 0)
			a->rows_path = value;
		else if (strcmp(name, "--out") == 0)
			a->out_path = value;
		else if (strcmp(name, "--codec") == 0) {
			int codec = tl_pq_codec_from_name(value);
			if (codec < 0)
				return fail("unknown codec '%s' (expected none, snappy, gzip, zstd or lz4_raw)", value);
			a->opts.codec = (tl_pq_codec)codec;
		} else if (strcmp(name, "--level") == 0) {
			if (parse_number(name, value, INT32_MIN, &n) < 0 || n > INT32_MAX)
				return fail("--level is out of range");
			a->opts.compression_level = (int)n;
		} else if (strcmp(name, "--dictionary-bytes") == 0) {
			if (parse_number(name, value, 0, &a->opts.dictionary_bytes) < 0)
				return 1;
		} else if (strcmp(name, "--page-bytes") == 0) {
			if (parse_number(name, value, 1, &a->opts.page_bytes) < 0)
				return 1;
		} else if (strcmp(name, "--page-rows") == 0) {
			if (parse_number(name, value, 1, &a->opts.page_rows) < 0)
				return 1;
		} else if (strcmp(name, "--row-group-rows") == 0) {
			if (parse_number(name, value, 1, &a->opts.row_group_rows) < 0)
				return 1;
		} else if (strcmp(name, "--row-group-bytes") == 0) {
			if (parse_number(name, value, 1, &a->opts.row_group_bytes) < 0)
				return 1;
		} else if (strcmp(name, "--batch-rows") == 0) {
			if (parse_number(name, value, 1, &a->batch_rows) < 0)
				return 1;
			if (a->batch_rows > (1 << 24))
				return fail("--batch-rows must be at most %d", 1 << 24);
		} else if (strcmp(name, "--kv") == 0) {
			const char *sep = strchr(value, '=');
			if (sep == NULL || sep == value)
				return fail("--kv needs KEY=VALUE, not '%s'", value);
			a->kv = realloc(a->kv, (size_t)(a->nkv + 1) * sizeof(tl_pq_kv));
			if (a->kv == NULL)
				return fail("out of memory");
			char *key = strndup(value, (size_t)(sep - value));
			a->kv[a->nkv].key = key;
			a->kv[a->nkv].value = sep + 1;
			a->nkv++;
		} else {
			usage(stderr);
			return fail("unknown option '%s'", name);
		}
	}
	if (!a->schema_path || !a->rows_path || !a->out_path) {
		usage(stderr);
		return fail("--schema, --rows and --out are required");
	}
	a->opts.metadata = a->kv;
	a->opts.nmetadata = a->nkv;
	return 0;
}

/* ---------------------------------------------------------------- writing */

/* Reads the rows file line by line into batches and writes them. */
static int write_rows(const pqgen_args *a, const tl_pq_schema *schema, tl_pq_writer *w, FILE *rows)
{
	tl_pq_batch *batch = tl_pq_batch_new(schema, a->batch_rows);
	tl_error err;
	tl_error_clear(&err);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int64_t lineno = 0;
	int status = 0;

	batch->nrows = 0;
	while ((len = getline(&line, &cap, rows)) >= 0) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			len--;
		bool blank = true;
		for (ssize_t i = 0; i < len && blank; i++)
			blank = line[i] == ' ' || line[i] == '\t';
		if (blank)
			continue;
		json_t *row = tl_render_load_json(line, (size_t)len, &err);
		if (row == NULL || tl_render_parse_row(schema, row, batch, batch->nrows, &err) < 0) {
			json_decref(row);
			status = fail("%s: line %lld: %s", a->rows_path, (long long)lineno, err.message);
			break;
		}
		json_decref(row);
		if (++batch->nrows == batch->capacity) {
			if (tl_pq_writer_write(w, batch, &err) < 0) {
				status = fail("%s: writing rows before line %lld: %s", a->out_path, (long long)lineno + 1,
				              err.message);
				break;
			}
			batch->nrows = 0;
			tl_arena_reset(&batch->arena);
		}
	}
	if (status == 0 && ferror(rows))
		status = fail("%s: read failed: %s", a->rows_path, strerror(errno));
	if (status == 0 && batch->nrows > 0 && tl_pq_writer_write(w, batch, &err) < 0)
		status = fail("%s: %s", a->out_path, err.message);
	free(line);
	tl_pq_batch_free(batch);
	return status;
}

int main(int argc, char **argv)
{
	pqgen_args a;
	memset(&a, 0, sizeof(a));
	bool done;
	int status = parse_args(argc, argv, &a, &done);
	if (status != 0 || done)
		return status;

	tl_pq_schema *schema = load_schema(a.schema_path);
	if (schema == NULL)
		return 1;
	int bloom_columns[64];
	for (int i = 0; i < a.nbloom; i++) {
		bloom_columns[i] = tl_pq_schema_find(schema, a.bloom[i]);
		if (bloom_columns[i] < 0) {
			tl_pq_schema_free(schema);
			return fail("--bloom %s: no such column", a.bloom[i]);
		}
	}
	a.opts.bloom_columns = bloom_columns;
	a.opts.nbloom_columns = a.nbloom;

	FILE *rows = strcmp(a.rows_path, "-") == 0 ? stdin : fopen(a.rows_path, "r");
	if (rows == NULL) {
		tl_pq_schema_free(schema);
		return fail("%s: cannot open: %s", a.rows_path, strerror(errno));
	}

	tl_error err;
	tl_error_clear(&err);
	tl_output *out = tl_output_create_file(a.out_path, 0, &err);
	tl_pq_writer *w = out ? tl_pq_writer_open(out, schema, &a.opts, &err) : NULL;
	if (w == NULL)
		status = fail("%s", err.message);
	else {
		status = write_rows(&a, schema, w, rows);
		if (status == 0 && tl_pq_writer_close(w, &err) < 0)
			status = fail("%s: %s", a.out_path, err.message);
		if (status == 0 && out->finish(out, &err) < 0)
			status = fail("%s: %s", a.out_path, err.message);
	}
	tl_pq_writer_free(w);
	tl_output_close(out);
	if (status != 0 && out != NULL)
		unlink(a.out_path);
	if (rows != stdin)
		fclose(rows);
	tl_pq_schema_free(schema);
	for (int i = 0; i < a.nkv; i++)
		free((char *)a.kv[i].key);
	free(a.kv);
	return status;
}
