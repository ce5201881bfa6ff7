/*
 * metrics_http.c: the daemon's /metrics endpoint on libmicrohttpd
 * (metrics.h).
 *
 * libmicrohttpd parses every request and runs this file's handler in its
 * own internal polling thread; the handler only asks metrics.c for the
 * rendered text (a copy under a mutex), so it never touches the daemon's
 * Postgres connection and a slow scraper never delays a cycle.
 *
 * The listening socket is made here rather than by libmicrohttpd, so that
 * a bad address or a port in use is a startup error with the system's
 * reason and the variables to change, instead of a bare failure.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "listen.h"
#include "metrics.h"
#include "promtext.h"

static struct MHD_Daemon *http;

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned int status, const char *content_type,
                               const char *body, size_t len, const char *allow)
{
	struct MHD_Response *response = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (response == NULL)
		return MHD_NO;
	MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	if (allow != NULL)
		MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, allow);
	enum MHD_Result rc = MHD_queue_response(conn, status, response);
	MHD_destroy_response(response);
	return rc;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size, void **req_cls)
{
	(void)cls;
	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)req_cls;
	static const char plain[] = "text/plain; charset=utf-8";
	if (strcmp(url, "/metrics") != 0) {
		static const char body[] = "not found: the daemon serves GET /metrics only\n";
		return respond(conn, MHD_HTTP_NOT_FOUND, plain, body, sizeof(body) - 1, NULL);
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
		static const char body[] = "method not allowed: /metrics answers GET and HEAD\n";
		return respond(conn, MHD_HTTP_METHOD_NOT_ALLOWED, plain, body, sizeof(body) - 1, "GET, HEAD");
	}
	size_t len;
	char *text = tdb_metrics_render(&len);
	if (text == NULL) {
		static const char body[] = "out of memory rendering the metrics\n";
		return respond(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, plain, body, sizeof(body) - 1, NULL);
	}
	enum MHD_Result rc = respond(conn, MHD_HTTP_OK, TDB_PROM_CONTENT_TYPE, text, len, NULL);
	tl_free(text);
	return rc;
}

int tdb_metrics_listen(const char *address, int64_t port, tl_error *err)
{
	int fd = tdb_listen_tcp(address, port, 64, "/metrics", "TIERDB_METRICS_ADDRESS", "TIERDB_METRICS_PORT",
	                        err);
	if (fd < 0)
		return -1;
	/*
	 * One internal thread: a scrape costs a copy under a mutex, so a pool
	 * would only add threads. It starts with SIGTERM and SIGINT blocked, so
	 * they reach the daemon's thread, whose sleeps and waits they end.
	 */
	sigset_t stops, saved;
	sigemptyset(&stops);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stops, &saved);
	http = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL, answer, NULL,
	                        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_CONNECTION_TIMEOUT,
	                        (unsigned int)30, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)64, MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (http == NULL) {
		close(fd);
		return tl_error_set(err, TL_ERR_IO, "cannot start the /metrics endpoint on %s port %d (TIERDB_METRICS_PORT)",
		                    address, (int)port);
	}
	return 0;
}

void tdb_metrics_stop(void)
{
	if (http != NULL)
		MHD_stop_daemon(http); /* closes the listening socket it was given */
	http = NULL;
}
