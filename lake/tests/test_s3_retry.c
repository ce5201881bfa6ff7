/*
 * test_s3_retry.c: which failures the S3 client retries and which it
 * reports at once, against a scripted HTTP responder on 127.0.0.1 that
 * answers each connection with the next canned response (S3Proxy cannot
 * be made to fail on purpose).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test.h"
#include "tierlake/s3.h"

#define MAX_SCRIPT 8

typedef struct responder {
	int fd;
	int port;
	const char *responses[MAX_SCRIPT];
	int nresponses;
	int served;            /* requests answered */
	char last_request[4096];
	pthread_t thread;
} responder;

/* Reads one request: the headers, then Content-Length bytes of body. */
static void read_request(int conn, char *buf, size_t cap)
{
	size_t len = 0;
	char *end = NULL;
	while (len < cap - 1 && end == NULL) {
		ssize_t n = recv(conn, buf + len, cap - 1 - len, 0);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		end = strstr(buf, "\r\n\r\n");
	}
	const char *cl = strcasestr(buf, "\r\nContent-Length:");
	long body = cl ? strtol(cl + 17, NULL, 10) : 0;
	long have = end ? (long)(len - (size_t)(end + 4 - buf)) : 0;
	char sink[4096];
	while (have < body) {
		ssize_t n = recv(conn, sink, sizeof(sink), 0);
		if (n <= 0)
			break;
		have += n;
	}
}

static void *serve(void *arg)
{
	responder *r = arg;
	for (int i = 0; i < r->nresponses; i++) {
		int conn = accept(r->fd, NULL, NULL);
		if (conn < 0)
			break;
		read_request(conn, r->last_request, sizeof(r->last_request));
		/* The canned text is status line and headers, a blank line, the body. */
		const char *resp = r->responses[i];
		const char *body = strstr(resp, "\r\n\r\n") + 4;
		char head[1024];
		int n = snprintf(head, sizeof(head), "%.*sContent-Length: %zu\r\nConnection: close\r\n\r\n",
		                 (int)(body - 2 - resp), resp, strlen(body));
		ssize_t sent = send(conn, head, (size_t)n, MSG_NOSIGNAL);
		sent = send(conn, body, strlen(body), MSG_NOSIGNAL);
		(void)sent;
		r->served++;
		close(conn);
	}
	return NULL;
}

static int responder_start(responder *r)
{
	r->fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(addr);
	if (r->fd < 0 || bind(r->fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(r->fd, 8) != 0 ||
	    getsockname(r->fd, (struct sockaddr *)&addr, &len) != 0)
		return -1;
	r->port = ntohs(addr.sin_port);
	return pthread_create(&r->thread, NULL, serve, r) == 0 ? 0 : -1;
}

/* Stops accepting (a thread still in accept() gets an error) and joins. */
static void responder_stop(responder *r)
{
	shutdown(r->fd, SHUT_RDWR);
	pthread_join(r->thread, NULL);
	close(r->fd);
}

#define SLOW_DOWN                                                                                  \
	"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\n\r\n"                                    \
	"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
#define INTERNAL "HTTP/1.1 500 Internal Server Error\r\n\r\n"
#define DENIED                                                                                     \
	"HTTP/1.1 403 Forbidden\r\nContent-Type: application/xml\r\n\r\n"                                    \
	"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
#define PARTIAL "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-3/10\r\n\r\nabcd"

static tl_s3_client *client_for_at(const responder *r, int attempts, const char *host,
                                   tl_s3_addressing addressing)
{
	char endpoint[64];
	snprintf(endpoint, sizeof(endpoint), "http://%s:%d", host, r->port);
	tl_s3_config cfg;
	tl_s3_config_init(&cfg);
	cfg.endpoint = endpoint;
	cfg.addressing = addressing;
	cfg.access_key = "AKIDEXAMPLE";
	cfg.secret_key = "secret";
	cfg.session_token = "session-token-xyz";
	cfg.max_attempts = attempts;
	cfg.retry_base_ms = 1;
	tl_error err;
	tl_error_clear(&err);
	return tl_s3_client_new(&cfg, &err);
}

static tl_s3_client *client_for(const responder *r, int attempts)
{
	return client_for_at(r, attempts, "127.0.0.1", TL_S3_ADDRESSING_AUTO);
}

/* Serves r's script to one 4-byte ranged GET of s3://b/k; the GET's result. */
static int get4_from(responder *r, int attempts, char *buf, tl_error *err)
{
	tl_error_clear(err);
	if (responder_start(r) != 0)
		return tl_error_set(err, TL_ERR_IO, "the responder did not start");
	tl_s3_client *c = client_for(r, attempts);
	int rc = tl_s3_get_range(c, "s3://b/k", 0, buf, 4, err);
	tl_s3_client_free(c);
	responder_stop(r);
	return rc;
}

TEST(s3_retry_slowdown_and_5xx_then_succeed)
{
	responder r = {.responses = {SLOW_DOWN, INTERNAL, PARTIAL}, .nresponses = 3};
	tl_error err;
	char buf[4];
	CHECK_OK(get4_from(&r, 5, buf, &err), &err);
	CHECK(memcmp(buf, "abcd", 4) == 0);
	CHECK_INT(r.served, 3);
	/* The request is signed, ranged, and carries the session token. */
	CHECK(strstr(r.last_request, "GET /b/k HTTP/1.1") != NULL);
	CHECK(strstr(r.last_request, "Range: bytes=0-3") != NULL);
	CHECK(strstr(r.last_request, "Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") != NULL);
	CHECK(strstr(r.last_request, "x-amz-security-token: session-token-xyz") != NULL);
	CHECK(strstr(r.last_request, "secret\r\n") == NULL);
}

TEST(s3_retry_gives_up_after_max_attempts_with_the_last_error)
{
	responder r = {.responses = {SLOW_DOWN, SLOW_DOWN}, .nresponses = 2};
	CHECK_INT(responder_start(&r), 0);
	tl_s3_client *c = client_for(&r, 2);
	tl_error err;
	tl_error_clear(&err);
	int rc = tl_s3_put(c, "s3://b/dir/k", "x", 1, false, &err);
	tl_s3_client_free(c);
	responder_stop(&r);
	CHECK_INT(rc, -1);
	CHECK_INT(r.served, 2);
	CHECK_STR(err.message, "S3 PUT s3://b/dir/k: HTTP 503 SlowDown: Please reduce your request rate. (after 2 attempts)");
}

TEST(s3_access_denied_is_not_retried)
{
	responder r = {.responses = {DENIED, PARTIAL}, .nresponses = 2};
	tl_error err;
	char buf[4];
	CHECK_INT(get4_from(&r, 5, buf, &err), -1);
	CHECK_INT(r.served, 1);
	CHECK_INT(err.code, TL_ERR_IO);
	CHECK(strstr(err.message, "s3://b/k: HTTP 403 AccessDenied: Access Denied") != NULL);
}

TEST(s3_complete_failure_inside_a_200_is_an_error)
{
	/* S3 may answer CompleteMultipartUpload with 200 and an <Error> body. */
	responder r = {.responses = {"HTTP/1.1 200 OK\r\n\r\n"
	                             "<InitiateMultipartUploadResult><UploadId>u-1</UploadId></InitiateMultipartUploadResult>",
	                             "HTTP/1.1 200 OK\r\nETag: \"e1\"\r\n\r\n",
	                             "HTTP/1.1 200 OK\r\n\r\n"
	                             "<Error><Code>InternalError</Code><Message>try again</Message></Error>",
	                             "HTTP/1.1 204 No Content\r\n\r\n"},
	               .nresponses = 4};
	CHECK_INT(responder_start(&r), 0);
	tl_s3_client *c = client_for(&r, 1);
	tl_error err;
	tl_error_clear(&err);
	tl_s3_upload *u = tl_s3_upload_begin(c, "s3://b/big", &err);
	int rc = u ? tl_s3_upload_part(u, "data", 4, &err) : -1;
	if (rc == 0)
		rc = tl_s3_upload_complete(u, false, &err);
	tl_s3_upload_free(u);   /* not completed: aborts (the 4th response) */
	tl_s3_client_free(c);
	responder_stop(&r);
	CHECK_INT(rc, -1);
	CHECK(strstr(err.message, "S3 complete multipart upload s3://b/big: HTTP 200 InternalError: try again") != NULL);
	CHECK_INT(r.served, 4);
	CHECK(strstr(r.last_request, "DELETE /b/big?uploadId=u-1 HTTP/1.1") != NULL);
}

TEST(s3_virtual_hosted_requests_name_the_bucket_in_the_host)
{
	/* curl resolves any *.localhost name to the loopback address itself. */
	responder r = {.responses = {PARTIAL}, .nresponses = 1};
	CHECK_INT(responder_start(&r), 0);
	tl_s3_client *c = client_for_at(&r, 1, "localhost", TL_S3_VIRTUAL_HOSTED);
	tl_error err;
	tl_error_clear(&err);
	char buf[4];
	int rc = tl_s3_get_range(c, "s3://lake/dir/a b.parquet", 0, buf, 4, &err);
	tl_s3_client_free(c);
	responder_stop(&r);
	CHECK_OK(rc, &err);
	CHECK(strstr(r.last_request, "GET /dir/a%20b.parquet HTTP/1.1\r\n") != NULL);
	char host[64];
	snprintf(host, sizeof(host), "\r\nHost: lake.localhost:%d\r\n", r.port);
	CHECK(strstr(r.last_request, host) != NULL);
}
