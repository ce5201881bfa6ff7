/*
 * rest_internal.h: the REST catalog client's parts, shared by rest_http.c
 * (requests and errors), rest_catalog.c (connecting, namespaces, creating and
 * loading tables) and rest_commit.c (commits through updateTable), and the
 * seam table.c and commit.c call for tables kept in a catalog.
 */
#ifndef TIERLAKE_ICEBERG_REST_INTERNAL_H
#define TIERLAKE_ICEBERG_REST_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "tierlake/rest_catalog.h"

struct tl_rest_catalog {
	int refs;             /* the caller's and one per table opened through it */
	char *uri;            /* base URI without trailing slashes */
	char *prefix;         /* the config's "prefix" override, URL-encoded, or NULL */
	char *auth_header;    /* "Authorization: Bearer <token>" or NULL: a secret */
	long timeout_ms;
	void *curl;           /* CURL *, reused between requests (keeps the connection) */
};

/* One HTTP exchange's outcome. */
typedef struct rest_response {
	long status;          /* 0 when no response came */
	char *body;           /* NUL-terminated; NULL when empty */
	size_t len;
	bool maybe_sent;      /* a transport failure after the request may have reached the server */
	bool overflow;        /* the body exceeded its limit, or an allocation failed */
} rest_response;

void tl_rest_response_free(rest_response *r);

/*
 * Sends `method` to `url` (a full URL) with the catalog's authorization, the
 * body (NULL for none) as content_type. Returns 0 when a response came (any
 * status, in r->status), -1 with err set when none did.
 */
int tl_rest_send(tl_rest_catalog *c, const char *method, const char *url, const char *content_type,
                 const char *body, rest_response *r, tl_error *err);

/* Sends a JSON body (taken as is, may be NULL) and parses a JSON answer into *out (NULL if none). */
int tl_rest_call(tl_rest_catalog *c, const char *method, const char *url, const json_t *body, long *status,
                 json_t **out, rest_response *raw, tl_error *err);

/*
 * Sets err from an error response: the code that fits the status (404
 * TL_ERR_NOT_FOUND, 409 TL_ERR_CONFLICT, 400 and 422 TL_ERR_INVALID, 401/403
 * and 5xx TL_ERR_IO) and a message "<what>: HTTP <status> <type>: <message>"
 * from the catalog's ErrorModel. Returns -1.
 */
int tl_rest_error(const tl_rest_catalog *c, const rest_response *r, const char *what, tl_error *err);

/* "<uri>/v1/<prefix>/<rest>" (rest without a leading slash), or NULL when out of memory. */
char *tl_rest_url(const tl_rest_catalog *c, const char *rest);

/* s percent-encoded (RFC 3986), or NULL when out of memory. */
char *tl_rest_encode(const char *s);

/* The namespace's levels ("a.b"), URL-encoded and joined by %1F, or NULL when out of memory. */
char *tl_rest_namespace_path(const char *ns);

/* The namespace's levels as a JSON array, or NULL when out of memory. */
json_t *tl_rest_namespace_json(const char *ns);

/* -------------------------------------------- tables kept in a catalog */

/* What a tl_ice_table opened through a catalog holds (owned by the table). */
typedef struct tl_rest_table_ref {
	tl_rest_catalog *catalog;   /* a reference of its own */
	char *ns;
	char *name;
	char *url;                  /* the table's endpoint: .../namespaces/{ns}/tables/{name} */
	bool state_unknown;         /* the last commit's answer was lost: keep its files */
} tl_rest_table_ref;

void tl_rest_table_ref_free(tl_rest_table_ref *ref);

/* Reloads t (a catalog table) from the catalog. */
int tl_rest_table_reload(tl_rest_table_ref *ref, tl_ice_table *t, tl_error *err);

/*
 * Commits md (taken over), the new metadata a commit built on t's current
 * one, through the catalog's updateTable: the snapshots and schemas md adds
 * and where "main" and the current schema now point, with t's uuid, main's
 * snapshot and (for a schema change) the current schema id and last column
 * id as requirements. On success t holds the catalog's new metadata.
 */
int tl_rest_table_commit(tl_rest_table_ref *ref, tl_ice_table *t, tl_ice_table_metadata *md, tl_error *err);

/* A table object for a LoadTableResult the catalog answered; takes ref over (freed on failure). */
tl_ice_table *tl_rest_table_from_result(tl_rest_table_ref *ref, const json_t *result, tl_error *err);

/* Parses a LoadTableResult's metadata and location into *md and *location (both the caller's). */
int tl_rest_parse_result(const tl_rest_table_ref *ref, const json_t *result, tl_ice_table_metadata **md,
                         char **location, tl_error *err);

#endif
