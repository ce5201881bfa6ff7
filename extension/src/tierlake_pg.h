/*-------------------------------------------------------------------------
 *
 * tierlake_pg.h
 *		The lake library's headers, made safe to include in backend code.
 *
 * The lake headers include jansson.h, whose json_object() clashes with the
 * SQL function of that name fmgrprotos.h declares (utils/builtins.h), and
 * whose json_typeof() macro would rewrite fmgrprotos.h's declaration of
 * another one if that came later.  Extension files include the lake
 * through this header only: jansson's json_object is declared under
 * another name (the extension never calls it) and the macro is dropped,
 * so the include order does not matter.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_TIERLAKE_PG_H
#define TIERDB_TIERLAKE_PG_H

#define json_object tierdb_unused_jansson_json_object
#include "tierlake/error.h"
#include "tierlake/iceberg_expr.h"
#include "tierlake/iceberg_scan.h"
#include "tierlake/iceberg_schema.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/parquet.h"
#undef json_object
#undef json_typeof

#endif							/* TIERDB_TIERLAKE_PG_H */
