/*
 * s3_io.c: tl_input and tl_output (io.h) over S3 objects, so the Parquet
 * and Avro readers and writers run on S3 unchanged.
 *
 * An input is a HEAD for the size, then one ranged GET per read_at. An
 * output holds at most one part in memory: an object that fits in a part is
 * one PUT at finish(); a larger one becomes a multipart upload whose parts
 * go out as the buffer fills, completed by finish() and aborted by a close()
 * that comes without a successful finish().
 */
#include <stdlib.h>
#include <string.h>

#include "io/s3_internal.h"

typedef struct s3_input {
	tl_input base;
	tl_s3_client *client;
	bool owns_client;
	char *uri;
} s3_input;

static int s3_read_at(tl_input *in, uint64_t offset, void *buf, size_t len, tl_error *err)
{
	s3_input *s = (s3_input *)in;
	if (offset > in->size || len > in->size - offset)
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "%s: read of %zu bytes at offset %llu is past the end of the object (%llu bytes)",
		                    in->name, len, (unsigned long long)offset, (unsigned long long)in->size);
	return tl_s3_get_range(s->client, s->uri, offset, buf, len, err);
}

static void s3_input_close(tl_input *in)
{
	s3_input *s = (s3_input *)in;
	if (s->owns_client)
		tl_s3_client_free(s->client);
	tl_free(s->uri);
	tl_free(s);
}

tl_input *tl_s3_input_over(tl_s3_client *client, bool owns_client, const char *uri, tl_error *err)
{
	uint64_t size;
	if (tl_s3_size(client, uri, &size, err) < 0) {
		if (owns_client)
			tl_s3_client_free(client);
		return NULL;
	}
	s3_input *s = tl_calloc(1, sizeof(*s));
	char *copy = s ? tl_strdup(uri) : NULL;
	if (copy == NULL) {
		tl_free(s);
		if (owns_client)
			tl_s3_client_free(client);
		tl_error_nomem(err, "an input for %s", uri);
		return NULL;
	}
	s->client = client;
	s->owns_client = owns_client;
	s->uri = copy;
	s->base.read_at = s3_read_at;
	s->base.close = s3_input_close;
	s->base.size = size;
	s->base.name = s->uri;
	return &s->base;
}

tl_input *tl_s3_input_open(const tl_s3_config *cfg, const char *uri, tl_error *err)
{
	tl_s3_client *client = tl_s3_client_new(cfg, err);
	return client ? tl_s3_input_over(client, true, uri, err) : NULL;
}

typedef struct s3_output {
	tl_output base;
	tl_s3_client *client;
	bool owns_client;
	char *uri;
	bool if_absent;
	size_t part_size;
	tl_buf part;               /* bytes not sent yet, less than part_size */
	tl_s3_upload *upload;      /* once the first full part went out */
	bool failed;               /* a write failed: the object cannot be made */
	bool finished;
} s3_output;

static int send_part(s3_output *s, tl_error *err)
{
	if (s->upload == NULL) {
		s->upload = tl_s3_upload_begin(s->client, s->uri, err);
		if (s->upload == NULL)
			return -1;
	}
	if (tl_s3_upload_part(s->upload, s->part.data, s->part.len, err) < 0)
		return -1;
	tl_buf_reset(&s->part);
	return 0;
}

static int s3_write(tl_output *out, const void *buf, size_t len, tl_error *err)
{
	s3_output *s = (s3_output *)out;
	if (s->failed || s->finished)
		return tl_error_set(err, TL_ERR_INVALID, "%s: write after %s", out->name,
		                    s->finished ? "finish" : "a failed write");
	const uint8_t *p = buf;
	while (len > 0) {
		size_t n = s->part_size - s->part.len;
		if (n > len)
			n = len;
		tl_buf_append(&s->part, p, n);
		if (tl_buf_check(&s->part, err, "an S3 upload's part buffer") < 0) {
			s->failed = true;   /* bytes were lost: the object must never be made */
			return -1;
		}
		p += n;
		len -= n;
		out->offset += n;
		if (s->part.len == s->part_size && send_part(s, err) < 0) {
			s->failed = true;
			return -1;
		}
	}
	return 0;
}

static int s3_finish(tl_output *out, tl_error *err)
{
	s3_output *s = (s3_output *)out;
	if (s->failed || s->finished)
		return tl_error_set(err, TL_ERR_INVALID, "%s: finish after %s", out->name,
		                    s->finished ? "finish" : "a failed write");
	int rc;
	if (s->upload == NULL) {
		rc = tl_s3_put(s->client, s->uri, s->part.data, s->part.len, s->if_absent, err);
	} else {
		rc = s->part.len > 0 ? send_part(s, err) : 0;
		if (rc == 0)
			rc = tl_s3_upload_complete(s->upload, s->if_absent, err);
	}
	if (rc < 0) {
		s->failed = true;
		return -1;
	}
	s->finished = true;
	tl_buf_free(&s->part);
	return 0;
}

static void s3_output_close(tl_output *out)
{
	s3_output *s = (s3_output *)out;
	/* An upload not completed is aborted here, so no parts are left behind. */
	tl_s3_upload_free(s->upload);
	if (s->owns_client)
		tl_s3_client_free(s->client);
	tl_buf_free(&s->part);
	tl_free(s->uri);
	tl_free(s);
}

/* Whether uri names an object (a bucket and a key) that an output can make. */
static bool names_object(const char *uri, tl_error *err)
{
	char *bucket, *key;
	if (tl_s3_parse_uri(uri, &bucket, &key, err) < 0)
		return false;
	bool has_key = key[0] != '\0';
	tl_free(bucket);
	tl_free(key);
	if (!has_key)
		tl_error_set(err, TL_ERR_INVALID, "\"%s\" names a bucket, not an object", uri);
	return has_key;
}

tl_output *tl_s3_output_over(tl_s3_client *client, bool owns_client, const char *uri, bool if_absent,
                             tl_error *err)
{
	if (!names_object(uri, err)) {
		if (owns_client)
			tl_s3_client_free(client);
		return NULL;
	}
	s3_output *s = tl_calloc(1, sizeof(*s));
	char *copy = s ? tl_strdup(uri) : NULL;
	if (copy == NULL) {
		tl_free(s);
		if (owns_client)
			tl_s3_client_free(client);
		tl_error_nomem(err, "an output for %s", uri);
		return NULL;
	}
	s->client = client;
	s->owns_client = owns_client;
	s->uri = copy;
	s->if_absent = if_absent;
	s->part_size = tl_s3_client_part_size(client);
	tl_buf_init(&s->part);
	s->base.write = s3_write;
	s->base.finish = s3_finish;
	s->base.close = s3_output_close;
	s->base.name = s->uri;
	return &s->base;
}

tl_output *tl_s3_output_create(const tl_s3_config *cfg, const char *uri, bool if_absent, tl_error *err)
{
	if (!names_object(uri, err))
		return NULL;
	tl_s3_client *client = tl_s3_client_new(cfg, err);
	return client ? tl_s3_output_over(client, true, uri, if_absent, err) : NULL;
}
