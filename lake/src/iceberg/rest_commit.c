/*
 * rest_commit.c: commits to a table kept in a REST catalog, through the
 * catalog's updateTable (POST .../namespaces/{ns}/tables/{table}).
 *
 * commit.c and schema_update.c build the new metadata exactly as for a
 * path-based table; this file turns the difference between the table's
 * current metadata (the base) and the new one into the catalog's
 * TableUpdates (add-snapshot, set-snapshot-ref for "main", add-schema,
 * set-current-schema, remove-snapshots for an expiry) with
 * TableRequirements that make the catalog refuse the commit when the base
 * is no longer current: assert-table-uuid,
 * assert-ref-snapshot-id on "main" (null: main must not exist yet) and, for
 * a schema change, assert-current-schema-id and
 * assert-last-assigned-field-id. The snapshots and schemas go as our own
 * metadata writer prints them (table_metadata.c), so the catalog receives
 * what a metadata file would have held.
 *
 * The answers: 200 is the new metadata, installed in the table; 409
 * (CommitFailedException) a lost race, TL_ERR_CONFLICT; a 5xx or a
 * connection lost after the request went out leaves the commit's state
 * unknown (the spec's CommitStateUnknownException): TL_ERR_IO that says so,
 * and the ref remembers it so the attempt's files are kept.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/rest_internal.h"
#include "iceberg/table_internal.h"
#include "common/json_load.h"

static const tl_ice_ref *main_branch(const tl_ice_table_metadata *md)
{
	for (int i = 0; i < md->nrefs; i++)
		if (md->refs[i].is_branch && strcmp(md->refs[i].name, "main") == 0)
			return &md->refs[i];
	return NULL;
}

static bool has_schema(const tl_ice_table_metadata *md, int64_t id)
{
	for (int i = 0; i < md->nschemas; i++)
		if (md->schemas[i].schema_id == id)
			return true;
	return false;
}

/* Appends {"action": action} plus key/value to updates; false when out of memory. */
static bool add_update(json_t *list, const char *action, const char *key, json_t *value, const char *key2,
                       json_t *value2)
{
	json_t *u = tl_json_object();
	bool ok = u != NULL && json_object_set_new(u, "action", json_string(action)) == 0;
	ok = ok && (key == NULL || json_object_set(u, key, value) == 0);
	ok = ok && (key2 == NULL || json_object_set(u, key2, value2) == 0);
	json_decref(value);
	json_decref(value2);
	if (!ok) {
		json_decref(u);
		return false;
	}
	return json_array_append_new(list, u) == 0;
}

static bool add_requirement(json_t *list, const char *type, const char *key, json_t *value, const char *key2,
                            json_t *value2)
{
	json_t *r = tl_json_object();
	bool ok = r != NULL && json_object_set_new(r, "type", json_string(type)) == 0;
	ok = ok && (key == NULL || json_object_set(r, key, value) == 0);
	ok = ok && (key2 == NULL || json_object_set(r, key2, value2) == 0);
	json_decref(value);
	json_decref(value2);
	if (!ok) {
		json_decref(r);
		return false;
	}
	return json_array_append_new(list, r) == 0;
}

/* The objects of an array of md_json (by key) whose id_key is not in the base. */
static bool add_new_snapshots(json_t *updates, const json_t *md_json, const tl_ice_table_metadata *base)
{
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(md_json, "snapshots"), i, s) {
		json_t *id = json_object_get(s, "snapshot-id");
		if (!json_is_integer(id) || tl_ice_metadata_snapshot(base, json_integer_value(id)) != NULL)
			continue;
		if (!add_update(updates, "add-snapshot", "snapshot", json_incref(s), NULL, NULL))
			return false;
	}
	return true;
}

/*
 * remove-snapshots for the base's snapshots md no longer holds (expiry):
 * the spec's RemoveSnapshotsUpdate, one update per snapshot. The spec's
 * field is a list, but Java Iceberg's parser (1.8, the REST catalog
 * server the tests run) accepts exactly one id per update, so one each is
 * what every server takes.
 */
static bool add_removed_snapshots(json_t *updates, const tl_ice_table_metadata *base, const tl_ice_table_metadata *md)
{
	bool ok = true;
	for (int i = 0; ok && i < base->nsnapshots; i++) {
		if (tl_ice_metadata_snapshot(md, base->snapshots[i].snapshot_id) != NULL)
			continue;
		json_t *ids = json_array();
		ok = ids != NULL && json_array_append_new(ids, json_integer(base->snapshots[i].snapshot_id)) == 0;
		if (!ok)
			json_decref(ids);
		else
			ok = add_update(updates, "remove-snapshots", "snapshot-ids", ids, NULL, NULL);
	}
	return ok;
}

/* add-schema for each schema the base lacks; *added says whether there was one. */
static bool add_new_schemas(json_t *updates, const json_t *md_json, const tl_ice_table_metadata *base,
                            const tl_ice_table_metadata *md, bool *added)
{
	size_t i;
	json_t *s;
	*added = false;
	json_array_foreach(json_object_get(md_json, "schemas"), i, s) {
		json_t *id = json_object_get(s, "schema-id");
		if (!json_is_integer(id) || has_schema(base, json_integer_value(id)))
			continue;
		if (!add_update(updates, "add-schema", "schema", json_incref(s), "last-column-id",
		                json_integer(md->last_column_id)))
			return false;
		*added = true;
	}
	return true;
}

/* The UpdateTable request: requirements on the base, updates toward md; NULL when out of memory. */
static json_t *commit_request(const tl_rest_table_ref *ref, const tl_ice_table_metadata *base,
                              const tl_ice_table_metadata *md, const json_t *md_json)
{
	json_t *body = tl_json_object(), *ident = tl_json_object();
	json_t *reqs = json_array(), *updates = json_array();
	bool ok = body != NULL && ident != NULL && reqs != NULL && updates != NULL;
	ok = ok && json_object_set_new(ident, "namespace", tl_rest_namespace_json(ref->ns)) == 0;
	ok = ok && json_object_set_new(ident, "name", json_string(ref->name)) == 0;

	const tl_ice_ref *base_main = main_branch(base), *new_main = main_branch(md);
	ok = ok && add_requirement(reqs, "assert-table-uuid", "uuid", json_string(base->table_uuid), NULL, NULL);
	ok = ok && add_requirement(reqs, "assert-ref-snapshot-id", "ref", json_string("main"), "snapshot-id",
	                           base_main ? json_integer(base_main->snapshot_id) : json_null());

	bool schema_added = false;
	ok = ok && add_new_schemas(updates, md_json, base, md, &schema_added);
	if (ok && md->current_schema_id != base->current_schema_id) {
		ok = add_requirement(reqs, "assert-current-schema-id", "current-schema-id",
		                     json_integer(base->current_schema_id), NULL, NULL) &&
		     add_requirement(reqs, "assert-last-assigned-field-id", "last-assigned-field-id",
		                     json_integer(base->last_column_id), NULL, NULL) &&
		     /* -1: the schema this commit added, whatever id the catalog gave it. */
		     add_update(updates, "set-current-schema", "schema-id",
		                json_integer(schema_added ? -1 : md->current_schema_id), NULL, NULL);
	}
	ok = ok && add_new_snapshots(updates, md_json, base);
	ok = ok && add_removed_snapshots(updates, base, md);
	if (ok && new_main != NULL && (base_main == NULL || base_main->snapshot_id != new_main->snapshot_id)) {
		json_t *u = tl_json_object();
		ok = u != NULL && json_object_set_new(u, "action", json_string("set-snapshot-ref")) == 0 &&
		     json_object_set_new(u, "ref-name", json_string("main")) == 0 &&
		     json_object_set_new(u, "type", json_string("branch")) == 0 &&
		     json_object_set_new(u, "snapshot-id", json_integer(new_main->snapshot_id)) == 0;
		if (ok)
			ok = json_array_append(updates, u) == 0;
		json_decref(u);
	}
	ok = ok && json_object_set(body, "identifier", ident) == 0 && json_object_set(body, "requirements", reqs) == 0 &&
	     json_object_set(body, "updates", updates) == 0;
	json_decref(ident);
	json_decref(reqs);
	json_decref(updates);
	if (!ok) {
		json_decref(body);
		return NULL;
	}
	return body;
}

/* md as the JSON our metadata writer prints; NULL with err set. */
static json_t *metadata_json(const tl_ice_table_metadata *md, tl_error *err)
{
	tl_buf text;
	tl_buf_init(&text);
	json_t *doc = NULL;
	if (tl_ice_metadata_write(md, &text, err) == 0) {
		json_error_t jerr;
		doc = tl_json_loadb((const char *)text.data, text.len, 0, &jerr);
		if (doc == NULL)
			tl_error_set(err, TL_ERR_NOMEM, "cannot read back the new metadata: %s", jerr.text);
	}
	tl_buf_free(&text);
	return doc;
}

static int answer_error(tl_rest_table_ref *ref, const rest_response *r, tl_error *err)
{
	const char *uri = ref->catalog->uri;
	if (r->status == 409) {
		tl_error ignored;
		tl_error_clear(&ignored);
		tl_rest_error(ref->catalog, r, "", &ignored);
		return tl_error_set(err, TL_ERR_CONFLICT,
		                    "the REST catalog %s refused the commit to table %s.%s: another writer committed "
		                    "first (%s); refresh the table and retry",
		                    uri, ref->ns, ref->name, ignored.message + 2);
	}
	if (r->status >= 500) {
		ref->state_unknown = true;
		tl_error ignored;
		tl_error_clear(&ignored);
		tl_rest_error(ref->catalog, r, "", &ignored);
		return tl_error_set(err, TL_ERR_IO,
		                    "the commit to table %s.%s in the REST catalog %s is in an unknown state (%s): it may "
		                    "have been applied; reload the table and check for its snapshot before retrying",
		                    ref->ns, ref->name, uri, ignored.message + 2);
	}
	char what[256];
	snprintf(what, sizeof(what), "the REST catalog refused the commit to table %s.%s", ref->ns, ref->name);
	return tl_rest_error(ref->catalog, r, what, err);
}

int tl_rest_table_commit(tl_rest_table_ref *ref, tl_ice_table *t, tl_ice_table_metadata *md, tl_error *err)
{
	tl_rest_catalog *c = ref->catalog;
	ref->state_unknown = false;
	json_t *md_json = metadata_json(md, err);
	json_t *body = md_json ? commit_request(ref, t->metadata, md, md_json) : NULL;
	json_decref(md_json);
	tl_ice_metadata_free(md);
	if (body == NULL)
		return tl_error_set(err, TL_ERR_NOMEM, "out of memory building the commit to table %s.%s", ref->ns,
		                    ref->name);
	long status = 0;
	json_t *doc = NULL;
	rest_response r;
	int rc = tl_rest_call(c, "POST", ref->url, body, &status, &doc, &r, err);
	json_decref(body);
	if (rc < 0) {
		if (r.maybe_sent || r.status != 0) {   /* sent, or answered 2xx with an unreadable body */
			ref->state_unknown = true;
			tl_error_prefix(err, "the commit to table %s.%s is in an unknown state (reload the table and check "
			                "for its snapshot before retrying)", ref->ns, ref->name);
		}
		tl_rest_response_free(&r);
		json_decref(doc);
		return -1;
	}
	if (status != 200) {
		answer_error(ref, &r, err);
		tl_rest_response_free(&r);
		json_decref(doc);
		return -1;
	}
	tl_rest_response_free(&r);
	tl_ice_table_metadata *committed;
	char *location;
	rc = tl_rest_parse_result(ref, doc, &committed, &location, err);
	json_decref(doc);
	if (rc < 0) {
		/* The catalog took the commit; only its answer is unreadable. */
		tl_error_prefix(err, "the commit to table %s.%s was applied but its answer is unreadable: reload the table",
		                ref->ns, ref->name);
		ref->state_unknown = true;
		return -1;
	}
	tl_ice_table_install(t, committed, tl_ice_table_file_version(location), location);
	return 0;
}
