/*
 * s3.h: a small S3 client (libcurl with its SigV4 signing) and the io.h
 * interfaces over S3 objects.
 *
 * Objects are named by URIs, "s3://bucket/key" ("s3a://" is read the same).
 * A tl_s3_client holds one libcurl handle, so its connections are reused;
 * use one client from one thread at a time (clients are independent, so
 * one per thread is fine). Every failure fills the caller's tl_error with a
 * message that names the operation, the object, the HTTP status and the S3
 * error code of the response (never a credential): 404 is
 * TL_ERR_NOT_FOUND, a failed If-None-Match precondition (412) is
 * TL_ERR_CONFLICT, anything else TL_ERR_IO. Server errors (5xx), 429 and
 * SlowDown, and transport failures are retried with exponential backoff,
 * bounded in attempts and in total time.
 *
 * Bodies are signed as UNSIGNED-PAYLOAD (curl 7.88 does not hash bodies).
 */
#ifndef TIERLAKE_S3_H
#define TIERLAKE_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tierlake/error.h"
#include "tierlake/io.h"
#include "tierlake/storage.h"

typedef enum tl_s3_addressing {
	TL_S3_ADDRESSING_AUTO = 0,  /* path-style with an endpoint, virtual-hosted without */
	TL_S3_PATH_STYLE,           /* endpoint/bucket/key */
	TL_S3_VIRTUAL_HOSTED        /* bucket.endpoint-host/key */
} tl_s3_addressing;

/*
 * Where and as whom. The strings belong to the caller and need to live only
 * until tl_s3_client_new (or the *_open/_create below) returns: the client
 * copies them. NULL means unset.
 */
typedef struct tl_s3_config {
	const char *endpoint;       /* "http://127.0.0.1:9000"; NULL: https://s3.<region>.amazonaws.com */
	const char *region;         /* NULL: us-east-1 */
	const char *access_key;     /* NULL with secret_key NULL: anonymous, unsigned requests */
	const char *secret_key;
	const char *session_token;  /* temporary credentials (sent as x-amz-security-token) */
	tl_s3_addressing addressing;
	int max_attempts;           /* tries per request, >= 1 (default 5) */
	long retry_base_ms;         /* first backoff, doubled per retry (default 100) */
	long retry_total_ms;        /* no retry starts after this long (default 30000) */
	long connect_timeout_ms;    /* default 10000 */
	long low_speed_timeout_s;   /* abort a transfer slower than 1 byte/s this long (default 60) */
	size_t part_size;           /* tl_s3_output_create's multipart part size (default 8 MiB, >= 5 MiB) */
	/*
	 * Called between attempts, while waiting to retry and during transfers;
	 * returning true stops the request at once with TL_ERR_INTERRUPTED
	 * "interrupted" (a host's cancel check, such as a Postgres interrupt).
	 * When NULL, the host's check set with tl_set_interrupt_check is used.
	 */
	bool (*interrupted)(void *arg);
	void *interrupt_arg;
} tl_s3_config;

/* Sets the defaults above. */
void tl_s3_config_init(tl_s3_config *cfg);
/*
 * tl_s3_config_init, then the environment: TIERDB_S3_ENDPOINT,
 * TIERDB_S3_ACCESS_KEY, TIERDB_S3_SECRET_KEY, TIERDB_S3_REGION, each falling
 * back to AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_REGION then AWS_DEFAULT_REGION; AWS_SESSION_TOKEN; TIERDB_S3_ADDRESSING
 * ("path" or "virtual"). The strings point into the environment, so make the
 * client before the environment changes. An access key without a secret (or
 * the reverse) or an unknown addressing is TL_ERR_INVALID naming the variable.
 */
int tl_s3_config_from_env(tl_s3_config *cfg, tl_error *err);

/* Splits "s3://bucket/key" (or "s3a://"); new strings to free(). The key may be empty. */
int tl_s3_parse_uri(const char *uri, char **bucket, char **key, tl_error *err);

typedef struct tl_s3_client tl_s3_client;

/* TL_ERR_INVALID for a malformed endpoint or an option out of range. */
tl_s3_client *tl_s3_client_new(const tl_s3_config *cfg, tl_error *err);
void tl_s3_client_free(tl_s3_client *client);

/*
 * Reads exactly len bytes at offset into buf (a ranged GET). An object
 * shorter than offset + len is TL_ERR_IO saying how many bytes came.
 */
int tl_s3_get_range(tl_s3_client *client, const char *uri, uint64_t offset, void *buf, size_t len,
                    tl_error *err);
/* The object's size in bytes (HEAD). */
int tl_s3_size(tl_s3_client *client, const char *uri, uint64_t *size, tl_error *err);
/*
 * Stores len bytes as the object (one PUT). With if_absent, an existing
 * object is left alone and the call fails with TL_ERR_CONFLICT
 * (If-None-Match: *).
 */
int tl_s3_put(tl_s3_client *client, const char *uri, const void *data, size_t len, bool if_absent,
              tl_error *err);
/* Deletes the object; a missing object is not an error (S3 says 204 either way). */
int tl_s3_delete(tl_s3_client *client, const char *uri, tl_error *err);

typedef struct tl_s3_object {
	char *key;        /* the whole key, without "s3://bucket/" */
	uint64_t size;
	int64_t mtime_ms; /* LastModified, ms since the epoch; 0 when absent or unreadable */
} tl_s3_object;

typedef struct tl_s3_listing {
	tl_s3_object *objects;
	size_t count;
} tl_s3_listing;

/*
 * Every object whose key starts with the URI's key ("s3://b/dir/" lists
 * dir/ recursively), in S3's order (by key bytes), following continuation
 * tokens. out is filled on success; free it with tl_s3_listing_free.
 */
int tl_s3_list(tl_s3_client *client, const char *uri_prefix, tl_s3_listing *out, tl_error *err);
void tl_s3_listing_free(tl_s3_listing *listing);
/* Whether any object's key starts with the URI's key (one request of at most one key). */
int tl_s3_list_any(tl_s3_client *client, const char *uri_prefix, bool *any, tl_error *err);

/*
 * A multipart upload: parts are numbered 1, 2, ... in the order they are
 * sent; every part but the last must be at least 5 MiB (S3 refuses the
 * completion otherwise). The upload keeps the client, which must outlive it.
 */
typedef struct tl_s3_upload tl_s3_upload;

tl_s3_upload *tl_s3_upload_begin(tl_s3_client *client, const char *uri, tl_error *err);
int tl_s3_upload_part(tl_s3_upload *upload, const void *data, size_t len, tl_error *err);
/* Makes the object out of the parts sent; if_absent as for tl_s3_put. Does not free. */
int tl_s3_upload_complete(tl_s3_upload *upload, bool if_absent, tl_error *err);
/* Aborts the upload unless it completed (best effort), then frees; NULL is fine. */
void tl_s3_upload_free(tl_s3_upload *upload);
int tl_s3_upload_parts(const tl_s3_upload *upload);

/*
 * A tl_input over an object: its size from a HEAD, read_at a ranged GET
 * (a read past the size is TL_ERR_CORRUPT without a request).
 */
tl_input *tl_s3_input_open(const tl_s3_config *cfg, const char *uri, tl_error *err);
/*
 * A tl_output that becomes the object at finish(): writes are buffered up
 * to cfg->part_size; an object that fits is one PUT at finish(), a larger
 * one a multipart upload whose parts go out as the buffer fills (memory
 * stays at one part). if_absent: finish() fails with TL_ERR_CONFLICT if the
 * object exists by then (a conditional PUT or completion). close() without
 * a successful finish() aborts the upload and leaves no object.
 */
tl_output *tl_s3_output_create(const tl_s3_config *cfg, const char *uri, bool if_absent, tl_error *err);

/*
 * A tl_storage (storage.h) over S3 with this configuration: one client,
 * shared by everything the storage opens, so use it from one thread and
 * keep it until every object it opened is closed. Locations are s3:// (or
 * s3a://) URIs; create_if_absent is a PUT with If-None-Match: *, so the
 * store must support conditional writes for commits to be exclusive (AWS S3
 * since 2024, MinIO, S3Proxy; see docs/s3.md). A missing object is not an
 * error for remove (S3 does not say).
 */
tl_storage *tl_storage_s3_new(const tl_s3_config *cfg, tl_error *err);
void tl_storage_s3_free(tl_storage *storage);

#endif
