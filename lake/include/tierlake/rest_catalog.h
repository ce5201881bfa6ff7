/*
 * rest_catalog.h: Iceberg tables kept in an Iceberg REST catalog (the
 * Iceberg REST catalog OpenAPI specification, the protocol of Polaris,
 * Unity, Gravitino, Lakekeeper, Nessie's REST API and Iceberg's own server).
 *
 * The catalog owns each table's current metadata and the atomicity of its
 * commits: a table created or loaded through the catalog is an ordinary
 * tl_ice_table (scans, writers, tl_ice_commit_* all work on it), but its
 * commits send the new snapshot (or schema) to the catalog's updateTable
 * with requirements (the table's uuid, the snapshot "main" was at when the
 * commit began) instead of creating v<N+1>.metadata.json; the catalog writes
 * the metadata file and refuses a commit whose base is no longer current.
 * Data files, manifests and manifest lists are still written by this library
 * to the table's location through its storage (storage.h).
 *
 * A lost race is TL_ERR_CONFLICT ("another writer committed first"): refresh
 * the table (tl_ice_table_refresh reloads it from the catalog) and retry. A
 * commit whose answer was lost (a 5xx, a dropped connection after the request
 * went out) is TL_ERR_IO saying the commit's state is unknown: it may have
 * been applied; reload the table and look for the snapshot before retrying,
 * never retry blindly. Its manifests are left in place for that reason.
 *
 * Authentication: a bearer token, or OAuth2 client credentials exchanged at
 * the catalog's token endpoint (POST /v1/oauth/tokens, grant_type
 * client_credentials) when the catalog is connected. Error messages name the
 * catalog URI and the table, never a token or a secret.
 */
#ifndef TIERLAKE_REST_CATALOG_H
#define TIERLAKE_REST_CATALOG_H

#include "tierlake/error.h"
#include "tierlake/iceberg_table.h"

typedef struct tl_rest_catalog tl_rest_catalog;

typedef struct tl_rest_catalog_config {
	const char *uri;          /* the catalog's base URI, e.g. http://host:8181 (the /v1/... paths go under it) */
	const char *warehouse;    /* optional: the warehouse asked for in GET /v1/config */
	const char *token;        /* optional: a bearer token sent with every request */
	const char *credential;   /* optional: "client_id:client_secret" for OAuth2 client credentials */
	const char *scope;        /* optional: the OAuth2 scope (default "catalog") */
	const char *oauth_uri;    /* optional: the token endpoint (default <uri>/v1/oauth/tokens) */
	long timeout_ms;          /* per request; 0 for 60 s */
} tl_rest_catalog_config;

/*
 * Connects: obtains a token when a credential is given, then reads the
 * catalog's configuration (GET /v1/config?warehouse=...) for the path prefix
 * its overrides name. A catalog that does not answer, or answers with an
 * error, is TL_ERR_IO (TL_ERR_INVALID for a malformed configuration).
 */
tl_rest_catalog *tl_rest_catalog_connect(const tl_rest_catalog_config *cfg, tl_error *err);

/*
 * A catalog configured by the environment: TIERDB_CATALOG_URI (required),
 * TIERDB_CATALOG_WAREHOUSE, TIERDB_CATALOG_TOKEN, TIERDB_CATALOG_CREDENTIAL
 * ("client_id:client_secret"), TIERDB_CATALOG_SCOPE and
 * TIERDB_CATALOG_OAUTH_URI. Without TIERDB_CATALOG_URI: NULL with
 * TL_ERR_NOT_FOUND.
 */
tl_rest_catalog *tl_rest_catalog_from_env(tl_error *err);

/* The URI the catalog was connected with (for messages; it holds no secret). */
const char *tl_rest_catalog_uri(const tl_rest_catalog *c);

/*
 * Frees the caller's reference. Tables opened through the catalog hold
 * their own reference, so they may outlive this call.
 */
void tl_rest_catalog_free(tl_rest_catalog *c);

/*
 * Namespaces are given as one string whose levels are separated by '.'
 * ("sales" or "lake.sales"); table names are one level.
 */

/* Creates the namespace unless it exists (an existing one is not an error). */
int tl_rest_catalog_create_namespace(tl_rest_catalog *c, const char *ns, tl_error *err);

/*
 * Creates an empty table in the catalog (format version 2) and returns it
 * loaded. location NULL lets the catalog choose (usually
 * <warehouse>/<namespace>/<name>). The catalog assigns field ids afresh, in
 * the order of the schema (1, 2, ... for a flat schema) and partition field
 * ids from 1000: the returned table's metadata is what counts. An existing
 * table is TL_ERR_CONFLICT; a missing namespace TL_ERR_NOT_FOUND.
 */
tl_ice_table *tl_rest_catalog_create_table(tl_rest_catalog *c, const char *ns, const char *name,
                                           const char *location, const tl_ice_schema *schema,
                                           const tl_ice_partition_spec *spec, const tl_ice_kv *properties,
                                           int nproperties, tl_error *err);

/* Loads a table's current metadata from the catalog; a missing table is TL_ERR_NOT_FOUND. */
tl_ice_table *tl_rest_catalog_load_table(tl_rest_catalog *c, const char *ns, const char *name, tl_error *err);

/* Drops the table from the catalog (its files stay); a missing table is TL_ERR_NOT_FOUND. */
int tl_rest_catalog_drop_table(tl_rest_catalog *c, const char *ns, const char *name, tl_error *err);

#endif
