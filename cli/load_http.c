/*
 * load_http.c: Stream Load's HTTP endpoint, POST /api/load/{schema}.{table}
 * (load.h; what a load does is load.c's).
 *
 * libmicrohttpd parses the requests, in a pool of TIERDB_LOAD_THREADS
 * threads; this file checks the method, the bearer token and the body's
 * size, then hands the body to load.c chunk by chunk as it arrives, so a
 * load holds one partial line in memory, never its body.
 *
 * The label is taken on the first call for a request, before any byte of
 * the body is read: a replayed label, a concurrent duplicate or an unknown
 * table is answered at once (libmicrohttpd then closes the connection
 * instead of reading a body nobody needs). libmicrohttpd lets a response
 * be queued only before the body or after all of it, so a body that grows
 * past TIERDB_LOAD_MAX_BYTES without a Content-Length is read to its end
 * (and dropped) before its 413 goes out.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "listen.h"
#include "load.h"
#include "metrics.h"

#define PATH_PREFIX "/api/load/"

static struct MHD_Daemon *http;

/* One request's state, from its headers to its completion. */
typedef struct request {
	tdb_load *load;          /* NULL once answered without a body */
	tdb_load_response resp;
	bool answered;           /* a response is queued */
} request;

static enum MHD_Result queue(struct MHD_Connection *conn, request *r)
{
	const tdb_load_response *resp = &r->resp;
	const char *body = resp->body != NULL ? resp->body : "{}";
	struct MHD_Response *response =
		MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	if (response == NULL)
		return MHD_NO;
	MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (resp->label != NULL)
		MHD_add_response_header(response, "X-TierDB-Label", resp->label);
	if (resp->replayed)
		MHD_add_response_header(response, "X-TierDB-Replayed", "true");
	if (resp->status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(response, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"tierdb\"");
	if (resp->status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "POST");
	enum MHD_Result rc = MHD_queue_response(conn, resp->status, response);
	MHD_destroy_response(response);
	r->answered = true;
	tdb_metrics_load_request(resp->table, resp->status);
	return rc;
}

static enum MHD_Result refuse(struct MHD_Connection *conn, request *r, unsigned status, const char *message)
{
	tdb_load_respond_error(&r->resp, status, message);
	return queue(conn, r);
}

/*
 * Whether the Authorization header carries the token: "Bearer <token>".
 * The comparison takes the same time wherever the first difference lies,
 * so the token cannot be guessed a byte at a time from response times.
 */
static bool authorized(struct MHD_Connection *conn, const char *token)
{
	const char *given = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (given == NULL || strncasecmp(given, "Bearer ", 7) != 0)
		return false;
	given += 7;
	while (*given == ' ')
		given++;
	size_t n = strlen(given), m = strlen(token);
	unsigned char diff = n != m;
	for (size_t i = 0; i < m; i++)
		diff |= (unsigned char)token[i] ^ (unsigned char)(i < n ? given[i] : 0);
	return diff == 0;
}

/* The first call of a request: everything that can be decided from its headers. */
static enum MHD_Result begin(const tdb_load_config *cfg, struct MHD_Connection *conn, request *r, const char *url,
                             const char *method)
{
	if (strncmp(url, PATH_PREFIX, strlen(PATH_PREFIX)) != 0 || url[strlen(PATH_PREFIX)] == '\0')
		return refuse(conn, r, MHD_HTTP_NOT_FOUND,
		              "not found: Stream Load is POST /api/load/<schema>.<table> (docs/stream-load.md)");
	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
		return refuse(conn, r, MHD_HTTP_METHOD_NOT_ALLOWED,
		              "method not allowed: Stream Load takes POST with the rows as JSON lines in the body");
	if (!authorized(conn, cfg->token))
		return refuse(conn, r, MHD_HTTP_UNAUTHORIZED,
		              "unauthorized: send the daemon's TIERDB_LOAD_TOKEN as 'Authorization: Bearer <token>'");
	const char *length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (length != NULL && strtoll(length, NULL, 10) > cfg->max_bytes) {
		char text[300];
		snprintf(text, sizeof(text),
		         "the body is %s bytes, more than this daemon takes in one load (TIERDB_LOAD_MAX_BYTES=%lld): "
		         "split it into several loads",
		         length, (long long)cfg->max_bytes);
		return refuse(conn, r, MHD_HTTP_CONTENT_TOO_LARGE, text);
	}
	const char *label = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-TierDB-Label");
	r->load = tdb_load_start(cfg, url + strlen(PATH_PREFIX), label, &r->resp);
	return r->load == NULL ? queue(conn, r) : MHD_YES;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size, void **req_cls)
{
	(void)version;
	const tdb_load_config *cfg = cls;
	request *r = *req_cls;
	if (r == NULL) {
		r = calloc(1, sizeof(*r));
		if (r == NULL)
			return MHD_NO;
		*req_cls = r;
		return begin(cfg, conn, r, url, method);
	}
	if (*upload_data_size > 0) {
		if (r->load != NULL) {
			if (tdb_load_bytes(r->load) + (int64_t)*upload_data_size > cfg->max_bytes) {
				char text[300];
				snprintf(text, sizeof(text),
				         "the body is more than this daemon takes in one load (TIERDB_LOAD_MAX_BYTES=%lld bytes): "
				         "nothing was applied; split it into several loads under new labels",
				         (long long)cfg->max_bytes);
				tdb_load_reject(r->load, MHD_HTTP_CONTENT_TOO_LARGE, text);
			}
			tdb_load_feed(r->load, upload_data, *upload_data_size);
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (r->answered)
		return MHD_YES;
	tdb_load_finish(r->load, &r->resp);
	return queue(conn, r);
}

/* After the response went out, or the connection broke: a load cut short is failed, and its connection closed. */
static void completed(void *cls, struct MHD_Connection *conn, void **req_cls, enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)conn;
	request *r = *req_cls;
	if (r == NULL)
		return;
	const char *why = toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN
	                      ? "the daemon stopped before the body ended: nothing was applied; send it again"
	                  : toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED
	                      ? "the body stopped arriving (TIERDB_LOAD connection timeout): nothing was applied"
	                      : "the client's connection closed before the body ended: nothing was applied";
	tdb_load_free(r->load, why);
	tdb_load_response_clear(&r->resp);
	free(r);
	*req_cls = NULL;
}

int tdb_load_listen(const tdb_load_config *cfg, tl_error *err)
{
	int fd = tdb_listen_tcp(cfg->address, cfg->port, 128, "Stream Load", "TIERDB_LOAD_ADDRESS", "TIERDB_LOAD_PORT",
	                        err);
	if (fd < 0)
		return -1;
	/* The pool's threads start with SIGTERM and SIGINT blocked, so stops reach the daemon's thread. */
	sigset_t stops, saved;
	sigemptyset(&stops);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stops, &saved);
	http = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL, answer, (void *)cfg,
	                        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_THREAD_POOL_SIZE,
	                        (unsigned int)cfg->threads, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
	                        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)300, MHD_OPTION_CONNECTION_LIMIT,
	                        (unsigned int)1024, MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (http == NULL) {
		close(fd);
		return tl_error_set(err, TL_ERR_IO, "cannot start the Stream Load endpoint on %s port %d (TIERDB_LOAD_PORT)",
		                    cfg->address, (int)cfg->port);
	}
	return 0;
}

void tdb_load_stop(void)
{
	if (http != NULL)
		MHD_stop_daemon(http);
	http = NULL;
}
