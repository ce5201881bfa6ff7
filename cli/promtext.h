/*
 * promtext.h: writing the Prometheus text exposition format (version
 * 0.0.4), for the daemon's /metrics (metrics.c).
 *
 * A metric family is a "# HELP" and a "# TYPE" line followed by all of its
 * samples, which must be contiguous: callers write one family at a time.
 * Label values and HELP text are escaped here, so a table named
 * "we""ird\name" cannot break the exposition.
 */
#ifndef TIERDB_PROMTEXT_H
#define TIERDB_PROMTEXT_H

#include <stdint.h>

#include "tierlake/buf.h"

/* The Content-Type of the format. */
#define TDB_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* "# HELP name help" and "# TYPE name type" (type: counter, gauge, histogram, summary, untyped). */
void tdb_prom_family(tl_buf *out, const char *name, const char *type, const char *help);

/*
 * One sample line: name{label="value",...} value. `labels` holds name,
 * value pairs ending with a NULL name (NULL for no labels). Integers are
 * written exactly; doubles so that they read back the same, +Inf/-Inf/NaN as
 * the format spells them.
 */
void tdb_prom_int(tl_buf *out, const char *name, const char *const *labels, int64_t value);
void tdb_prom_double(tl_buf *out, const char *name, const char *const *labels, double value);

#endif
