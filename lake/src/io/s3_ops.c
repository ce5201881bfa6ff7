/*
 * s3_ops.c: the S3 object operations: ranged GET, HEAD, PUT (and
 * put-if-absent), DELETE, ListObjectsV2 and multipart upload, each one or
 * more requests through tl_s3_perform (s3.c), which signs and retries.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/s3_internal.h"

/* Runs op on the bucket and key of uri; the shape every public call shares. */
typedef int (*uri_op)(tl_s3_client *c, const char *bucket, const char *key, void *arg, tl_error *err);

static int with_uri(tl_s3_client *c, const char *uri, uri_op fn, void *arg, tl_error *err)
{
	char *bucket, *key;
	if (tl_s3_parse_uri(uri, &bucket, &key, err) < 0)
		return -1;
	int rc = fn(c, bucket, key, arg, err);
	tl_free(bucket);
	tl_free(key);
	return rc;
}

static int run_request(tl_s3_client *c, s3_request *r, tl_error *err)
{
	int rc = tl_s3_perform(c, r, err);
	tl_s3_request_done(r);
	return rc;
}

typedef struct range_args {
	uint64_t offset;
	void *buf;
	size_t len;
	const char *op;   /* for messages; NULL: "GET (bytes=a-b)" */
} range_args;

static int get_range(tl_s3_client *c, const char *bucket, const char *key, void *arg, tl_error *err)
{
	range_args *a = arg;
	char range[64];
	snprintf(range, sizeof(range), "bytes=%llu-%llu", (unsigned long long)a->offset,
	         (unsigned long long)(a->offset + a->len - 1));
	char op[96];
	if (a->op != NULL)
		snprintf(op, sizeof(op), "%s", a->op);
	else
		snprintf(op, sizeof(op), "GET (%s)", range);
	s3_request r = {.method = "GET", .op = op, .bucket = bucket, .key = key, .range = range,
	                .dst = a->buf, .dst_cap = a->len};
	if (run_request(c, &r, err) < 0)
		return -1;
	/* A server that ignores Range answers 200 with the whole object. */
	if (r.status != 206 && !(r.status == 200 && a->offset == 0))
		return tl_error_set(err, TL_ERR_IO, "S3 %s s3://%s/%s: HTTP %ld instead of 206 Partial Content", op,
		                    bucket, key, r.status);
	if (r.dst_len != a->len)
		return tl_error_set(err, TL_ERR_IO,
		                    "S3 %s s3://%s/%s: short read: %zu of %zu bytes (the object ends before byte %llu)",
		                    op, bucket, key, r.dst_len, a->len, (unsigned long long)(a->offset + a->len));
	return 0;
}

int tl_s3_get_range(tl_s3_client *c, const char *uri, uint64_t offset, void *buf, size_t len, tl_error *err)
{
	if (len == 0)
		return 0;
	range_args a = {offset, buf, len, NULL};
	return with_uri(c, uri, get_range, &a, err);
}

static int head_size(tl_s3_client *c, const char *bucket, const char *key, void *arg, tl_error *err)
{
	s3_request r = {.method = "HEAD", .op = "HEAD", .bucket = bucket, .key = key};
	if (run_request(c, &r, err) == 0) {
		if (r.content_length < 0)
			return tl_error_set(err, TL_ERR_IO, "S3 HEAD s3://%s/%s: no Content-Length in the response", bucket,
			                    key);
		*(uint64_t *)arg = (uint64_t)r.content_length;
		return 0;
	}
	if (r.status < 400 || r.status >= 500)
		return -1;
	/*
	 * A HEAD response has no body, so no S3 error code: ask for the first
	 * byte to learn it (NoSuchKey or NoSuchBucket, SignatureDoesNotMatch...).
	 */
	tl_error detail;
	tl_error_clear(&detail);
	char byte;
	range_args a = {0, &byte, 1, "HEAD"};
	if (get_range(c, bucket, key, &a, &detail) < 0 && err != NULL && detail.code == err->code)
		*err = detail;
	return -1;
}

int tl_s3_size(tl_s3_client *c, const char *uri, uint64_t *size, tl_error *err)
{
	return with_uri(c, uri, head_size, size, err);
}

typedef struct put_args {
	const void *data;
	size_t len;
	bool if_absent;
} put_args;

static int put_object(tl_s3_client *c, const char *bucket, const char *key, void *arg, tl_error *err)
{
	put_args *a = arg;
	s3_request r = {.method = "PUT", .op = a->if_absent ? "PUT (if absent)" : "PUT", .bucket = bucket,
	                .key = key, .if_none_match = a->if_absent, .content_type = "application/octet-stream",
	                .body = a->data, .body_len = a->len};
	return run_request(c, &r, err);
}

int tl_s3_put(tl_s3_client *c, const char *uri, const void *data, size_t len, bool if_absent, tl_error *err)
{
	put_args a = {data, len, if_absent};
	return with_uri(c, uri, put_object, &a, err);
}

static int delete_object(tl_s3_client *c, const char *bucket, const char *key, void *arg, tl_error *err)
{
	s3_request r = {.method = "DELETE", .op = "DELETE", .bucket = bucket, .key = key};
	return run_request(c, &r, err);
}

int tl_s3_delete(tl_s3_client *c, const char *uri, tl_error *err)
{
	return with_uri(c, uri, delete_object, NULL, err);
}

/* -------------------------------------------------------------- list */

/* Whether xml[0..len) has a <tag> element (no allocation). */
static bool has_element(const char *xml, size_t len, const char *tag)
{
	size_t pos = 0, inner_len;
	const char *inner;
	return tl_s3_xml_next(xml, len, tag, &pos, &inner, &inner_len);
}

/* Adds the <Contents> of one ListObjectsV2 page to out. */
static int parse_list_page(const tl_buf *page, tl_buf *objects, const char *bucket, tl_error *err)
{
	const char *xml = (const char *)page->data;
	size_t pos = 0, len;
	const char *contents;
	while (tl_s3_xml_next(xml, page->len, "Contents", &pos, &contents, &len)) {
		char *key = tl_s3_xml_text(contents, len, "Key");
		char *size = tl_s3_xml_text(contents, len, "Size");
		char *end = NULL;
		unsigned long long n = size ? strtoull(size, &end, 10) : 0;
		bool ok = key != NULL && size != NULL && end != size && *end == '\0';
		tl_free(size);
		if (!ok) {
			tl_free(key);
			/* Both elements there but not both copied: memory, not the server. */
			if (has_element(contents, len, "Key") && has_element(contents, len, "Size") && (key == NULL || size == NULL))
				return tl_error_nomem(err, "an entry of the listing of s3://%s", bucket);
			return tl_error_set(err, TL_ERR_CORRUPT, "S3 list s3://%s: an entry without a key or a size", bucket);
		}
		/* Unknown (0) when missing: callers that act on age treat that as too young. */
		char *modified = tl_s3_xml_text(contents, len, "LastModified");
		tl_s3_object o = {key, n, tl_s3_parse_time_ms(modified)};
		tl_free(modified);
		tl_buf_append(objects, &o, sizeof(o));
		if (tl_buf_failed(objects)) {
			tl_free(key);
			return tl_error_nomem(err, "the listing of s3://%s", bucket);
		}
	}
	return 0;
}

static void list_query(tl_buf *q, const char *prefix, const char *token, bool just_one)
{
	tl_buf_reset(q);
	/* In canonical (sorted) order: continuation-token < list-type < max-keys < prefix. */
	if (token) {
		tl_buf_append_str(q, "continuation-token=");
		tl_s3_uri_encode(q, token, false);
		tl_buf_append_byte(q, '&');
	}
	tl_buf_append_str(q, just_one ? "list-type=2&max-keys=1&prefix=" : "list-type=2&prefix=");
	tl_s3_uri_encode(q, prefix, false);
	tl_buf_append_byte(q, 0);
}

typedef struct list_args {
	tl_buf objects;   /* of tl_s3_object */
	bool just_one;    /* stop after the first page of at most one key */
} list_args;

/* Whether a ListObjectsV2 page says more follow (<IsTruncated>true</IsTruncated>), without allocating. */
static bool is_truncated(const tl_buf *page)
{
	size_t pos = 0, len;
	const char *inner;
	return tl_s3_xml_next((const char *)page->data, page->len, "IsTruncated", &pos, &inner, &len) && len == 4 &&
	       memcmp(inner, "true", 4) == 0;
}

static int list_pages(tl_s3_client *c, const char *bucket, const char *prefix, void *arg, tl_error *err)
{
	list_args *args = arg;
	tl_buf *objects = &args->objects;
	tl_buf query, page;
	tl_buf_init(&query);
	tl_buf_init(&page);
	char *token = NULL;
	int rc = 0;
	do {
		list_query(&query, prefix, token, args->just_one);
		/* The request is on the bucket; the prefix is named in the op. */
		char op[512];
		snprintf(op, sizeof(op), "list (prefix \"%s\")", prefix);
		rc = tl_buf_check(&query, err, "a listing's query");
		if (rc == 0) {
			s3_request r = {.method = "GET", .op = op, .bucket = bucket, .key = "",
			                .query = (const char *)query.data, .response = &page};
			rc = run_request(c, &r, err);
		}
		if (rc == 0)
			rc = parse_list_page(&page, objects, bucket, err);
		tl_free(token);
		token = NULL;
		if (rc == 0 && !args->just_one && is_truncated(&page)) {
			/* A listing that goes on must go on: a token lost to memory is an error, not the end. */
			token = tl_s3_xml_text((const char *)page.data, page.len, "NextContinuationToken");
			if (token == NULL)
				rc = tl_error_set(err, TL_ERR_CORRUPT,
				                  "S3 list s3://%s/%s: a truncated listing without a continuation token (or no "
				                  "memory for it)", bucket, prefix);
		}
	} while (rc == 0 && token != NULL);
	tl_free(token);
	tl_buf_free(&query);
	tl_buf_free(&page);
	return rc;
}

int tl_s3_list(tl_s3_client *c, const char *uri_prefix, tl_s3_listing *out, tl_error *err)
{
	list_args args = {.just_one = false};
	tl_buf_init(&args.objects);
	int rc = with_uri(c, uri_prefix, list_pages, &args, err);
	out->objects = (tl_s3_object *)args.objects.data;
	out->count = args.objects.len / sizeof(tl_s3_object);
	if (rc < 0)
		tl_s3_listing_free(out);
	return rc;
}

int tl_s3_list_any(tl_s3_client *c, const char *uri_prefix, bool *any, tl_error *err)
{
	list_args args = {.just_one = true};
	tl_buf_init(&args.objects);
	int rc = with_uri(c, uri_prefix, list_pages, &args, err);
	*any = rc == 0 && args.objects.len > 0;
	tl_s3_listing listing = {(tl_s3_object *)args.objects.data, args.objects.len / sizeof(tl_s3_object)};
	tl_s3_listing_free(&listing);
	return rc;
}

void tl_s3_listing_free(tl_s3_listing *listing)
{
	for (size_t i = 0; i < listing->count; i++)
		tl_free(listing->objects[i].key);
	tl_free(listing->objects);
	listing->objects = NULL;
	listing->count = 0;
}

/* ---------------------------------------------------------- multipart */

struct tl_s3_upload {
	tl_s3_client *client;
	char *bucket;
	char *key;
	char *upload_id;
	tl_buf etags;        /* char * per part, in part order */
	bool completed;
};

int tl_s3_upload_parts(const tl_s3_upload *u)
{
	return (int)(u->etags.len / sizeof(char *));
}

static void upload_query(tl_buf *q, const tl_s3_upload *u, int part)
{
	tl_buf_reset(q);
	/* Canonical order: partNumber sorts before uploadId. */
	if (part > 0)
		tl_buf_printf(q, "partNumber=%d&", part);
	tl_buf_append_str(q, "uploadId=");
	tl_s3_uri_encode(q, u->upload_id, false);
	tl_buf_append_byte(q, 0);
}

tl_s3_upload *tl_s3_upload_begin(tl_s3_client *c, const char *uri, tl_error *err)
{
	tl_s3_upload *u = tl_calloc(1, sizeof(*u));
	if (u == NULL) {
		tl_error_nomem(err, "a multipart upload of %s", uri);
		return NULL;
	}
	u->client = c;
	tl_buf_init(&u->etags);
	if (tl_s3_parse_uri(uri, &u->bucket, &u->key, err) < 0) {
		tl_free(u);
		return NULL;
	}
	tl_buf response;
	tl_buf_init(&response);
	s3_request r = {.method = "POST", .op = "create multipart upload", .bucket = u->bucket, .key = u->key,
	                .query = "uploads=", .content_type = "application/octet-stream", .response = &response};
	if (run_request(c, &r, err) == 0) {
		u->upload_id = tl_s3_xml_text((const char *)response.data, response.len, "UploadId");
		if (u->upload_id == NULL && has_element((const char *)response.data, response.len, "UploadId"))
			tl_error_nomem(err, "the upload id of s3://%s/%s", u->bucket, u->key);
		else if (u->upload_id == NULL)
			tl_error_set(err, TL_ERR_CORRUPT, "S3 create multipart upload s3://%s/%s: no UploadId in the answer",
			             u->bucket, u->key);
	}
	tl_buf_free(&response);
	if (u->upload_id == NULL) {
		u->completed = true;   /* nothing to abort */
		tl_s3_upload_free(u);
		return NULL;
	}
	return u;
}

int tl_s3_upload_part(tl_s3_upload *u, const void *data, size_t len, tl_error *err)
{
	int part = tl_s3_upload_parts(u) + 1;
	tl_buf query;
	tl_buf_init(&query);
	upload_query(&query, u, part);
	if (tl_buf_check(&query, err, "an upload part's query") < 0) {
		tl_buf_free(&query);
		return -1;
	}
	char op[48];
	snprintf(op, sizeof(op), "upload part %d", part);
	s3_request r = {.method = "PUT", .op = op, .bucket = u->bucket, .key = u->key,
	                .query = (const char *)query.data, .content_type = "application/octet-stream",
	                .body = data, .body_len = len};
	int rc = tl_s3_perform(u->client, &r, err);
	if (rc == 0 && r.etag[0] == '\0')
		rc = tl_error_set(err, TL_ERR_IO, "S3 %s s3://%s/%s: no ETag in the answer", op, u->bucket, u->key);
	if (rc == 0) {
		/* A part whose ETag is not kept cannot be completed: the upload fails here, not at completion. */
		char *etag = tl_strdup(r.etag);
		if (etag != NULL)
			tl_buf_append(&u->etags, &etag, sizeof(etag));
		if (etag == NULL || tl_buf_failed(&u->etags)) {
			tl_free(etag);
			rc = tl_error_nomem(err, "the ETag of S3 %s s3://%s/%s", op, u->bucket, u->key);
		}
	}
	tl_s3_request_done(&r);
	tl_buf_free(&query);
	return rc;
}

int tl_s3_upload_complete(tl_s3_upload *u, bool if_absent, tl_error *err)
{
	tl_buf body, query, response;
	tl_buf_init(&body);
	tl_buf_init(&query);
	tl_buf_init(&response);
	tl_buf_append_str(&body, "<CompleteMultipartUpload>");
	char **etags = (char **)u->etags.data;
	for (int i = 0; i < tl_s3_upload_parts(u); i++)
		/* ETags are quoted hex: nothing in them needs escaping in XML. */
		tl_buf_printf(&body, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", i + 1, etags[i]);
	tl_buf_append_str(&body, "</CompleteMultipartUpload>");
	upload_query(&query, u, 0);
	if (tl_buf_check(&body, err, "a multipart completion") < 0 ||
	    tl_buf_check(&query, err, "a multipart completion's query") < 0) {
		tl_buf_free(&body);
		tl_buf_free(&query);
		return -1;
	}
	s3_request r = {.method = "POST", .op = if_absent ? "complete multipart upload (if absent)"
	                                                   : "complete multipart upload",
	                .bucket = u->bucket, .key = u->key, .query = (const char *)query.data,
	                .if_none_match = if_absent, .content_type = "application/xml", .body = body.data,
	                .body_len = body.len, .response = &response};
	int rc = tl_s3_perform(u->client, &r, err);
	/* S3 can answer 200 and put the failure in the body. */
	char *code = rc == 0 ? tl_s3_xml_text((const char *)response.data, response.len, "Code") : NULL;
	if (code != NULL)
		rc = tl_s3_http_error(err, r.op, u->bucket, u->key,
		                      &(tl_s3_response_error){200, (const char *)response.data, response.len, NULL,
		                                              tl_s3_client_region(u->client), r.attempts});
	tl_free(code);
	if (rc == 0)
		u->completed = true;
	tl_s3_request_done(&r);
	tl_buf_free(&body);
	tl_buf_free(&query);
	tl_buf_free(&response);
	return rc;
}

void tl_s3_upload_free(tl_s3_upload *u)
{
	if (u == NULL)
		return;
	if (!u->completed) {
		tl_buf query;
		tl_buf_init(&query);
		upload_query(&query, u, 0);
		tl_error ignored;
		tl_error_clear(&ignored);
		/* Without its query the DELETE would remove the object itself: no abort then (S3 expires the parts). */
		if (!tl_buf_failed(&query)) {
			s3_request r = {.method = "DELETE", .op = "abort multipart upload", .bucket = u->bucket,
			                .key = u->key, .query = (const char *)query.data};
			run_request(u->client, &r, &ignored);
		}
		tl_buf_free(&query);
	}
	char **etags = (char **)u->etags.data;
	for (int i = 0; i < tl_s3_upload_parts(u); i++)
		tl_free(etags[i]);
	tl_buf_free(&u->etags);
	tl_free(u->bucket);
	tl_free(u->key);
	tl_free(u->upload_id);
	tl_free(u);
}
