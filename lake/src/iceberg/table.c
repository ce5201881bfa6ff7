/*
 * table.c: path-based Iceberg tables: creating one, finding and reading its
 * current metadata file, and publishing new metadata versions for commits.
 *
 * The layout is the Hadoop catalog's (SPEC §6): metadata/v<N>.metadata.json
 * per version and metadata/version-hint.text naming the newest N. Finding
 * the current version follows Java's HadoopTableOperations: start at the
 * hint and walk forward while v<N+1> exists (a writer that crashed between
 * publishing a version and updating the hint leaves the hint behind), and
 * list the directory when the hint is missing or names nothing. Tables
 * written by other catalogs (<N>-<uuid>.metadata.json) are found by listing.
 * Every file operation goes through the location's tl_storage (storage.h);
 * publishing a version is its create_if_absent, the commit primitive.
 */
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/iceberg_table.h"
#include "tierlake/storage.h"
#include "iceberg/rest_internal.h"
#include "iceberg/table_internal.h"

/* The version hint holds a small number; anything longer is not one. */
#define VERSION_HINT_MAX 64
/* Metadata JSON larger than this is refused rather than read into memory. */
#define METADATA_FILE_MAX ((uint64_t)1 << 30)

static const char METADATA_SUFFIX[] = ".metadata.json";

/* The public struct plus what only this file and commit.c need. */
typedef struct table_impl {
	tl_ice_table pub;
	char *metadata_dir;   /* <root>/metadata; NULL when opened by a metadata file */
	tl_rest_table_ref *catalog;   /* the REST catalog that owns the table's commits, or NULL */
} table_impl;

/* The buffer's text, or NULL (and nothing held) when building it ran out of memory. */
static char *buf_text(tl_buf *b)
{
	if (tl_buf_failed(b)) {
		tl_buf_free(b);
		return NULL;
	}
	return (char *)b->data;
}

/* NULL when out of memory. */
static char *path_join(const char *dir, const char *name)
{
	tl_buf b;
	tl_buf_init(&b);
	tl_buf_printf(&b, "%s/%s%c", dir, name, '\0');
	return buf_text(&b);
}

/* NULL when out of memory. */
static char *versioned_path(const char *metadata_dir, int64_t version)
{
	tl_buf b;
	tl_buf_init(&b);
	tl_buf_printf(&b, "%s/v%" PRId64 "%s%c", metadata_dir, version, METADATA_SUFFIX, '\0');
	return buf_text(&b);
}

static void strip_trailing_slashes(char *s)
{
	size_t n = strlen(s);
	while (n > 1 && s[n - 1] == '/')
		s[--n] = '\0';
}

/* Reads up to 19 decimal digits at *p; -1 if there are none or too many. */
static int64_t parse_digits(const char **p)
{
	const char *s = *p;
	int64_t v = 0;
	if (!isdigit((unsigned char)*s))
		return -1;
	for (; isdigit((unsigned char)*s); s++) {
		if (v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	*p = s;
	return v;
}

/*
 * The version a metadata file name carries: "v12.metadata.json" (Hadoop
 * catalog) or "00012-<uuid>.metadata.json" (Java's and pyiceberg's other
 * catalogs). -1 for other names, including Java's in-flight temporary
 * "<uuid>.metadata.json", whose first uuid group may be all digits.
 */
static int64_t metadata_file_version(const char *name)
{
	size_t len = strlen(name), slen = strlen(METADATA_SUFFIX);
	if (len <= slen || strcmp(name + len - slen, METADATA_SUFFIX) != 0)
		return -1;
	const char *p = name[0] == 'v' ? name + 1 : name;
	int64_t version = parse_digits(&p);
	if (version < 0)
		return -1;
	if (name[0] == 'v')
		return strcmp(p, METADATA_SUFFIX) == 0 ? version : -1;
	const size_t uuid_len = 36;
	if (*p != '-' || (size_t)(name + len - slen - (p + 1)) != uuid_len)
		return -1;
	return version;
}

/*
 * The version metadata/version-hint.text names, or -1 when it is missing or
 * not a number. The hint only saves a listing, so running out of memory
 * here counts as no hint: the listing that follows reports it if it lasts.
 */
static int64_t hint_version(const char *metadata_dir)
{
	char *path = path_join(metadata_dir, "version-hint.text");
	if (path == NULL)
		return -1;
	tl_input *in = tl_storage_open_read(path, NULL);
	tl_free(path);
	if (in == NULL)
		return -1;
	char hint[VERSION_HINT_MAX + 1];
	size_t n = in->size < VERSION_HINT_MAX ? (size_t)in->size : VERSION_HINT_MAX;
	int rc = tl_input_read(in, 0, hint, n, NULL);
	tl_input_close(in);
	if (rc < 0)
		return -1;
	hint[n] = '\0';
	const char *p = hint;
	while (isspace((unsigned char)*p))
		p++;
	int64_t version = parse_digits(&p);
	while (isspace((unsigned char)*p))
		p++;
	return *p == '\0' ? version : -1;
}

/* The hinted version walked forward over versions published after the hint; -1 if unusable. */
static int64_t current_from_hint(const char *metadata_dir)
{
	int64_t version = hint_version(metadata_dir);
	if (version < 0)
		return -1;
	char *path = versioned_path(metadata_dir, version);
	bool exists = path != NULL && tl_storage_is_file(path);
	tl_free(path);
	if (!exists)
		return -1;
	for (;;) {
		path = versioned_path(metadata_dir, version + 1);
		if (path == NULL)
			return -1;
		exists = tl_storage_is_file(path);
		tl_free(path);
		if (!exists)
			return version;
		version++;
	}
}

/* The highest-numbered metadata file name in metadata_dir; NULL (err set) if none. */
static char *newest_listed(const char *table_dir, const char *metadata_dir, int64_t *version, tl_error *err)
{
	tl_storage_list list;
	tl_error why;
	tl_error_clear(&why);
	if (tl_storage_list_dir(metadata_dir, 0, &list, &why) < 0) {
		tl_error_set(err, why.code, "%s is not an Iceberg table: %s", table_dir, why.message);
		return NULL;
	}
	char *best = NULL;
	*version = -1;
	for (size_t i = 0; i < list.count; i++) {
		int64_t v = list.entries[i].is_dir ? -1 : metadata_file_version(list.entries[i].name);
		if (v > *version) {
			*version = v;
			tl_free(best);
			best = tl_strdup(list.entries[i].name);
			if (best == NULL) {
				tl_storage_list_free(&list);
				tl_error_nomem(err, "listing %s", metadata_dir);
				return NULL;
			}
		}
	}
	tl_storage_list_free(&list);
	if (best == NULL)
		tl_error_set(err, TL_ERR_NOT_FOUND, "%s is not an Iceberg table: %s has no *.metadata.json file",
		             table_dir, metadata_dir);
	return best;
}

/* The location of a table directory's current metadata file and its version; NULL with err set. */
static char *find_current_metadata(const char *table_dir, const char *metadata_dir, int64_t *version,
                                   tl_error *err)
{
	char *path;
	*version = current_from_hint(metadata_dir);
	if (*version >= 0) {
		path = versioned_path(metadata_dir, *version);
	} else {
		char *name = newest_listed(table_dir, metadata_dir, version, err);
		if (name == NULL)
			return NULL;
		path = path_join(metadata_dir, name);
		tl_free(name);
	}
	if (path == NULL)
		tl_error_nomem(err, "finding the current metadata of %s", table_dir);
	return path;
}

static tl_ice_table_metadata *read_metadata_file(const char *path, tl_error *err)
{
	tl_input *in = tl_storage_open_read(path, err);
	if (in == NULL)
		return NULL;
	tl_ice_table_metadata *md = NULL;
	if (in->size > METADATA_FILE_MAX) {
		tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: metadata file of %" PRIu64 " bytes is too large", path,
		             in->size);
	} else {
		char *text = tl_malloc((size_t)in->size + 1);
		if (text == NULL)
			tl_error_nomem(err, "reading %s", path);
		else if (tl_input_read(in, 0, text, (size_t)in->size, err) == 0) {
			md = tl_ice_metadata_parse(text, (size_t)in->size, err);
			if (md == NULL)
				tl_error_prefix(err, "%s", path);
		}
		tl_free(text);
	}
	tl_input_close(in);
	return md;
}

/* Takes md, metadata_file and metadata_dir, also when it fails (NULL, err set: out of memory). */
static tl_ice_table *new_table(tl_ice_table_metadata *md, char *metadata_file, int64_t version,
                               char *metadata_dir, tl_error *err)
{
	table_impl *impl = tl_calloc(1, sizeof(*impl));
	char *location = tl_strdup(md->location);
	if (impl == NULL || location == NULL || metadata_file == NULL) {
		tl_free(impl);
		tl_free(location);
		tl_free(metadata_file);
		tl_free(metadata_dir);
		tl_error_nomem(err, "opening table %s", md->location);
		tl_ice_metadata_free(md);
		return NULL;
	}
	impl->metadata_dir = metadata_dir;
	impl->pub.location = location;
	impl->pub.metadata_file = metadata_file;
	impl->pub.version = version;
	impl->pub.metadata = md;
	return &impl->pub;
}

/* ------------------------------------------------------------- opening */

static tl_ice_table *open_directory(const char *dir, tl_error *err)
{
	char *metadata_dir = path_join(dir, "metadata");
	if (metadata_dir == NULL) {
		tl_error_nomem(err, "opening table %s", dir);
		return NULL;
	}
	int64_t version;
	char *file = find_current_metadata(dir, metadata_dir, &version, err);
	tl_ice_table_metadata *md = file ? read_metadata_file(file, err) : NULL;
	if (md == NULL) {
		tl_free(file);
		tl_free(metadata_dir);
		return NULL;
	}
	return new_table(md, file, version, metadata_dir, err);
}

static tl_ice_table *open_metadata_file(const char *path, tl_error *err)
{
	tl_ice_table_metadata *md = read_metadata_file(path, err);
	if (md == NULL)
		return NULL;
	const char *slash = strrchr(path, '/');
	int64_t version = metadata_file_version(slash ? slash + 1 : path);
	return new_table(md, tl_strdup(path), version, NULL, err);
}

/*
 * The root the table's files are named under: a file: URI becomes its
 * local path (as recorded before storage had schemes: metadata_file stays a
 * plain path), other URIs stay whole; trailing slashes go. NULL with err
 * set when no storage serves the location.
 */
static char *table_root(const char *location, tl_error *err)
{
	if (tl_storage_for(location, err) == NULL)
		return NULL;
	bool is_file_uri = strncmp(location, "file:", 5) == 0;
	char *root = is_file_uri ? tl_local_path(location, err) : tl_strdup(location);
	if (root == NULL && !is_file_uri)
		tl_error_nomem(err, "opening table %s", location);
	if (root != NULL)
		strip_trailing_slashes(root);
	return root;
}

tl_ice_table *tl_ice_table_open(const char *location, tl_error *err)
{
	char *path = table_root(location, err);
	if (path == NULL)
		return NULL;
	tl_ice_table *t = NULL;
	bool is_dir = false;
	if (tl_storage_stat(path, NULL, &is_dir, err) < 0)
		tl_error_prefix(err, "cannot open table %s", location);
	else if (is_dir)
		t = open_directory(path, err);
	else
		t = open_metadata_file(path, err);
	tl_free(path);
	return t;
}

char *tl_ice_table_current_metadata(const char *location, int64_t *version, tl_error *err)
{
	char *root = table_root(location, err);
	if (root == NULL)
		return NULL;
	char *metadata_dir = path_join(root, "metadata");
	if (metadata_dir == NULL) {
		tl_free(root);
		tl_error_nomem(err, "finding the current metadata of %s", location);
		return NULL;
	}
	int64_t v;
	char *file = find_current_metadata(root, metadata_dir, &v, err);
	if (file != NULL && version != NULL)
		*version = v;
	tl_free(metadata_dir);
	tl_free(root);
	return file;
}

int tl_ice_table_install(tl_ice_table *t, tl_ice_table_metadata *md, int64_t version, char *path)
{
	/* A commit keeps the location, so installing its result allocates nothing and cannot fail. */
	char *location = t->location != NULL && strcmp(t->location, md->location) == 0 ? t->location
	                                                                                : tl_strdup(md->location);
	if (location == NULL)
		return -1;
	tl_ice_metadata_free(t->metadata);
	tl_free(t->metadata_file);
	if (location != t->location)
		tl_free(t->location);
	t->metadata = md;
	t->metadata_file = path;
	t->version = version;
	t->location = location;
	return 0;
}

int tl_ice_table_refresh(tl_ice_table *t, tl_error *err)
{
	table_impl *impl = (table_impl *)t;
	if (impl->catalog != NULL)
		return tl_rest_table_reload(impl->catalog, t, err);
	if (impl->metadata_dir == NULL)
		return tl_error_set(err, TL_ERR_INVALID,
		                    "table %s was opened by its metadata file %s; only a table opened by directory refreshes",
		                    t->location, t->metadata_file);
	int64_t version;
	char *file = find_current_metadata(t->location, impl->metadata_dir, &version, err);
	tl_ice_table_metadata *md = file ? read_metadata_file(file, err) : NULL;
	if (md == NULL) {
		tl_free(file);
		return -1;
	}
	if (tl_ice_table_install(t, md, version, file) < 0) {
		tl_ice_metadata_free(md);
		tl_free(file);
		return tl_error_nomem(err, "refreshing table %s", t->location);
	}
	return 0;
}

void tl_ice_table_free(tl_ice_table *t)
{
	if (t == NULL)
		return;
	table_impl *impl = (table_impl *)t;
	tl_ice_metadata_free(t->metadata);
	tl_free(t->metadata_file);
	tl_free(t->location);
	tl_free(impl->metadata_dir);
	tl_rest_table_ref_free(impl->catalog);
	tl_free(impl);
}

/* ---------------------------------------------- tables kept in a catalog */

int64_t tl_ice_table_file_version(const char *metadata_file)
{
	const char *slash = strrchr(metadata_file, '/');
	return metadata_file_version(slash ? slash + 1 : metadata_file);
}

tl_ice_table *tl_ice_table_from_catalog(tl_ice_table_metadata *md, char *metadata_file, tl_rest_table_ref *ref,
                                        tl_error *err)
{
	table_impl *impl = tl_calloc(1, sizeof(*impl));
	char *root = impl ? tl_strdup(md->location) : NULL;
	if (root != NULL)
		strip_trailing_slashes(root);
	char *metadata_dir = root ? path_join(root, "metadata") : NULL;
	char *data_dir = root ? path_join(root, "data") : NULL;
	char *location = tl_strdup(md->location);
	if (impl == NULL || metadata_dir == NULL || data_dir == NULL || location == NULL) {
		tl_error_set(err, TL_ERR_NOMEM, "out of memory opening table %s", md->location);
		goto fail;
	}
	/* Our commits write manifests under metadata/ and files under data/ (no-ops on object stores). */
	if (tl_storage_make_dirs(metadata_dir, err) < 0 || tl_storage_make_dirs(data_dir, err) < 0) {
		tl_error_prefix(err, "table %s", md->location);
		goto fail;
	}
	tl_free(root);
	tl_free(data_dir);
	impl->metadata_dir = metadata_dir;
	impl->catalog = ref;
	impl->pub.location = location;
	impl->pub.metadata_file = metadata_file;
	impl->pub.version = tl_ice_table_file_version(metadata_file);
	impl->pub.metadata = md;
	return &impl->pub;
fail:
	tl_free(impl);
	tl_free(root);
	tl_free(metadata_dir);
	tl_free(data_dir);
	tl_free(location);
	tl_free(metadata_file);
	tl_ice_metadata_free(md);
	tl_rest_table_ref_free(ref);
	return NULL;
}

tl_rest_table_ref *tl_ice_table_catalog(const tl_ice_table *t)
{
	return ((const table_impl *)t)->catalog;
}

/* ------------------------------------------------------------ creating */

/*
 * The location a new table's metadata records: as given (a file:// URI
 * stays one), but a relative path becomes absolute through the real path
 * of its (now existing) parent directory, since other engines resolve the
 * location without our working directory.
 */
static char *metadata_location(const char *given, const char *local, tl_error *err)
{
	if (strncmp(given, "file:", 5) == 0 || strstr(given, "://") != NULL || given[0] == '/') {
		char *copy = tl_strdup(given);
		if (copy == NULL)
			tl_error_nomem(err, "creating table %s", given);
		return copy;
	}
	const char *slash = strrchr(local, '/');
	const char *last = slash ? slash + 1 : local;
	char *parent = slash ? tl_strdup(local) : tl_strdup(".");
	if (parent == NULL) {
		tl_error_nomem(err, "creating table %s", given);
		return NULL;
	}
	if (slash)
		parent[slash == local ? 1 : slash - local] = '\0';
	bool whole = strcmp(last, ".") == 0 || strcmp(last, "..") == 0;
	char *real = tl_storage_canonical(whole ? local : parent, err);
	tl_free(parent);
	if (real == NULL) {
		tl_error_prefix(err, "cannot resolve table location %s", given);
		return NULL;
	}
	char *result = whole ? tl_strdup(real) : path_join(strcmp(real, "/") == 0 ? "" : real, last);
	tl_free(real);
	if (result == NULL)
		tl_error_nomem(err, "creating table %s", given);
	return result;
}

/* TL_ERR_CONFLICT when metadata_dir already holds any table version. */
static int check_no_table(const char *location, const char *metadata_dir, tl_error *err)
{
	tl_error ignored;
	tl_error_clear(&ignored);
	int64_t version;
	char *name = newest_listed(location, metadata_dir, &version, &ignored);
	if (name == NULL && ignored.code == TL_ERR_NOMEM)
		return tl_error_nomem(err, "creating table %s", location);
	if (name == NULL)
		return 0;
	tl_error_set(err, TL_ERR_CONFLICT, "table already exists at %s (%s/%s)", location, metadata_dir, name);
	tl_free(name);
	return -1;
}

static int prepare_directories(const char *local, const char *metadata_dir, tl_error *err)
{
	char *data_dir = path_join(local, "data");
	if (data_dir == NULL)
		return tl_error_nomem(err, "creating table %s", local);
	int rc = tl_storage_make_dirs(metadata_dir, err);
	if (rc == 0)
		rc = tl_storage_make_dirs(data_dir, err);
	tl_free(data_dir);
	return rc;
}

tl_ice_table *tl_ice_table_create(const char *location, const tl_ice_schema *schema,
                                  const tl_ice_partition_spec *spec, const tl_ice_kv *properties,
                                  int nproperties, tl_error *err)
{
	char *given = tl_strdup(location);
	if (given == NULL) {
		tl_error_nomem(err, "creating table %s", location);
		return NULL;
	}
	strip_trailing_slashes(given);
	char *local = table_root(given, err);
	char *metadata_dir = local ? path_join(local, "metadata") : NULL;
	char *md_location = NULL, *file = NULL;
	tl_ice_table_metadata *md = NULL;
	tl_ice_table *t = NULL;
	if (local != NULL && metadata_dir == NULL)
		tl_error_nomem(err, "creating table %s", location);
	if (metadata_dir == NULL || prepare_directories(local, metadata_dir, err) < 0 ||
	    check_no_table(given, metadata_dir, err) < 0)
		goto done;
	md_location = metadata_location(given, local, err);
	if (md_location == NULL)
		goto done;
	md = tl_ice_metadata_create(md_location, schema, spec, properties, nproperties, err);
	if (md == NULL || tl_ice_table_publish_version(metadata_dir, 1, md, &file, err) < 0) {
		if (err != NULL && err->code == TL_ERR_CONFLICT) {
			tl_error_clear(err);
			tl_error_set(err, TL_ERR_CONFLICT, "table already exists at %s", given);
		}
		goto done;
	}
	if (tl_ice_table_write_hint(metadata_dir, 1, err) < 0)
		goto done;
	t = new_table(md, file, 1, metadata_dir, err);
	md = NULL;
	file = NULL;
	metadata_dir = NULL;
done:
	tl_ice_metadata_free(md);
	tl_free(file);
	tl_free(md_location);
	tl_free(metadata_dir);
	tl_free(local);
	tl_free(given);
	return t;
}

int tl_ice_table_new_data_path(const tl_ice_table *t, const char *partition_path, const char *name_prefix,
                               tl_buf *out, tl_error *err)
{
	char uuid[37];
	if (tl_ice_uuid_v4(uuid, err) < 0)
		return -1;
	tl_ice_table_append_location(t, out);
	tl_buf_append_str(out, "/data/");
	if (partition_path != NULL && partition_path[0] != '\0') {
		tl_buf_append_str(out, partition_path);
		tl_buf_append_byte(out, '/');
	}
	if (name_prefix != NULL && name_prefix[0] != '\0')
		tl_buf_printf(out, "%s-", name_prefix);
	tl_buf_printf(out, "%s.parquet", uuid);
	return tl_buf_check(out, err, "naming a data file");
}

void tl_ice_table_append_location(const tl_ice_table *t, tl_buf *out)
{
	size_t n = strlen(t->location);
	while (n > 1 && t->location[n - 1] == '/')
		n--;
	tl_buf_append(out, t->location, n);
}

/* ---------------------------------------------------------- publishing */

const char *tl_ice_table_commit_dir(const tl_ice_table *t, tl_error *err)
{
	const table_impl *impl = (const table_impl *)t;
	if (impl->metadata_dir == NULL) {
		tl_error_set(err, TL_ERR_INVALID,
		             "table %s was opened by its metadata file %s; open it by directory to commit to it",
		             t->location, t->metadata_file);
		return NULL;
	}
	if (impl->catalog != NULL)
		return impl->metadata_dir;   /* the catalog names the metadata files */
	const char *slash = strrchr(t->metadata_file, '/');
	const char *name = slash ? slash + 1 : t->metadata_file;
	if (t->version < 0 || name[0] != 'v') {
		tl_error_set(err, TL_ERR_INVALID,
		             "table %s: its current metadata file %s is not named v<N>.metadata.json; "
		             "commits follow the Hadoop catalog's naming only",
		             t->location, t->metadata_file);
		return NULL;
	}
	return impl->metadata_dir;
}

int tl_ice_table_publish_version(const char *metadata_dir, int64_t version, const tl_ice_table_metadata *md,
                                 char **path, tl_error *err)
{
	tl_buf json;
	tl_buf_init(&json);
	char *final = versioned_path(metadata_dir, version);
	if (final == NULL)
		return tl_error_nomem(err, "publishing table metadata");
	int rc = tl_ice_metadata_write(md, &json, err);
	if (rc == 0 && tl_storage_create_if_absent(final, json.data, json.len, err) < 0) {
		if (err != NULL && err->code == TL_ERR_CONFLICT) {
			tl_error_clear(err);
			tl_error_set(err, TL_ERR_CONFLICT, "cannot publish %s: another writer committed this version first",
			             final);
		} else {
			tl_error_prefix(err, "cannot publish %s", final);
		}
		rc = -1;
	}
	tl_buf_free(&json);
	if (rc == 0 && path != NULL)
		*path = final;
	else
		tl_free(final);
	return rc;
}

int tl_ice_table_write_hint(const char *metadata_dir, int64_t version, tl_error *err)
{
	char text[24];
	int n = snprintf(text, sizeof(text), "%" PRId64, version);
	char *hint = path_join(metadata_dir, "version-hint.text");
	if (hint == NULL)
		return tl_error_nomem(err, "writing the version hint");
	int rc = tl_storage_replace(hint, text, (size_t)n, err);
	tl_free(hint);
	return rc;
}
