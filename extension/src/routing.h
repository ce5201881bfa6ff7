/*-------------------------------------------------------------------------
 *
 * routing.h
 *		The privilege boundary of routed writes and the read protocol, and
 *		their row checks (routing.c): SQL-callable functions declared in
 *		sql/0.1/30-routing.sql, and the module's settings.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_ROUTING_H
#define TIERDB_ROUTING_H

#include "fmgr.h"

/* Defines tierdb.max_pin_ttl; called by _PG_init. */
extern void routing_init(void);

/*
 * Whether a routed write or read-protocol call on `relid` is running in this
 * backend (its innermost window): its own lookups of the table's lake copy
 * may then read past row-level security, as they return no rows to the caller.
 */
extern bool routing_window_open(Oid relid);

extern Datum tierdb_routing_entry(PG_FUNCTION_ARGS);
extern Datum tierdb_bridge_select(PG_FUNCTION_ARGS);
extern Datum tierdb_bridge_routing_state(PG_FUNCTION_ARGS);
extern Datum tierdb_bridge_insert_update(PG_FUNCTION_ARGS);
extern Datum tierdb_bridge_update_delete(PG_FUNCTION_ARGS);
extern Datum tierdb_bridge_pin_begin(PG_FUNCTION_ARGS);
extern Datum tierdb_bridge_pin_end(PG_FUNCTION_ARGS);
extern Datum tierdb_checked_row(PG_FUNCTION_ARGS);

#endif
