/*
 * s3_internal.h: what the S3 client's files share: the parts that need no
 * server (URLs, the few XML elements S3 answers with, error messages; tested
 * on their own in lake/tests/test_s3_client.c) and one request (s3.c) that
 * the operations (s3_ops.c) are made of.
 */
#ifndef TIERLAKE_S3_INTERNAL_H
#define TIERLAKE_S3_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/s3.h"

/* Appends s percent-encoded as SigV4 wants (unreserved bytes kept; '/' too when keep_slash). */
void tl_s3_uri_encode(tl_buf *out, const char *s, bool keep_slash);

/* An endpoint split into its parts; the strings are the struct's own. */
typedef struct tl_s3_endpoint {
	char *scheme;      /* "http" or "https" */
	char *host;        /* with ":port" when there is one */
	char *path;        /* "" or "/prefix" without a trailing '/' */
	bool path_style;
} tl_s3_endpoint;

/* From cfg->endpoint (or AWS's for cfg->region) and cfg->addressing. */
int tl_s3_endpoint_parse(const tl_s3_config *cfg, tl_s3_endpoint *ep, tl_error *err);
void tl_s3_endpoint_free(tl_s3_endpoint *ep);
/*
 * The request URL for bucket and key (key may be empty: the bucket itself)
 * with an already canonical query (sorted, encoded, "name=" for an empty
 * value) or NULL. A new string to free().
 */
char *tl_s3_url(const tl_s3_endpoint *ep, const char *bucket, const char *key, const char *query);

/* The decoded text of the first <tag>...</tag> in xml[0..len), or NULL. A new string. */
char *tl_s3_xml_text(const char *xml, size_t len, const char *tag);
/*
 * Finds the next <tag>...</tag> at or after *pos; points *inner and
 * *inner_len at its (undecoded) contents and moves *pos past it.
 */
bool tl_s3_xml_next(const char *xml, size_t len, const char *tag, size_t *pos, const char **inner,
                    size_t *inner_len);

/*
 * An ISO-8601 UTC time as S3 writes LastModified ("2024-05-01T12:30:05.123Z",
 * fraction optional) in ms since the epoch; 0 for anything else.
 */
int64_t tl_s3_parse_time_ms(const char *text);

/* What a failed response said, for tl_s3_http_error. */
typedef struct tl_s3_response_error {
	long status;
	const char *body;            /* may be NULL (HEAD) */
	size_t body_len;
	const char *bucket_region;   /* the x-amz-bucket-region header, or NULL */
	const char *request_region;  /* the region the request was signed for */
	int attempts;
} tl_s3_response_error;

/*
 * Sets err for a failed request: "S3 <op> s3://bucket/key: HTTP <status>
 * <Code>: <Message>", with the region the server names when the bucket is
 * elsewhere. 404 is TL_ERR_NOT_FOUND, 412 TL_ERR_CONFLICT, else TL_ERR_IO.
 * Returns -1.
 */
int tl_s3_http_error(tl_error *err, const char *op, const char *bucket, const char *key,
                     const tl_s3_response_error *resp);

/* The multipart part size the client was configured with. */
size_t tl_s3_client_part_size(const tl_s3_client *c);

/*
 * tl_s3_input_open and tl_s3_output_create over an existing client (the S3
 * storage shares one per process); with owns_client the object frees it on
 * close (and on failure here), otherwise the client must outlive it.
 */
tl_input *tl_s3_input_over(tl_s3_client *client, bool owns_client, const char *uri, tl_error *err);
tl_output *tl_s3_output_over(tl_s3_client *client, bool owns_client, const char *uri, bool if_absent,
                             tl_error *err);

/* ------------------------------------------------- requests (s3.c) */

/* One request and what came back. Callers fill the first block. */
typedef struct s3_request {
	const char *method;        /* GET, HEAD, PUT, POST, DELETE */
	const char *op;            /* for messages: "GET", "list", "upload part 3", ... */
	const char *bucket;
	const char *key;
	const char *query;         /* canonical, or NULL */
	const char *range;         /* "bytes=a-b" or NULL */
	bool if_none_match;
	const char *content_type;
	const void *body;          /* PUT/POST payload */
	size_t body_len;
	void *dst;                 /* a 2xx body goes here (at most dst_cap bytes) ... */
	size_t dst_cap;
	tl_buf *response;          /* ... or here, or is dropped */

	long status;
	size_t dst_len;
	bool overflow;             /* the 2xx body was longer than dst_cap */
	bool interrupted;
	tl_buf error_body;         /* a non-2xx body */
	char etag[256];
	char bucket_region[64];
	int attempts;
	size_t sent;               /* upload position in body */
	int64_t content_length;    /* of the response, -1 if it had none */
} s3_request;

/*
 * Runs the request, retrying what is worth retrying. 0 when the response is
 * a 2xx (the caller checks what else it needs), else -1 with err set.
 * Free r's buffers with tl_s3_request_done either way.
 */
int tl_s3_perform(tl_s3_client *c, s3_request *r, tl_error *err);
void tl_s3_request_done(s3_request *r);
/* The region requests are signed for. */
const char *tl_s3_client_region(const tl_s3_client *c);

#endif
