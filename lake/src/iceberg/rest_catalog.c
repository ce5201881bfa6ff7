/*
 * rest_catalog.c: connecting to an Iceberg REST catalog (credentials,
 * configuration, prefix), its namespaces, and creating, loading and dropping
 * tables through it (rest_catalog.h). Commits are rest_commit.c's.
 *
 * A table the catalog answers for becomes an ordinary tl_ice_table whose
 * metadata is parsed by the same parser as a metadata file (table_metadata.c),
 * holding a tl_rest_table_ref through which table.c refreshes it and
 * commit.c publishes its commits.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/storage.h"
#include "iceberg/rest_internal.h"
#include "iceberg/schema_json.h"
#include "iceberg/table_internal.h"
#include "common/json_load.h"

#define DEFAULT_TIMEOUT_MS 60000L

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init(void)
{
	curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void free_secret(char *s)
{
	if (s != NULL) {
		/* Do not leave a token in freed memory for a later dump to find. */
		volatile char *p = s;
		while (*p)
			*p++ = 0;
		tl_free(s);
	}
}

static void catalog_release(tl_rest_catalog *c)
{
	if (c == NULL || --c->refs > 0)
		return;
	if (c->curl != NULL)
		curl_easy_cleanup(c->curl);
	tl_free(c->uri);
	tl_free(c->prefix);
	free_secret(c->auth_header);
	tl_free(c);
}

void tl_rest_catalog_free(tl_rest_catalog *c)
{
	catalog_release(c);
}

const char *tl_rest_catalog_uri(const tl_rest_catalog *c)
{
	return c->uri;
}

static int set_token(tl_rest_catalog *c, const char *token, tl_error *err)
{
	size_t n = strlen(token) + 32;
	char *h = tl_malloc(n);
	if (h == NULL)
		return tl_error_set(err, TL_ERR_NOMEM, "REST catalog %s: out of memory for the token", c->uri);
	snprintf(h, n, "Authorization: Bearer %s", token);
	free_secret(c->auth_header);
	c->auth_header = h;
	return 0;
}

/* Appends "&name=<value encoded>" (no '&' first) to a form body; NULL when out of memory. */
static char *form_add(char *form, const char *name, const char *value)
{
	char *enc = value ? tl_rest_encode(value) : NULL;
	if (form == NULL || enc == NULL) {
		free_secret(enc);
		free_secret(form);
		return NULL;
	}
	size_t n = strlen(form) + strlen(name) + strlen(enc) + 3;
	char *out = tl_malloc(n);
	if (out != NULL)
		snprintf(out, n, "%s%s%s=%s", form, form[0] ? "&" : "", name, enc);
	free_secret(enc);
	free_secret(form);
	return out;
}

/*
 * OAuth2 client credentials (RFC 6749 §4.4) at the catalog's token endpoint:
 * the credential is "client_id:client_secret" (a credential without ':' is a
 * secret with no id, as Java's OAuth2Util takes it).
 */
static int fetch_token(tl_rest_catalog *c, const tl_rest_catalog_config *cfg, tl_error *err)
{
	const char *colon = strchr(cfg->credential, ':');
	char *id = colon ? tl_strndup(cfg->credential, (size_t)(colon - cfg->credential)) : NULL;
	const char *secret = colon ? colon + 1 : cfg->credential;
	if (colon != NULL && id == NULL)
		return tl_error_set(err, TL_ERR_NOMEM, "REST catalog %s: out of memory for the credential", c->uri);
	char *form = tl_strdup("");
	form = form_add(form, "grant_type", "client_credentials");
	if (id != NULL)
		form = form_add(form, "client_id", id);
	form = form_add(form, "client_secret", secret);
	form = form_add(form, "scope", cfg->scope ? cfg->scope : "catalog");
	tl_free(id);
	char *url = cfg->oauth_uri ? tl_strdup(cfg->oauth_uri) : NULL;
	if (cfg->oauth_uri == NULL && form != NULL) {
		size_t n = strlen(c->uri) + 32;
		url = tl_malloc(n);
		if (url != NULL)
			snprintf(url, n, "%s/v1/oauth/tokens", c->uri);
	}
	if (form == NULL || url == NULL) {
		free_secret(form);
		tl_free(url);
		return tl_error_set(err, TL_ERR_NOMEM, "REST catalog %s: out of memory for the token request", c->uri);
	}
	rest_response r;
	int rc = tl_rest_send(c, "POST", url, "application/x-www-form-urlencoded", form, &r, err);
	free_secret(form);
	tl_free(url);
	if (rc < 0) {
		tl_error_prefix(err, "cannot obtain an OAuth2 token");
		return -1;
	}
	if (r.status != 200) {
		tl_rest_error(c, &r, "cannot obtain an OAuth2 token with TIERDB_CATALOG_CREDENTIAL's client credentials",
		              err);
		tl_rest_response_free(&r);
		return -1;
	}
	json_t *doc = r.body ? tl_json_loadb(r.body, r.len, 0, NULL) : NULL;
	const char *token = json_string_value(json_object_get(doc, "access_token"));
	if (token == NULL || token[0] == '\0')
		rc = tl_error_set(err, TL_ERR_CORRUPT, "REST catalog %s: the token endpoint's answer has no access_token",
		                  c->uri);
	else
		rc = set_token(c, token, err);
	json_decref(doc);
	if (r.body != NULL)
		memset(r.body, 0, r.len);   /* it held the token */
	tl_rest_response_free(&r);
	return rc;
}

/* GET /v1/config: the catalog's overrides may name a path prefix for every other request. */
static int read_config(tl_rest_catalog *c, const tl_rest_catalog_config *cfg, tl_error *err)
{
	char *wh = cfg->warehouse ? tl_rest_encode(cfg->warehouse) : NULL;
	size_t n = strlen(c->uri) + (wh ? strlen(wh) : 0) + 32;
	char *url = (cfg->warehouse == NULL || wh != NULL) ? tl_malloc(n) : NULL;
	if (url == NULL) {
		tl_free(wh);
		return tl_error_set(err, TL_ERR_NOMEM, "REST catalog %s: out of memory", c->uri);
	}
	snprintf(url, n, "%s/v1/config%s%s", c->uri, wh ? "?warehouse=" : "", wh ? wh : "");
	tl_free(wh);
	long status = 0;
	json_t *doc = NULL;
	rest_response r;
	int rc = tl_rest_call(c, "GET", url, NULL, &status, &doc, &r, err);
	tl_free(url);
	if (rc == 0 && status != 200)
		rc = tl_rest_error(c, &r, "cannot read the catalog's configuration (GET /v1/config)", err);
	tl_rest_response_free(&r);
	if (rc < 0) {
		json_decref(doc);
		return -1;
	}
	json_t *overrides = json_object_get(doc, "overrides");
	json_t *defaults = json_object_get(doc, "defaults");
	json_t *prefix = json_object_get(overrides, "prefix");
	if (prefix == NULL)
		prefix = json_object_get(defaults, "prefix");
	if (prefix != NULL && !json_is_string(prefix)) {
		json_decref(doc);
		return tl_error_set(err, TL_ERR_INVALID, "REST catalog %s: the configuration's prefix is not a string",
		                    c->uri);
	}
	if (prefix != NULL && json_string_length(prefix) > 0) {
		/* The prefix is one path segment or several; keep its slashes, encode the rest. */
		c->prefix = tl_strdup(json_string_value(prefix));
		if (c->prefix == NULL) {
			json_decref(doc);
			return tl_error_set(err, TL_ERR_NOMEM, "REST catalog %s: out of memory", c->uri);
		}
	}
	json_decref(doc);
	return 0;
}

tl_rest_catalog *tl_rest_catalog_connect(const tl_rest_catalog_config *cfg, tl_error *err)
{
	pthread_once(&curl_once, curl_init);
	if (curl_init_result != CURLE_OK) {
		tl_error_set(err, TL_ERR_IO, "libcurl did not initialise: %s", curl_easy_strerror(curl_init_result));
		return NULL;
	}
	if (cfg->uri == NULL || (strncmp(cfg->uri, "http://", 7) != 0 && strncmp(cfg->uri, "https://", 8) != 0)) {
		tl_error_set(err, TL_ERR_INVALID, "REST catalog URI \"%s\" is not an http:// or https:// URI",
		             cfg->uri ? cfg->uri : "");
		return NULL;
	}
	if (cfg->token != NULL && cfg->credential != NULL) {
		tl_error_set(err, TL_ERR_INVALID, "REST catalog %s: give a token or a credential, not both", cfg->uri);
		return NULL;
	}
	tl_rest_catalog *c = tl_calloc(1, sizeof(*c));
	if (c == NULL) {
		tl_error_set(err, TL_ERR_NOMEM, "out of memory connecting to the REST catalog %s", cfg->uri);
		return NULL;
	}
	c->refs = 1;
	c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
	c->uri = tl_strdup(cfg->uri);
	c->curl = curl_easy_init();
	if (c->uri == NULL || c->curl == NULL) {
		tl_error_set(err, TL_ERR_NOMEM, "out of memory connecting to the REST catalog %s", cfg->uri);
		catalog_release(c);
		return NULL;
	}
	size_t n = strlen(c->uri);
	while (n > 0 && c->uri[n - 1] == '/')
		c->uri[--n] = '\0';
	/* A URI given with the /v1 suffix Java's clients do not take: the paths add it. */
	if (n >= 3 && strcmp(c->uri + n - 3, "/v1") == 0)
		c->uri[n - 3] = '\0';
	int rc = 0;
	if (cfg->token != NULL)
		rc = set_token(c, cfg->token, err);
	else if (cfg->credential != NULL)
		rc = fetch_token(c, cfg, err);
	if (rc == 0)
		rc = read_config(c, cfg, err);
	if (rc < 0) {
		catalog_release(c);
		return NULL;
	}
	return c;
}

static const char *env_or_null(const char *name)
{
	const char *v = getenv(name);
	return v != NULL && v[0] != '\0' ? v : NULL;
}

tl_rest_catalog *tl_rest_catalog_from_env(tl_error *err)
{
	tl_rest_catalog_config cfg = {0};
	cfg.uri = env_or_null("TIERDB_CATALOG_URI");
	if (cfg.uri == NULL) {
		tl_error_set(err, TL_ERR_NOT_FOUND, "TIERDB_CATALOG_URI is not set: no REST catalog is configured");
		return NULL;
	}
	cfg.warehouse = env_or_null("TIERDB_CATALOG_WAREHOUSE");
	cfg.token = env_or_null("TIERDB_CATALOG_TOKEN");
	cfg.credential = env_or_null("TIERDB_CATALOG_CREDENTIAL");
	cfg.scope = env_or_null("TIERDB_CATALOG_SCOPE");
	cfg.oauth_uri = env_or_null("TIERDB_CATALOG_OAUTH_URI");
	return tl_rest_catalog_connect(&cfg, err);
}

/* ---------------------------------------------------------- namespaces */

static int check_name(const tl_rest_catalog *c, const char *what, const char *s, bool dots, tl_error *err)
{
	if (s == NULL || s[0] == '\0')
		return tl_error_set(err, TL_ERR_INVALID, "REST catalog %s: the %s is empty", c->uri, what);
	if (dots && (s[0] == '.' || s[strlen(s) - 1] == '.' || strstr(s, "..") != NULL))
		return tl_error_set(err, TL_ERR_INVALID, "REST catalog %s: the %s \"%s\" has an empty level", c->uri, what, s);
	if (!dots && strchr(s, '.') != NULL)
		return tl_error_set(err, TL_ERR_INVALID, "REST catalog %s: the %s \"%s\" has a '.'", c->uri, what, s);
	return 0;
}

int tl_rest_catalog_create_namespace(tl_rest_catalog *c, const char *ns, tl_error *err)
{
	if (check_name(c, "namespace", ns, true, err) < 0)
		return -1;
	json_t *body = tl_json_object();
	json_t *levels = tl_rest_namespace_json(ns);
	char *url = tl_rest_url(c, "namespaces");
	int rc = 0;
	if (body == NULL)
		json_decref(levels);   /* set_new takes levels over, even when it fails */
	if (body == NULL || url == NULL || json_object_set_new(body, "namespace", levels) < 0)
		rc = tl_error_set(err, TL_ERR_NOMEM, "REST catalog %s: out of memory creating namespace %s", c->uri, ns);
	long status = 0;
	json_t *doc = NULL;
	rest_response r = {0};
	if (rc == 0)
		rc = tl_rest_call(c, "POST", url, body, &status, &doc, &r, err);
	if (rc == 0 && status != 200 && status != 409) {
		char what[256];
		snprintf(what, sizeof(what), "cannot create namespace %s", ns);
		rc = tl_rest_error(c, &r, what, err);
	}
	tl_rest_response_free(&r);
	json_decref(doc);
	json_decref(body);
	tl_free(url);
	return rc;
}

/* -------------------------------------------------------------- tables */

void tl_rest_table_ref_free(tl_rest_table_ref *ref)
{
	if (ref == NULL)
		return;
	catalog_release(ref->catalog);
	tl_free(ref->ns);
	tl_free(ref->name);
	tl_free(ref->url);
	tl_free(ref);
}

static tl_rest_table_ref *new_ref(tl_rest_catalog *c, const char *ns, const char *name, tl_error *err)
{
	if (check_name(c, "namespace", ns, true, err) < 0 || check_name(c, "table name", name, false, err) < 0)
		return NULL;
	tl_rest_table_ref *ref = tl_calloc(1, sizeof(*ref));
	char *ns_path = tl_rest_namespace_path(ns);
	char *name_enc = tl_rest_encode(name);
	char *rest = NULL;
	if (ref != NULL && ns_path != NULL && name_enc != NULL) {
		size_t n = strlen(ns_path) + strlen(name_enc) + 32;
		rest = tl_malloc(n);
		if (rest != NULL)
			snprintf(rest, n, "namespaces/%s/tables/%s", ns_path, name_enc);
	}
	if (ref != NULL) {
		ref->catalog = c;
		c->refs++;
		ref->ns = tl_strdup(ns);
		ref->name = tl_strdup(name);
		ref->url = rest ? tl_rest_url(c, rest) : NULL;
	}
	tl_free(ns_path);
	tl_free(name_enc);
	tl_free(rest);
	if (ref == NULL || ref->ns == NULL || ref->name == NULL || ref->url == NULL) {
		tl_rest_table_ref_free(ref);
		tl_error_set(err, TL_ERR_NOMEM, "REST catalog %s: out of memory for table %s.%s", c->uri, ns, name);
		return NULL;
	}
	return ref;
}

int tl_rest_parse_result(const tl_rest_table_ref *ref, const json_t *result, tl_ice_table_metadata **md,
                         char **location, tl_error *err)
{
	*md = NULL;
	*location = NULL;
	const tl_rest_catalog *c = ref->catalog;
	const json_t *loc = json_object_get(result, "metadata-location");
	const json_t *meta = json_object_get(result, "metadata");
	if (!json_is_string(loc) || !json_is_object(meta))
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "REST catalog %s: the answer for table %s.%s lacks metadata-location or metadata", c->uri,
		                    ref->ns, ref->name);
	char *text = tl_json_dumps(meta, JSON_COMPACT);
	*location = tl_strdup(json_string_value(loc));
	if (text == NULL || *location == NULL) {
		tl_free(text);
		tl_free(*location);
		*location = NULL;
		return tl_error_set(err, TL_ERR_NOMEM, "REST catalog %s: out of memory reading table %s.%s", c->uri,
		                    ref->ns, ref->name);
	}
	*md = tl_ice_metadata_parse(text, strlen(text), err);
	tl_free(text);
	if (*md == NULL) {
		tl_error_prefix(err, "REST catalog %s: table %s.%s (%s)", c->uri, ref->ns, ref->name, *location);
		tl_free(*location);
		*location = NULL;
		return -1;
	}
	return 0;
}

tl_ice_table *tl_rest_table_from_result(tl_rest_table_ref *ref, const json_t *result, tl_error *err)
{
	tl_ice_table_metadata *md;
	char *location;
	if (tl_rest_parse_result(ref, result, &md, &location, err) < 0) {
		tl_rest_table_ref_free(ref);
		return NULL;
	}
	return tl_ice_table_from_catalog(md, location, ref, err);
}

/* GET the table's LoadTableResult; *doc is the caller's. */
static int load_result(tl_rest_table_ref *ref, json_t **doc, tl_error *err)
{
	tl_rest_catalog *c = ref->catalog;
	long status = 0;
	rest_response r;
	int rc = tl_rest_call(c, "GET", ref->url, NULL, &status, doc, &r, err);
	if (rc == 0 && status != 200) {
		char what[256];
		snprintf(what, sizeof(what), "cannot load table %s.%s", ref->ns, ref->name);
		rc = tl_rest_error(c, &r, what, err);
	}
	tl_rest_response_free(&r);
	if (rc < 0) {
		json_decref(*doc);
		*doc = NULL;
	}
	return rc;
}

tl_ice_table *tl_rest_catalog_load_table(tl_rest_catalog *c, const char *ns, const char *name, tl_error *err)
{
	tl_rest_table_ref *ref = new_ref(c, ns, name, err);
	json_t *doc = NULL;
	if (ref == NULL || load_result(ref, &doc, err) < 0) {
		tl_rest_table_ref_free(ref);
		return NULL;
	}
	tl_ice_table *t = tl_rest_table_from_result(ref, doc, err);
	json_decref(doc);
	return t;
}

int tl_rest_table_reload(tl_rest_table_ref *ref, tl_ice_table *t, tl_error *err)
{
	json_t *doc = NULL;
	if (load_result(ref, &doc, err) < 0)
		return -1;
	tl_ice_table_metadata *md;
	char *location;
	int rc = tl_rest_parse_result(ref, doc, &md, &location, err);
	json_decref(doc);
	if (rc < 0)
		return -1;
	tl_ice_table_install(t, md, tl_ice_table_file_version(location), location);
	return 0;
}

/* The CreateTableRequest body. */
static json_t *create_request(const char *name, const char *location, const tl_ice_schema *schema,
                              const tl_ice_partition_spec *spec, const tl_ice_kv *properties, int nproperties)
{
	json_t *body = tl_json_object();
	json_t *props = tl_json_object();
	bool ok = body != NULL && props != NULL;
	ok = ok && json_object_set_new(body, "name", json_string(name)) == 0;
	if (location != NULL)
		ok = ok && json_object_set_new(body, "location", json_string(location)) == 0;
	ok = ok && json_object_set_new(body, "schema", tl_ice_schema_to_json(schema)) == 0;
	if (spec != NULL)
		ok = ok && json_object_set_new(body, "partition-spec", tl_ice_partition_spec_to_json(spec)) == 0;
	ok = ok && json_object_set_new(body, "stage-create", json_false()) == 0;
	for (int i = 0; ok && i < nproperties; i++)
		ok = json_object_set_new(props, properties[i].key, json_string(properties[i].value)) == 0;
	ok = ok && json_object_set_new(props, "format-version", json_string("2")) == 0;
	ok = ok && json_object_set(body, "properties", props) == 0;
	json_decref(props);
	if (!ok) {
		json_decref(body);
		return NULL;
	}
	return body;
}

tl_ice_table *tl_rest_catalog_create_table(tl_rest_catalog *c, const char *ns, const char *name,
                                           const char *location, const tl_ice_schema *schema,
                                           const tl_ice_partition_spec *spec, const tl_ice_kv *properties,
                                           int nproperties, tl_error *err)
{
	tl_rest_table_ref *ref = new_ref(c, ns, name, err);
	if (ref == NULL)
		return NULL;
	json_t *body = create_request(name, location, schema, spec, properties, nproperties);
	char *ns_path = tl_rest_namespace_path(ns);
	char *rest = NULL, *url = NULL;
	if (ns_path != NULL) {
		size_t n = strlen(ns_path) + 32;
		rest = tl_malloc(n);
		if (rest != NULL)
			snprintf(rest, n, "namespaces/%s/tables", ns_path);
		url = rest ? tl_rest_url(c, rest) : NULL;
	}
	tl_free(ns_path);
	tl_free(rest);
	long status = 0;
	json_t *doc = NULL;
	rest_response r = {0};
	int rc = 0;
	if (body == NULL || url == NULL)
		rc = tl_error_set(err, TL_ERR_NOMEM, "REST catalog %s: out of memory creating table %s.%s", c->uri, ns, name);
	if (rc == 0)
		rc = tl_rest_call(c, "POST", url, body, &status, &doc, &r, err);
	if (rc == 0 && status != 200) {
		char what[256];
		snprintf(what, sizeof(what), "cannot create table %s.%s", ns, name);
		rc = tl_rest_error(c, &r, what, err);
		if (status == 409) {
			tl_error_clear(err);
			tl_error_set(err, TL_ERR_CONFLICT, "cannot create table %s.%s: it already exists in the REST catalog %s",
			             ns, name, c->uri);
		}
	}
	tl_rest_response_free(&r);
	json_decref(body);
	tl_free(url);
	tl_ice_table *t = NULL;
	if (rc == 0)
		t = tl_rest_table_from_result(ref, doc, err);
	else
		tl_rest_table_ref_free(ref);
	json_decref(doc);
	return t;
}

int tl_rest_catalog_drop_table(tl_rest_catalog *c, const char *ns, const char *name, tl_error *err)
{
	tl_rest_table_ref *ref = new_ref(c, ns, name, err);
	if (ref == NULL)
		return -1;
	rest_response r;
	int rc = tl_rest_send(c, "DELETE", ref->url, NULL, NULL, &r, err);
	if (rc == 0 && r.status != 200 && r.status != 204) {
		char what[256];
		snprintf(what, sizeof(what), "cannot drop table %s.%s", ns, name);
		rc = tl_rest_error(c, &r, what, err);
	}
	tl_rest_response_free(&r);
	tl_rest_table_ref_free(ref);
	return rc;
}
