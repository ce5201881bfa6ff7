/*
 * listen.c: a listening TCP socket for the daemon's HTTP endpoints (listen.h).
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "listen.h"

int tdb_listen_tcp(const char *address, int64_t port, int backlog, const char *what, const char *address_var,
                   const char *port_var, tl_error *err)
{
	char service[16];
	snprintf(service, sizeof(service), "%d", (int)port);
	struct addrinfo hints, *found = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	int gai = getaddrinfo(address, service, &hints, &found);
	if (gai != 0)
		return tl_error_set(err, TL_ERR_INVALID, "%s='%s' is not an address to listen on: %s", address_var, address,
		                    gai_strerror(gai));
	int fd = -1, saved = 0;
	for (struct addrinfo *a = found; a != NULL && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		int on = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
		if (bind(fd, a->ai_addr, a->ai_addrlen) < 0 || listen(fd, backlog) < 0) {
			saved = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(found);
	if (fd < 0)
		return tl_error_set(err, TL_ERR_IO, "cannot listen for %s on %s port %d (%s, %s): %s", what, address,
		                    (int)port, address_var, port_var, strerror(saved));
	return fd;
}
