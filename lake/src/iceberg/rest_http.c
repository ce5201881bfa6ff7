/*
 * rest_http.c: the REST catalog client's HTTP: one libcurl handle per
 * catalog (reused, so requests share a connection), JSON bodies in and out,
 * URLs under the catalog's prefix, and the catalog's ErrorModel turned into
 * a tl_error.
 *
 * Requests are not retried here: a retried commit could apply twice, and
 * the other calls are cheap for the caller to repeat. The Authorization
 * header is the only place a token goes; no message quotes it.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/rest_internal.h"
#include "common/json_load.h"

/* A catalog's answers are metadata JSON; more than this is refused rather than held. */
#define RESPONSE_MAX ((size_t)256 << 20)
/* How much of the catalog's error message goes into ours. */
#define ERROR_MESSAGE_MAX 300

void tl_rest_response_free(rest_response *r)
{
	tl_free(r->body);
	memset(r, 0, sizeof(*r));
}

typedef struct sink {
	rest_response *r;
	size_t cap;
} sink;

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	sink *s = arg;
	rest_response *r = s->r;
	size_t n = size * nmemb;
	if (n > RESPONSE_MAX - r->len) {
		r->overflow = true;
		return 0;   /* makes curl fail the transfer with CURLE_WRITE_ERROR */
	}
	if (r->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		while (cap < r->len + n + 1)
			cap *= 2;
		char *p = tl_realloc(r->body, cap);
		if (p == NULL) {
			r->overflow = true;
			return 0;
		}
		r->body = p;
		s->cap = cap;
	}
	memcpy(r->body + r->len, data, n);
	r->len += n;
	r->body[r->len] = '\0';
	return n;
}

/* Transport failures that say the request never reached the server. */
static bool never_sent(CURLcode rc)
{
	return rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY ||
	       rc == CURLE_COULDNT_CONNECT || rc == CURLE_UNSUPPORTED_PROTOCOL || rc == CURLE_URL_MALFORMAT ||
	       rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_OUT_OF_MEMORY;
}

int tl_rest_send(tl_rest_catalog *c, const char *method, const char *url, const char *content_type,
                 const char *body, rest_response *r, tl_error *err)
{
	memset(r, 0, sizeof(*r));
	CURL *curl = c->curl;
	curl_easy_reset(curl);
	struct curl_slist *headers = NULL, *h;
	char ctype[128];
	snprintf(ctype, sizeof(ctype), "Content-Type: %s", content_type ? content_type : "application/json");
	const char *fixed[] = {"Accept: application/json", "Expect:",
	                       body ? ctype : NULL, c->auth_header};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		if (fixed[i] == NULL)
			continue;
		h = curl_slist_append(headers, fixed[i]);
		if (h == NULL) {
			curl_slist_free_all(headers);
			return tl_error_set(err, TL_ERR_NOMEM, "REST catalog %s: out of memory for a request", c->uri);
		}
		headers = h;
	}
	sink s = {r, 0};
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
	if (body != NULL) {
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	}
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, c->timeout_ms < 10000 ? c->timeout_ms : 10000L);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");   /* gzip if the server offers it */
	CURLcode rc = curl_easy_perform(curl);
	curl_slist_free_all(headers);
	if (r->overflow) {
		tl_rest_response_free(r);
		r->maybe_sent = true;
		return tl_error_set(err, TL_ERR_NOMEM, "REST catalog %s: the answer to %s was larger than %zu MiB or "
		                    "could not be held in memory", c->uri, method, RESPONSE_MAX >> 20);
	}
	if (rc != CURLE_OK) {
		tl_rest_response_free(r);
		r->maybe_sent = !never_sent(rc);
		return tl_error_set(err, TL_ERR_IO, "REST catalog %s: %s request failed: %s", c->uri, method,
		                    curl_easy_strerror(rc));
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r->status);
	return 0;
}

int tl_rest_call(tl_rest_catalog *c, const char *method, const char *url, const json_t *body, long *status,
                 json_t **out, rest_response *raw, tl_error *err)
{
	*out = NULL;
	memset(raw, 0, sizeof(*raw)); /* nothing sent, until tl_rest_send says otherwise */
	char *text = NULL;
	if (body != NULL) {
		text = tl_json_dumps(body, JSON_COMPACT);
		if (text == NULL)
			return tl_error_set(err, TL_ERR_NOMEM, "REST catalog %s: out of memory for a request body", c->uri);
	}
	int rc = tl_rest_send(c, method, url, NULL, text, raw, err);
	tl_free(text);
	if (rc < 0)
		return -1;
	*status = raw->status;
	if (raw->status >= 200 && raw->status < 300 && raw->len > 0) {
		json_error_t jerr;
		*out = tl_json_loadb(raw->body, raw->len, 0, &jerr);
		if (*out == NULL)
			return tl_error_set(err, TL_ERR_CORRUPT, "REST catalog %s: %s %s answered HTTP %ld with invalid JSON: %s",
			                    c->uri, method, url, raw->status, jerr.text);
	}
	return 0;
}

int tl_rest_error(const tl_rest_catalog *c, const rest_response *r, const char *what, tl_error *err)
{
	const char *type = "", *message = "";
	json_t *doc = NULL;
	if (r->body != NULL) {
		doc = tl_json_loadb(r->body, r->len, 0, NULL);
		json_t *e = json_object_get(doc, "error");
		if (json_is_string(json_object_get(e, "type")))
			type = json_string_value(json_object_get(e, "type"));
		if (json_is_string(json_object_get(e, "message")))
			message = json_string_value(json_object_get(e, "message"));
	}
	tl_error_code code = TL_ERR_IO;
	if (r->status == 404)
		code = TL_ERR_NOT_FOUND;
	else if (r->status == 409)
		code = TL_ERR_CONFLICT;
	else if (r->status == 400 || r->status == 406 || r->status == 422)
		code = TL_ERR_INVALID;
	const char *hint = "";
	if (r->status == 401 || r->status == 419)
		hint = " (the catalog refused the credentials: check TIERDB_CATALOG_TOKEN or TIERDB_CATALOG_CREDENTIAL)";
	else if (r->status == 403)
		hint = " (the credentials are not allowed to do this)";
	tl_error_set(err, code, "%s: REST catalog %s answered HTTP %ld%s%s%s%.*s%s", what, c->uri, r->status,
	             type[0] ? " " : "", type, message[0] ? ": " : "", ERROR_MESSAGE_MAX, message, hint);
	json_decref(doc);
	return -1;
}

/* Appends s percent-encoded (RFC 3986 unreserved characters stay) to out at *n; false if it does not fit. */
static bool encode_into(char *out, size_t cap, size_t *n, const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		bool plain = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		             ch == '-' || ch == '_' || ch == '.' || ch == '~';
		if (*n + (plain ? 1 : 3) >= cap)
			return false;
		if (plain) {
			out[(*n)++] = (char)ch;
		} else {
			out[(*n)++] = '%';
			out[(*n)++] = hex[ch >> 4];
			out[(*n)++] = hex[ch & 15];
		}
	}
	out[*n] = '\0';
	return true;
}

char *tl_rest_encode(const char *s)
{
	size_t cap = 3 * strlen(s) + 1, n = 0;
	char *out = tl_malloc(cap);
	if (out != NULL && !encode_into(out, cap, &n, s, strlen(s))) {
		tl_free(out);
		return NULL;
	}
	return out;
}

char *tl_rest_namespace_path(const char *ns)
{
	/* Levels are separated by the unit separator (0x1F), itself encoded. */
	size_t cap = 3 * strlen(ns) + 1, n = 0;
	char *out = tl_malloc(cap);
	if (out == NULL)
		return NULL;
	out[0] = '\0';
	const char *p = ns;
	for (;;) {
		size_t len = strcspn(p, ".");
		if (!encode_into(out, cap, &n, p, len) || (p[len] == '.' && !encode_into(out, cap, &n, "\x1f", 1))) {
			tl_free(out);
			return NULL;
		}
		if (p[len] != '.')
			break;
		p += len + 1;
	}
	return out;
}

json_t *tl_rest_namespace_json(const char *ns)
{
	json_t *levels = json_array();
	if (levels == NULL)
		return NULL;
	const char *p = ns;
	for (;;) {
		size_t len = strcspn(p, ".");
		if (json_array_append_new(levels, json_stringn(p, len)) < 0) {
			json_decref(levels);
			return NULL;
		}
		if (p[len] != '.')
			return levels;
		p += len + 1;
	}
}

char *tl_rest_url(const tl_rest_catalog *c, const char *rest)
{
	size_t n = strlen(c->uri) + (c->prefix ? strlen(c->prefix) + 1 : 0) + strlen(rest) + 8;
	char *url = tl_malloc(n);
	if (url == NULL)
		return NULL;
	if (c->prefix != NULL)
		snprintf(url, n, "%s/v1/%s/%s", c->uri, c->prefix, rest);
	else
		snprintf(url, n, "%s/v1/%s", c->uri, rest);
	return url;
}
