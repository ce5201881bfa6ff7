/*
 * listen.h: the listening socket of the daemon's HTTP endpoints (/metrics,
 * Stream Load), which libmicrohttpd then serves (MHD_OPTION_LISTEN_SOCKET).
 */
#ifndef TIERDB_LISTEN_H
#define TIERDB_LISTEN_H

#include <stdint.h>

#include "tierlake/error.h"

/*
 * A listening TCP socket on address:port (any address family the name
 * resolves to), or -1 with err naming `what` ("/metrics") and the settings
 * that chose them (address_var, port_var).
 */
int tdb_listen_tcp(const char *address, int64_t port, int backlog, const char *what, const char *address_var,
                   const char *port_var, tl_error *err);

#endif
