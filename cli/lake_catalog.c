/*
 * lake_catalog.c: opening a registered table's lake table by location or
 * through its REST catalog (lake_catalog.h).
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lake_catalog.h"

/* Two catalog URIs name the same catalog when equal but for trailing slashes and a /v1 suffix. */
static size_t uri_stem(const char *uri)
{
	size_t n = strlen(uri);
	while (n > 0 && uri[n - 1] == '/')
		n--;
	if (n >= 3 && strncmp(uri + n - 3, "/v1", 3) == 0)
		n -= 3;
	while (n > 0 && uri[n - 1] == '/')
		n--;
	return n;
}

static bool same_uri(const char *a, const char *b)
{
	size_t na = uri_stem(a), nb = uri_stem(b);
	return na == nb && strncmp(a, b, na) == 0;
}

tl_rest_catalog *tdb_lake_catalog_from_env(tl_error *err)
{
	const char *uri = getenv("TIERDB_CATALOG_URI");
	if (uri == NULL || uri[0] == '\0')
		return NULL;
	return tl_rest_catalog_from_env(err);
}

const char *tdb_lake_catalog_namespace(const char *schema)
{
	const char *ns = getenv("TIERDB_CATALOG_NAMESPACE");
	return ns != NULL && ns[0] != '\0' ? ns : schema;
}

char *tdb_lake_catalog_props(const tl_rest_catalog *c, const char *ns, const char *table)
{
	json_t *entry = json_pack("{s:s, s:s, s:s}", "uri", tl_rest_catalog_uri(c), "namespace", ns, "table", table);
	char *text = entry ? json_dumps(entry, JSON_COMPACT) : NULL;
	json_decref(entry);
	return text;
}

/*
 * The REST catalog t's lake_props name, connected from the environment, with
 * the table's namespace and name (copies, free()). 0 with *c NULL for a
 * path-based table; -1 with err set when the environment does not point at
 * that catalog or it cannot be reached.
 */
static int catalog_of(const tdb_catalog_table *t, tl_rest_catalog **c, char **ns, char **name, tl_error *err)
{
	*c = NULL;
	*ns = *name = NULL;
	json_t *props = t->lake_props ? json_loads(t->lake_props, 0, NULL) : NULL;
	json_t *entry = json_object_get(props, "rest_catalog");
	if (entry == NULL) {
		json_decref(props);
		return 0;
	}
	const char *uri = json_string_value(json_object_get(entry, "uri"));
	const char *n = json_string_value(json_object_get(entry, "namespace"));
	const char *tn = json_string_value(json_object_get(entry, "table"));
	const char *env_uri = getenv("TIERDB_CATALOG_URI");
	int rc = -1;
	if (uri == NULL || n == NULL || tn == NULL) {
		tl_error_set(err, TL_ERR_CORRUPT, "the cut-line of %s.%s names a REST catalog without uri, namespace and table",
		             t->schema_name, t->table_name);
	} else if (env_uri == NULL || env_uri[0] == '\0' || !same_uri(env_uri, uri)) {
		tl_error_set(err, TL_ERR_INVALID,
		             "the lake table of %s.%s is %s.%s in the REST catalog %s: set TIERDB_CATALOG_URI to that "
		             "catalog (with TIERDB_CATALOG_TOKEN or TIERDB_CATALOG_CREDENTIAL if it needs them)%s%s",
		             t->schema_name, t->table_name, n, tn, uri, env_uri && env_uri[0] ? "; it is " : "",
		             env_uri && env_uri[0] ? env_uri : "");
	} else {
		*ns = strdup(n);
		*name = strdup(tn);
		if (*ns == NULL || *name == NULL)
			tl_error_set(err, TL_ERR_NOMEM, "out of memory opening the lake table of %s.%s", t->schema_name,
			             t->table_name);
		else
			*c = tl_rest_catalog_from_env(err);
		rc = *c != NULL ? 0 : -1;
		if (rc < 0) {
			free(*ns);
			free(*name);
			*ns = *name = NULL;
		}
	}
	json_decref(props);
	return rc;
}

tl_ice_table *tdb_lake_open(const tdb_catalog_table *t, tl_error *err)
{
	tl_rest_catalog *c;
	char *ns, *name;
	if (catalog_of(t, &c, &ns, &name, err) < 0)
		return NULL;
	if (c == NULL)
		return tl_ice_table_open(t->lake_table_ref, err);
	tl_ice_table *lake = tl_rest_catalog_load_table(c, ns, name, err);
	tl_rest_catalog_free(c);   /* the table keeps its own reference */
	free(ns);
	free(name);
	return lake;
}

int tdb_lake_drop_from_catalog(const tdb_catalog_table *t, tl_error *err)
{
	tl_rest_catalog *c;
	char *ns, *name;
	if (catalog_of(t, &c, &ns, &name, err) < 0)
		return -1;
	int rc = c ? tl_rest_catalog_drop_table(c, ns, name, err) : 0;
	if (rc < 0 && err->code == TL_ERR_NOT_FOUND)
		rc = 0;   /* already gone: what was asked for */
	tl_rest_catalog_free(c);
	free(ns);
	free(name);
	return rc;
}
