/*
 * maintenance_policy.c: the keys of a table's maintenance policy, their
 * defaults and the parsing of their values (maintenance_policy.h).
 *
 * One table describes every key: its kind of value, where it lands in
 * tdb_maintenance_policy and its built-in default. Sizes take B, KB, MB,
 * GB (powers of 1024, as Iceberg's byte properties mean them) and
 * durations s, m, h, d, so a policy reads like the docs that explain it.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maintenance_policy.h"
#include "tierlake/buf.h"

typedef enum { KIND_BOOL, KIND_BYTES, KIND_COUNT, KIND_RATIO, KIND_DURATION, KIND_COLUMNS, KIND_FPP } value_kind;

typedef struct policy_key {
	const char *name;
	value_kind kind;
	size_t offset;            /* into tdb_maintenance_policy (KIND_COLUMNS: none, see bloom_columns) */
	const char *dflt;         /* NULL: computed (small_file_bytes) */
	bool table_only;          /* no TIERDB_MAINTENANCE_<KEY> default: the value names one table's columns */
} policy_key;

#define AT(field) offsetof(tdb_maintenance_policy, field)

static const policy_key keys[] = {
	{"compaction", KIND_BOOL, AT(compaction), "on", false},
	{"target_file_bytes", KIND_BYTES, AT(target_file_bytes), "512MB", false},
	/* Java's RewriteDataFiles: min-file-size-bytes defaults to 75% of the target */
	{"small_file_bytes", KIND_BYTES, AT(small_file_bytes), NULL, false},
	{"min_input_files", KIND_COUNT, AT(min_input_files), "5", false},
	{"delete_ratio", KIND_RATIO, AT(delete_ratio), "0.1", false},
	{"manifest_rewrite", KIND_BOOL, AT(manifest_rewrite), "on", false},
	{"max_manifests", KIND_COUNT, AT(max_manifests), "100", false},
	{"manifest_target_bytes", KIND_BYTES, AT(manifest_target_bytes), "8MB", false},
	{"expiry", KIND_BOOL, AT(expiry), "on", false},
	/* Java's history.expire.max-snapshot-age-ms and min-snapshots-to-keep */
	{"snapshot_max_age", KIND_DURATION, AT(snapshot_max_age_ms), "5d", false},
	{"min_snapshots", KIND_COUNT, AT(min_snapshots), "1", false},
	{"orphan_sweep", KIND_BOOL, AT(orphan_sweep), "off", false},
	/* Java's DeleteOrphanFiles: older than 3 days */
	{"orphan_min_age", KIND_DURATION, AT(orphan_min_age_ms), "3d", false},
	{"interval", KIND_DURATION, AT(interval_ms), "1h", false},
	{"warn_small_files", KIND_COUNT, AT(warn_small_files), "100", false},
	{"warn_delete_ratio", KIND_RATIO, AT(warn_delete_ratio), "0.2", false},
	{"warn_snapshots", KIND_COUNT, AT(warn_snapshots), "1000", false},
	/* besides the primary key's, which every data file has */
	{"bloom_columns", KIND_COLUMNS, 0, "none", true},
	/* the Parquet writer's default (tl_pq_writer_options_init), parquet-mr's too */
	{"bloom_fpp", KIND_FPP, AT(bloom_fpp), "0.01", false},
};

#define NKEYS ((int)(sizeof(keys) / sizeof(keys[0])))

static const policy_key *find_key(const char *name)
{
	for (int i = 0; i < NKEYS; i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

bool tdb_maintenance_policy_is_key(const char *key)
{
	return find_key(key) != NULL;
}

/* A number with an optional unit from `units` (name, multiplier), the unit matched case-insensitively. */
typedef struct unit {
	const char *name;
	int64_t factor;
} unit;

static const unit byte_units[] = {{"", 1},           {"b", 1},
                                  {"kb", 1 << 10},   {"mb", 1 << 20},
                                  {"gb", INT64_C(1) << 30}, {"tb", INT64_C(1) << 40},
                                  {NULL, 0}};
static const unit duration_units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000},
                                      {NULL, 0}};

static bool parse_with_unit(const char *text, const unit *units, int64_t *out)
{
	errno = 0;
	char *end;
	long long n = strtoll(text, &end, 10);
	if (end == text || errno != 0 || n < 0)
		return false;
	while (*end == ' ')
		end++;
	for (const unit *u = units; u->name != NULL; u++) {
		if (strcasecmp(end, u->name) == 0)
			return !__builtin_mul_overflow((int64_t)n, u->factor, out);
	}
	return false;
}

static bool parse_bool(const char *text, bool *out)
{
	static const char *const yes[] = {"on", "true", "yes", "1"}, *const no[] = {"off", "false", "no", "0"};
	for (int i = 0; i < 4; i++) {
		if (strcasecmp(text, yes[i]) == 0)
			return (*out = true), true;
		if (strcasecmp(text, no[i]) == 0)
			return (*out = false), true;
	}
	return false;
}

static const char *kind_help(value_kind kind)
{
	switch (kind) {
	case KIND_BOOL: return "on or off";
	case KIND_BYTES: return "a size such as 512MB (B, KB, MB, GB, TB)";
	case KIND_COUNT: return "a whole number, at least 1";
	case KIND_RATIO: return "a fraction between 0 and 1";
	case KIND_DURATION: return "a duration such as 90s, 15m, 12h or 5d (0 for none)";
	case KIND_COLUMNS: return "'none' or column names separated by commas, each once, at most 32";
	case KIND_FPP: return "a probability from 0.0001 to 0.5";
	}
	return "?";
}

/*
 * Splits a bloom_columns value into names (spaces around each trimmed);
 * "none" (any case) or an empty value is none. False for an empty name, a
 * name longer than Postgres allows (63 bytes), one given twice, or more
 * than TDB_MAX_BLOOM_COLUMNS; names (may be NULL: only check) then holds
 * nothing.
 */
static bool split_columns(const char *text, char ***names, int *n)
{
	char **out = NULL;
	int count = 0;
	bool ok = true;
	const char *s = text;
	while (*s == ' ')
		s++;
	if (*s == '\0' || strcasecmp(s, "none") == 0)
		s = NULL;
	while (ok && s != NULL) {
		const char *comma = strchr(s, ',');
		const char *end = comma != NULL ? comma : s + strlen(s);
		while (*s == ' ')
			s++;
		while (end > s && end[-1] == ' ')
			end--;
		size_t len = (size_t)(end - s);
		ok = len > 0 && len <= 63 && count < TDB_MAX_BLOOM_COLUMNS;
		for (int i = 0; ok && i < count; i++)
			ok = strlen(out[i]) != len || strncmp(out[i], s, len) != 0;
		if (ok) {
			char **grown = realloc(out, sizeof(char *) * (size_t)(count + 1));
			char *name = grown != NULL ? strndup(s, len) : NULL;
			if (grown != NULL)
				out = grown;
			ok = name != NULL;
			if (ok)
				out[count++] = name;
		}
		s = comma != NULL ? comma + 1 : NULL;
	}
	if (!ok || names == NULL) {
		tdb_maintenance_policy_names_free(out, count);
		out = NULL;
		count = 0;
	}
	if (names != NULL) {
		*names = out;
		*n = count;
	}
	return ok;
}

void tdb_maintenance_policy_names_free(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* Parses text as k's value into the policy (NULL: only check it). */
static bool parse_value(const policy_key *k, const char *text, tdb_maintenance_policy *p)
{
	void *field = p != NULL ? (char *)p + k->offset : NULL;
	switch (k->kind) {
	case KIND_BOOL: {
		bool b;
		if (!parse_bool(text, &b))
			return false;
		if (field)
			*(bool *)field = b;
		return true;
	}
	case KIND_BYTES:
	case KIND_DURATION: {
		int64_t v;
		if (!parse_with_unit(text, k->kind == KIND_BYTES ? byte_units : duration_units, &v) ||
		    (k->kind == KIND_BYTES && v < 1))
			return false;
		if (field)
			*(int64_t *)field = v;
		return true;
	}
	case KIND_COUNT: {
		errno = 0;
		char *end;
		long long v = strtoll(text, &end, 10);
		if (end == text || *end != '\0' || errno != 0 || v < 1)
			return false;
		if (field)
			*(int64_t *)field = v;
		return true;
	}
	case KIND_RATIO: {
		errno = 0;
		char *end;
		double v = strtod(text, &end);
		if (end == text || *end != '\0' || errno != 0 || !(v >= 0.0 && v <= 1.0))
			return false;
		if (field)
			*(double *)field = v;
		return true;
	}
	case KIND_FPP: {
		errno = 0;
		char *end;
		double v = strtod(text, &end);
		if (end == text || *end != '\0' || errno != 0 || !(v >= TDB_BLOOM_FPP_MIN && v <= TDB_BLOOM_FPP_MAX))
			return false;
		if (field)
			*(double *)field = v;
		return true;
	}
	case KIND_COLUMNS:
		return split_columns(text, NULL, NULL);
	}
	return false;
}

/* TIERDB_MAINTENANCE_<KEY> for a key, in `buf`. */
static const char *env_name(const policy_key *k, char *buf, size_t size)
{
	int n = snprintf(buf, size, "TIERDB_MAINTENANCE_");
	for (const char *s = k->name; *s && (size_t)n + 1 < size; s++)
		buf[n++] = (char)toupper((unsigned char)*s);
	buf[n] = '\0';
	return buf;
}

/* Where key k's value comes from, and its text. */
static const char *value_of(const policy_key *k, const json_t *stored, bool with_env, const char **source)
{
	const char *text = json_string_value(json_object_get(stored, k->name));
	if (text != NULL) {
		*source = "table";
		return text;
	}
	char name[64];
	text = with_env && !k->table_only ? getenv(env_name(k, name, sizeof(name))) : NULL;
	if (text != NULL && *text != '\0') {
		*source = "env";
		return text;
	}
	*source = "default";
	return k->dflt;
}

int tdb_maintenance_policy_resolve(const json_t *stored, bool with_env, tdb_maintenance_policy *out, tl_error *err)
{
	memset(out, 0, sizeof(*out));
	bool small_set = false;
	for (int i = 0; i < NKEYS; i++) {
		const char *source;
		const char *text = value_of(&keys[i], stored, with_env, &source);
		if (text == NULL)
			continue; /* computed below */
		if (!parse_value(&keys[i], text, out)) {
			char name[64];
			return tl_error_set(err, TL_ERR_INVALID, "maintenance policy: %s = '%s' (from %s) is not %s",
			                    strcmp(source, "env") == 0 ? env_name(&keys[i], name, sizeof(name)) : keys[i].name,
			                    text, strcmp(source, "table") == 0 ? "tables.maintenance_policy" : source,
			                    kind_help(keys[i].kind));
		}
		if (keys[i].offset == AT(small_file_bytes))
			small_set = true;
	}
	if (!small_set)
		out->small_file_bytes = out->target_file_bytes / 4 * 3;
	return 0;
}

int tdb_maintenance_policy_bloom_columns(const json_t *stored, char ***names, int *n, tl_error *err)
{
	const policy_key *k = find_key("bloom_columns");
	const char *source;
	const char *text = value_of(k, stored, false, &source);
	if (!split_columns(text, names, n))
		return tl_error_set(err, TL_ERR_INVALID, "maintenance policy: bloom_columns = '%s' (from %s) is not %s", text,
		                    strcmp(source, "table") == 0 ? "tables.maintenance_policy" : source, kind_help(k->kind));
	return 0;
}

int tdb_maintenance_policy_parse_assignment(const char *assignment, char **key, char **value, tl_error *err)
{
	const char *eq = strchr(assignment, '=');
	if (eq == NULL || eq == assignment)
		return tl_error_set(err, TL_ERR_INVALID, "'%s' is not key=value", assignment);
	char *k = strndup(assignment, (size_t)(eq - assignment));
	const policy_key *pk = find_key(k);
	if (pk == NULL) {
		tl_buf names;
		tl_buf_init(&names);
		for (int i = 0; i < NKEYS; i++)
			tl_buf_printf(&names, "%s%s", i ? ", " : "", keys[i].name);
		tl_buf_append(&names, "", 1);
		tl_error_set(err, TL_ERR_INVALID, "unknown policy key '%s'; the keys are %s", k, (const char *)names.data);
		tl_buf_free(&names);
		free(k);
		return -1;
	}
	if (!parse_value(pk, eq + 1, NULL)) {
		tl_error_set(err, TL_ERR_INVALID, "%s = '%s' is not %s", k, eq + 1, kind_help(pk->kind));
		free(k);
		return -1;
	}
	*key = k;
	*value = strdup(eq + 1);
	return 0;
}

json_t *tdb_maintenance_policy_describe(const json_t *stored, bool with_env)
{
	json_t *out = json_object();
	for (int i = 0; i < NKEYS; i++) {
		const char *source;
		const char *text = value_of(&keys[i], stored, with_env, &source);
		json_object_set_new(out, keys[i].name,
		                    json_pack("{s:s, s:s}", "value", text != NULL ? text : "75% of target_file_bytes",
		                              "source", source));
	}
	return out;
}
