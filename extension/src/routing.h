/*-------------------------------------------------------------------------
 *
 * routing.h
 *		The privilege bridge of routed writes and the read protocol
 *		(routing.c): SQL-callable only, declared in sql/0.1/30-routing.sql.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_ROUTING_H
#define TIERDB_ROUTING_H

#include "fmgr.h"

extern Datum tierdb_bridge_any(PG_FUNCTION_ARGS);
extern Datum tierdb_bridge_select(PG_FUNCTION_ARGS);
extern Datum tierdb_bridge_insert_update(PG_FUNCTION_ARGS);
extern Datum tierdb_bridge_update_delete(PG_FUNCTION_ARGS);

#endif
