/*
 * s3.c: the S3 client: its configuration, and one request with its
 * retries (the object operations on top of it are in s3_ops.c).
 *
 * libcurl signs every request (CURLOPT_AWS_SIGV4). curl 7.88 takes the
 * query string as the canonical one without sorting it and signs the body
 * as whatever x-amz-content-sha256 says, so queries are built here already
 * canonical (sorted, encoded, "name=" for a bare name) and bodies go as
 * UNSIGNED-PAYLOAD.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "io/s3_internal.h"

#define DEFAULT_MAX_ATTEMPTS 5
#define DEFAULT_RETRY_BASE_MS 100
#define DEFAULT_RETRY_TOTAL_MS 30000
#define DEFAULT_CONNECT_TIMEOUT_MS 10000
#define DEFAULT_LOW_SPEED_TIMEOUT_S 60
#define DEFAULT_PART_SIZE ((size_t)8 << 20)
#define MIN_PART_SIZE ((size_t)5 << 20)
/* S3 error bodies are small; a larger one is cut (only the message needs it). */
#define ERROR_BODY_MAX (64 << 10)

struct tl_s3_client {
	tl_s3_endpoint ep;
	char *region;
	char *access_key;
	char *secret_key;
	char *session_token;
	char *sigv4;              /* "aws:amz:<region>:s3" */
	tl_s3_config limits;      /* numbers and the interrupt hook; its strings are not used */
	CURL *curl;
	unsigned int seed;        /* backoff jitter (rand_r: no shared state) */
};

void tl_s3_config_init(tl_s3_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_attempts = DEFAULT_MAX_ATTEMPTS;
	cfg->retry_base_ms = DEFAULT_RETRY_BASE_MS;
	cfg->retry_total_ms = DEFAULT_RETRY_TOTAL_MS;
	cfg->connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
	cfg->low_speed_timeout_s = DEFAULT_LOW_SPEED_TIMEOUT_S;
	cfg->part_size = DEFAULT_PART_SIZE;
}

/* The first of the variables that is set and not empty, and its name. */
static const char *env_first(const char *const *names, const char **which)
{
	for (; *names; names++) {
		const char *v = getenv(*names);
		if (v != NULL && v[0] != '\0') {
			*which = *names;
			return v;
		}
	}
	*which = names[-1];
	return NULL;
}

int tl_s3_config_from_env(tl_s3_config *cfg, tl_error *err)
{
	static const char *const endpoint[] = {"TIERDB_S3_ENDPOINT", "AWS_ENDPOINT_URL", NULL};
	static const char *const access[] = {"TIERDB_S3_ACCESS_KEY", "AWS_ACCESS_KEY_ID", NULL};
	static const char *const secret[] = {"TIERDB_S3_SECRET_KEY", "AWS_SECRET_ACCESS_KEY", NULL};
	static const char *const region[] = {"TIERDB_S3_REGION", "AWS_REGION", "AWS_DEFAULT_REGION", NULL};
	static const char *const token[] = {"AWS_SESSION_TOKEN", NULL};
	static const char *const addressing[] = {"TIERDB_S3_ADDRESSING", NULL};
	const char *access_var, *secret_var, *unused;

	tl_s3_config_init(cfg);
	cfg->endpoint = env_first(endpoint, &unused);
	cfg->region = env_first(region, &unused);
	cfg->session_token = env_first(token, &unused);
	cfg->access_key = env_first(access, &access_var);
	cfg->secret_key = env_first(secret, &secret_var);
	if ((cfg->access_key == NULL) != (cfg->secret_key == NULL))
		return tl_error_set(err, TL_ERR_INVALID, "S3 credentials: %s is set but %s is not",
		                    cfg->access_key ? access_var : secret_var, cfg->access_key ? secret_var : access_var);
	const char *mode = env_first(addressing, &unused);
	if (mode == NULL)
		return 0;
	if (strcmp(mode, "path") == 0)
		cfg->addressing = TL_S3_PATH_STYLE;
	else if (strcmp(mode, "virtual") == 0)
		cfg->addressing = TL_S3_VIRTUAL_HOSTED;
	else
		return tl_error_set(err, TL_ERR_INVALID, "TIERDB_S3_ADDRESSING is \"%s\": use \"path\" or \"virtual\"", mode);
	return 0;
}

int tl_s3_parse_uri(const char *uri, char **bucket, char **key, tl_error *err)
{
	const char *rest = NULL;
	if (strncmp(uri, "s3://", 5) == 0)
		rest = uri + 5;
	else if (strncmp(uri, "s3a://", 6) == 0)
		rest = uri + 6;
	size_t blen = rest ? strcspn(rest, "/") : 0;
	if (rest == NULL || blen == 0)
		return tl_error_set(err, TL_ERR_INVALID, "\"%s\" is not an S3 location (s3://bucket/key)", uri);
	*bucket = tl_strndup(rest, blen);
	*key = tl_strdup(rest[blen] == '/' ? rest + blen + 1 : "");
	if (*bucket == NULL || *key == NULL) {
		tl_free(*bucket);
		tl_free(*key);
		return tl_error_set(err, TL_ERR_NOMEM, "out of memory parsing \"%s\"", uri);
	}
	return 0;
}

/* ------------------------------------------------------------- client */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init(void)
{
	curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *dup_or_null(const char *s)
{
	return s ? tl_strdup(s) : NULL;
}

tl_s3_client *tl_s3_client_new(const tl_s3_config *cfg, tl_error *err)
{
	pthread_once(&curl_once, curl_init);
	if (curl_init_result != CURLE_OK) {
		tl_error_set(err, TL_ERR_IO, "libcurl did not initialise: %s", curl_easy_strerror(curl_init_result));
		return NULL;
	}
	if (cfg->max_attempts < 1 || cfg->retry_base_ms < 0 || cfg->retry_total_ms < 0 ||
	    cfg->connect_timeout_ms < 0 || cfg->low_speed_timeout_s < 0) {
		tl_error_set(err, TL_ERR_INVALID, "S3 configuration: max_attempts must be at least 1 and times not negative");
		return NULL;
	}
	if (cfg->part_size < MIN_PART_SIZE) {
		tl_error_set(err, TL_ERR_INVALID, "S3 configuration: part_size %zu is below S3's minimum of 5 MiB",
		             cfg->part_size);
		return NULL;
	}
	if ((cfg->access_key == NULL) != (cfg->secret_key == NULL)) {
		tl_error_set(err, TL_ERR_INVALID, "S3 configuration: an access key needs a secret key and the reverse");
		return NULL;
	}
	tl_s3_client *c = tl_calloc(1, sizeof(*c));
	if (c == NULL) {
		tl_error_nomem(err, "an S3 client");
		return NULL;
	}
	if (tl_s3_endpoint_parse(cfg, &c->ep, err) < 0) {
		tl_free(c);
		return NULL;
	}
	c->curl = curl_easy_init();
	if (c->curl == NULL) {
		tl_error_set(err, TL_ERR_NOMEM, "libcurl could not make a handle");
		tl_s3_endpoint_free(&c->ep);
		tl_free(c);
		return NULL;
	}
	c->region = tl_strdup(cfg->region ? cfg->region : "us-east-1");
	c->access_key = dup_or_null(cfg->access_key);
	c->secret_key = dup_or_null(cfg->secret_key);
	c->session_token = dup_or_null(cfg->session_token);
	size_t n = c->region ? strlen(c->region) + 16 : 0;
	c->sigv4 = c->region ? tl_malloc(n) : NULL;
	if (c->sigv4 == NULL || (cfg->access_key && !c->access_key) || (cfg->secret_key && !c->secret_key) ||
	    (cfg->session_token && !c->session_token)) {
		tl_s3_client_free(c);
		tl_error_nomem(err, "an S3 client's configuration");
		return NULL;
	}
	snprintf(c->sigv4, n, "aws:amz:%s:s3", c->region);
	c->limits = *cfg;
	c->limits.endpoint = c->limits.region = c->limits.access_key = NULL;
	c->limits.secret_key = c->limits.session_token = NULL;
	c->seed = (unsigned int)time(NULL) ^ (unsigned int)(uintptr_t)c;
	return c;
}

size_t tl_s3_client_part_size(const tl_s3_client *c)
{
	return c->limits.part_size;
}

static void free_secret(char *s)
{
	if (s) {
		/* Do not leave credentials in freed memory for a later dump to find. */
		volatile char *p = s;
		while (*p)
			*p++ = 0;
		tl_free(s);
	}
}

void tl_s3_client_free(tl_s3_client *c)
{
	if (c == NULL)
		return;
	curl_easy_cleanup(c->curl);
	tl_s3_endpoint_free(&c->ep);
	tl_free(c->region);
	tl_free(c->access_key);
	free_secret(c->secret_key);
	free_secret(c->session_token);
	tl_free(c->sigv4);
	tl_free(c);
}

/* ------------------------------------------------------------ request */

static bool is_success(long status)
{
	return status >= 200 && status < 300;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	s3_request *r = arg;
	size_t n = size * nmemb;
	if (!is_success(r->status)) {
		if (r->error_body.len < ERROR_BODY_MAX)
			tl_buf_append(&r->error_body, data, n);
	} else if (r->dst != NULL) {
		if (n > r->dst_cap - r->dst_len) {
			r->overflow = true;
			return 0;   /* makes curl fail the transfer with CURLE_WRITE_ERROR */
		}
		memcpy((char *)r->dst + r->dst_len, data, n);
		r->dst_len += n;
	} else if (r->response != NULL) {
		tl_buf_append(r->response, data, n);
		if (tl_buf_failed(r->response)) {
			r->overflow = true;   /* a body cut short must not be parsed: the transfer fails */
			return 0;
		}
	}
	return n;
}

/* Copies the value of header `name` from line into out if the line is that header. */
static void take_header(const char *line, size_t len, const char *name, char *out, size_t cap)
{
	size_t nlen = strlen(name);
	if (len <= nlen || strncasecmp(line, name, nlen) != 0 || line[nlen] != ':')
		return;
	const char *v = line + nlen + 1;
	const char *end = line + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	size_t n = (size_t)(end - v) < cap - 1 ? (size_t)(end - v) : cap - 1;
	memcpy(out, v, n);
	out[n] = '\0';
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *arg)
{
	s3_request *r = arg;
	size_t n = size * nmemb;
	if (n > 5 && strncmp(line, "HTTP/", 5) == 0) {
		/* A status line: a new response (after a 100 Continue, say). */
		const char *sp = memchr(line, ' ', n);
		r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		return n;
	}
	take_header(line, n, "ETag", r->etag, sizeof(r->etag));
	take_header(line, n, "x-amz-bucket-region", r->bucket_region, sizeof(r->bucket_region));
	return n;
}

static size_t on_upload(char *dst, size_t size, size_t nmemb, void *arg)
{
	s3_request *r = arg;
	size_t n = size * nmemb;
	size_t left = r->body_len - r->sent;
	if (n > left)
		n = left;
	memcpy(dst, (const char *)r->body + r->sent, n);
	r->sent += n;
	return n;
}

/* The config's own check, else the host's (tierlake/env.h). */
static bool is_interrupted(tl_s3_client *c)
{
	if (c->limits.interrupted != NULL)
		return c->limits.interrupted(c->limits.interrupt_arg);
	return tl_interrupt_requested();
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	tl_s3_client *c = arg;
	return is_interrupted(c);
}

static struct curl_slist *add_header(struct curl_slist *list, const char *fmt, const char *value)
{
	char line[4096];
	snprintf(line, sizeof(line), fmt, value);
	return curl_slist_append(list, line);
}

static struct curl_slist *request_headers(tl_s3_client *c, const s3_request *r)
{
	struct curl_slist *h = NULL;
	/* Signed as is; curl 7.88 would otherwise sign an empty payload hash. */
	h = curl_slist_append(h, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
	/* No 100-continue round trip before each PUT body. */
	h = curl_slist_append(h, "Expect:");
	if (r->content_type)
		h = add_header(h, "Content-Type: %s", r->content_type);
	if (r->range)
		h = add_header(h, "Range: %s", r->range);
	if (r->if_none_match)
		h = curl_slist_append(h, "If-None-Match: *");
	if (c->session_token)
		h = add_header(h, "x-amz-security-token: %s", c->session_token);
	return h;
}

static void set_method(CURL *curl, s3_request *r)
{
	if (strcmp(r->method, "HEAD") == 0) {
		curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
	} else if (strcmp(r->method, "PUT") == 0) {
		curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(curl, CURLOPT_READFUNCTION, on_upload);
		curl_easy_setopt(curl, CURLOPT_READDATA, r);
		curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_len);
	} else if (strcmp(r->method, "POST") == 0) {
		curl_easy_setopt(curl, CURLOPT_POST, 1L);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, r->body ? (const char *)r->body : "");
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	} else if (strcmp(r->method, "DELETE") == 0) {
		curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "DELETE");
	}
}

/* One attempt: the transfer's outcome (CURLE_OK when an HTTP response came). */
static CURLcode perform_once(tl_s3_client *c, s3_request *r, const char *url, char *curl_error)
{
	CURL *curl = c->curl;
	curl_easy_reset(curl);
	r->status = 0;
	r->dst_len = 0;
	r->sent = 0;
	r->overflow = false;
	r->etag[0] = r->bucket_region[0] = '\0';
	tl_buf_reset(&r->error_body);
	if (r->response)
		tl_buf_reset(r->response);

	struct curl_slist *headers = request_headers(c, r);
	curl_error[0] = '\0';
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_error);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, c->limits.connect_timeout_ms);
	curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, c->limits.low_speed_timeout_s);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(curl, CURLOPT_XFERINFODATA, c);
	if (c->access_key) {
		curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, c->sigv4);
		curl_easy_setopt(curl, CURLOPT_USERNAME, c->access_key);
		curl_easy_setopt(curl, CURLOPT_PASSWORD, c->secret_key);
	}
	set_method(curl, r);
	CURLcode rc = curl_easy_perform(curl);
	curl_slist_free_all(headers);
	if (rc == CURLE_OK) {
		curl_off_t length = -1;
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r->status);
		curl_easy_getinfo(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
		r->content_length = length;
	}
	r->interrupted = rc == CURLE_ABORTED_BY_CALLBACK;
	return rc;
}

static bool retryable_status(const s3_request *r)
{
	if (r->status >= 500 || r->status == 429)
		return true;
	/* S3 says RequestTimeout (400) when a body was too slow to arrive. */
	return r->status == 400 && r->error_body.len > 0 &&
	       memmem(r->error_body.data, r->error_body.len, "<Code>RequestTimeout</Code>", 27) != NULL;
}


static long elapsed_ms(const struct timespec *start)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (long)(now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
}

typedef enum backoff_result { BACKOFF_DONE, BACKOFF_GIVE_UP, BACKOFF_INTERRUPTED } backoff_result;

/*
 * Waits before retry number `retry` (1, 2, ...): full jitter over an
 * exponential bound, unless the wait would end past the total budget or
 * the host interrupts it.
 */
static backoff_result backoff(tl_s3_client *c, int retry, const struct timespec *start)
{
	long bound = c->limits.retry_base_ms << (retry - 1 < 20 ? retry - 1 : 20);
	long wait = bound / 2 + (bound > 1 ? (long)(rand_r(&c->seed) % (unsigned)(bound / 2 + 1)) : 0);
	if (elapsed_ms(start) + wait > c->limits.retry_total_ms)
		return BACKOFF_GIVE_UP;
	while (wait > 0) {
		if (is_interrupted(c))
			return BACKOFF_INTERRUPTED;
		long slice = wait < 50 ? wait : 50;
		struct timespec ts = {slice / 1000, (slice % 1000) * 1000000};
		nanosleep(&ts, NULL);
		wait -= slice;
	}
	return BACKOFF_DONE;
}

static int interrupted_error(tl_error *err, const s3_request *r)
{
	(void)r; /* "interrupted" is the whole message (env.h): the host knows what it asked to stop */
	return tl_error_set(err, TL_ERR_INTERRUPTED, "interrupted");
}

/*
 * Runs the request, retrying what is worth retrying. 0 when the response is
 * a 2xx (the caller checks what else it needs), else -1 with err set.
 * The caller frees r->error_body (tl_s3_request_done).
 */
int tl_s3_perform(tl_s3_client *c, s3_request *r, tl_error *err)
{
	char *url = tl_s3_url(&c->ep, r->bucket, r->key, r->query);
	tl_buf_init(&r->error_body);
	if (url == NULL)
		return tl_error_nomem(err, "the URL of S3 %s s3://%s/%s", r->op, r->bucket, r->key);
	char curl_error[CURL_ERROR_SIZE];
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	int rc = -1;
	for (r->attempts = 1;; r->attempts++) {
		if (is_interrupted(c)) {
			interrupted_error(err, r);
			break;
		}
		CURLcode cc = perform_once(c, r, url, curl_error);
		bool transport = cc != CURLE_OK && !r->overflow && !r->interrupted;
		if (cc == CURLE_OK && is_success(r->status)) {
			rc = 0;
			break;
		}
		if (r->interrupted) {
			interrupted_error(err, r);
			break;
		}
		if (r->overflow && r->response != NULL) {
			tl_error_nomem(err, "the response of S3 %s s3://%s/%s", r->op, r->bucket, r->key);
			break;
		}
		if (r->overflow) {
			tl_error_set(err, TL_ERR_IO, "S3 %s s3://%s/%s: the response is longer than the %zu bytes asked for",
			             r->op, r->bucket, r->key, r->dst_cap);
			break;
		}
		bool again = transport || retryable_status(r);
		backoff_result waited = again && r->attempts < c->limits.max_attempts ? backoff(c, r->attempts, &start)
		                                                                       : BACKOFF_GIVE_UP;
		if (waited == BACKOFF_INTERRUPTED) {
			interrupted_error(err, r);
			break;
		}
		if (waited == BACKOFF_GIVE_UP) {
			if (transport)
				tl_error_set(err, TL_ERR_IO, "S3 %s s3://%s/%s: %s%s%s (after %d attempt%s)", r->op, r->bucket,
				             r->key, curl_easy_strerror(cc), curl_error[0] ? ": " : "", curl_error,
				             r->attempts, r->attempts == 1 ? "" : "s");
			else
				tl_s3_http_error(err, r->op, r->bucket, r->key,
				                 &(tl_s3_response_error){r->status, (const char *)r->error_body.data,
				                                         r->error_body.len,
				                                         r->bucket_region[0] ? r->bucket_region : NULL,
				                                         c->region, r->attempts});
			break;
		}
	}
	tl_free(url);
	return rc;
}

void tl_s3_request_done(s3_request *r)
{
	tl_buf_free(&r->error_body);
}

const char *tl_s3_client_region(const tl_s3_client *c)
{
	return c->region;
}
