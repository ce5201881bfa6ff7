/*
 * orphans.c: files under a table's location that nothing references, as
 * Java's DeleteOrphanFiles finds them (see tl_ice_table_orphan_files in
 * iceberg_maintenance.h): a failed writer's data files, an interrupted
 * commit's manifests, metadata versions fallen out of the log.
 *
 * The caller deletes what this reports, so a file reported by mistake is
 * live data lost. Everything here leans the other way:
 *   - referenced means reachable from any snapshot of the current
 *     metadata, the current metadata file and those in its log, the
 *     version hint, and any string in the current metadata file's JSON
 *     that names a file (statistics and other files this library does
 *     not model are referenced there too);
 *   - locations compare in a normal form (file: URIs as paths, s3a: as
 *     s3:, repeated slashes folded: maintenance_internal.h), and a listed
 *     file whose name equals a referenced file's name is kept as well:
 *     Iceberg names its files uniquely, so that is far more likely the
 *     same file under another spelling of the location (a symbolic link,
 *     an authority) than an orphan; Java refuses such mismatches too;
 *   - a file whose age the storage does not tell is too young, and so is
 *     a metadata version newer than the one the table was read at (a
 *     commit landed meanwhile).
 */
#include <string.h>

#include "tierlake/storage.h"
#include "iceberg/maintenance_internal.h"
#include "iceberg/table_internal.h"
#include "common/json_load.h"

/* Metadata JSON larger than this is refused rather than read into memory (as table.c does). */
#define METADATA_FILE_MAX ((uint64_t)1 << 30)

typedef struct orphan_scan {
	const tl_ice_table *table;
	tl_ice_file_set referenced;
	tl_ice_file_set names;        /* the last path component of each referenced location */
} orphan_scan;

static const char *base_name(const char *location)
{
	const char *slash = strrchr(location, '/');
	return slash != NULL ? slash + 1 : location;
}

static int add_referenced(orphan_scan *s, const char *location, tl_error *err)
{
	if (tl_ice_file_set_add(&s->referenced, location) < 0 || tl_ice_file_set_add(&s->names, base_name(location)) < 0)
		return tl_error_nomem(err, "collecting the files of table %s", s->table->location);
	return 0;
}

/* Every string in the document that could name a file. */
static int add_json_strings(orphan_scan *s, const json_t *v, int depth, tl_error *err)
{
	if (depth > 64)
		return 0;   /* no metadata nests this deep; what is below names no file we know */
	if (json_is_string(v)) {
		const char *text = json_string_value(v);
		return strchr(text, '/') != NULL ? add_referenced(s, text, err) : 0;
	}
	size_t i;
	const char *key;
	json_t *item;
	if (json_is_array(v)) {
		json_array_foreach(v, i, item)
			if (add_json_strings(s, item, depth + 1, err) < 0)
				return -1;
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, item)
			if (add_json_strings(s, item, depth + 1, err) < 0)
				return -1;
	}
	return 0;
}

static int add_metadata_json(orphan_scan *s, tl_error *err)
{
	const char *file = s->table->metadata_file;
	tl_input *in = tl_storage_open_read(file, err);
	if (in == NULL)
		return -1;
	char *text = in->size <= METADATA_FILE_MAX ? tl_malloc((size_t)in->size + 1) : NULL;
	int rc = text != NULL ? tl_input_read(in, 0, text, (size_t)in->size, err)
	                      : tl_error_set(err, TL_ERR_NOMEM, "cannot hold metadata file %s in memory", file);
	json_t *doc = NULL;
	if (rc == 0) {
		json_error_t jerr;
		doc = tl_json_loadb(text, (size_t)in->size, 0, &jerr);
		rc = doc != NULL ? add_json_strings(s, doc, 0, err)
		                 : tl_error_set(err, TL_ERR_CORRUPT, "metadata file %s: %s", file, jerr.text);
	}
	json_decref(doc);
	tl_free(text);
	tl_input_close(in);
	return rc;
}

static int add_names_of_reachable(orphan_scan *s, tl_error *err)
{
	for (size_t i = 0; i < s->referenced.cap; i++) {
		const char *key = s->referenced.slots[i].key;
		if (key != NULL && tl_ice_file_set_add(&s->names, base_name(key)) < 0)
			return tl_error_nomem(err, "collecting the files of table %s", s->table->location);
	}
	return 0;
}

static int collect_referenced(orphan_scan *s, tl_error *err)
{
	const tl_ice_table_metadata *md = s->table->metadata;
	if (tl_ice_add_reachable(&s->referenced, md, err) < 0 || add_names_of_reachable(s, err) < 0)
		return -1;
	if (add_referenced(s, s->table->metadata_file, err) < 0)
		return -1;
	for (int i = 0; i < md->nmetadata_log; i++)
		if (add_referenced(s, md->metadata_log[i].metadata_file, err) < 0)
			return -1;
	tl_buf hint;
	tl_buf_init(&hint);
	tl_ice_table_append_location(s->table, &hint);
	tl_buf_printf(&hint, "/metadata/version-hint.text%c", '\0');
	int rc = tl_buf_check(&hint, err, "naming the version hint");
	if (rc == 0)
		rc = add_referenced(s, (const char *)hint.data, err);
	tl_buf_free(&hint);
	return rc == 0 ? add_metadata_json(s, err) : -1;
}

/* Whether a listed file may be an orphan: old enough, referenced by no spelling, not a newer version. */
static bool is_orphan(const orphan_scan *s, const tl_storage_entry *e, const char *location, int64_t older_than_ms)
{
	if (e->is_dir || e->mtime_ms <= 0 || e->mtime_ms >= older_than_ms)
		return false;
	if (tl_ice_file_set_has(&s->referenced, location) || tl_ice_file_set_has(&s->names, base_name(location)))
		return false;
	return tl_ice_table_file_version(location) <= s->table->version || s->table->version < 0;
}

static int report_orphans(orphan_scan *s, const tl_storage_list *list, int64_t older_than_ms, tl_ice_file_fn fn,
                          void *arg, tl_error *err)
{
	tl_buf location;
	tl_buf_init(&location);
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < list->count; i++) {
		const tl_storage_entry *e = &list->entries[i];
		tl_buf_reset(&location);
		tl_ice_table_append_location(s->table, &location);
		tl_buf_printf(&location, "/%s%c", e->name, '\0');
		rc = tl_buf_check(&location, err, "naming a listed file");
		if (rc < 0 || !is_orphan(s, e, (const char *)location.data, older_than_ms))
			continue;
		tl_ice_file_ref ref = {.kind = TL_ICE_FILE_DATA, .path = (const char *)location.data, .size = (int64_t)e->size};
		rc = fn(arg, &ref, err);
	}
	tl_buf_free(&location);
	return rc;
}

int tl_ice_table_orphan_files(const tl_ice_table *t, int64_t older_than_ms, tl_ice_file_fn fn, void *arg,
                              tl_error *err)
{
	orphan_scan s = {.table = t};
	tl_ice_file_set_init(&s.referenced);
	tl_ice_file_set_init(&s.names);
	tl_storage_list list = {0};
	int rc = collect_referenced(&s, err);
	/* Listed after everything referenced is known: a file a commit writes meanwhile is young. */
	if (rc == 0)
		rc = tl_storage_list_dir(t->location, TL_STORAGE_LIST_RECURSIVE, &list, err);
	if (rc == 0)
		rc = report_orphans(&s, &list, older_than_ms, fn, arg, err);
	tl_storage_list_free(&list);
	tl_ice_file_set_free(&s.referenced);
	tl_ice_file_set_free(&s.names);
	if (rc < 0)
		tl_error_prefix(err, "finding orphan files of table %s", t->location);
	return rc;
}
