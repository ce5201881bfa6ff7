/*
 * fault.c: named fault points (see fault.h for the points and what a
 * crash at each one leaves behind).
 *
 * A point is a plain call at a phase boundary; with TIERDB_FAULT unset it
 * costs one getenv. The kill is raise(SIGKILL) rather than abort() or
 * _exit(): SIGKILL cannot be caught, dumps no core and runs nothing, so the
 * test sees what an operator's `kill -9` or the OOM killer would leave.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "fault.h"
#include "tierlake/buf.h"

/* Every point the code passes; fault.h documents each. */
static const char *const known_points[] = {
	"tiering-before-seal",
	"tiering-after-seal",
	"tiering-mid-copy",
	"tiering-before-commit",
	"tiering-after-commit",
	"tiering-after-commit-recorded",
	"tiering-after-publish",
	"tiering-mid-drop",
	"tiering-mid-keep",
	"fold-before-commit",
	"fold-after-commit",
	"fold-after-commit-recorded",
	"retention-before-commit",
	"retention-after-commit",
	"retention-after-commit-recorded",
	"retention-before-publish-commit",
	"mirror-before-commit",
	"mirror-after-commit",
	"mirror-after-commit-recorded",
	"mirror-after-publish",
	"heap-retention-after-seal",
	"heap-retention-after-publish",
	"compaction-after-write",
	"compaction-before-lock",
	"compaction-before-commit",
	"compaction-after-commit",
	"compaction-after-commit-recorded",
	"compaction-before-publish-commit",
	"manifests-before-commit",
	"manifests-after-commit",
	"manifests-after-commit-recorded",
	"expiry-before-commit",
	"expiry-after-commit",
	"expiry-before-delete",
	"expiry-during-delete",
	"orphans-during-delete",
	"ingest-before-commit",
	"ingest-after-commit",
	"ingest-after-commit-recorded",
	"load-before-commit",
	"load-after-commit",
	"load-after-commit-recorded",
	"load-trickle-before-commit",
	"load-trickle-after-commit",
};

#define NPOINTS (sizeof(known_points) / sizeof(known_points[0]))

static bool is_known(const char *point)
{
	for (size_t i = 0; i < NPOINTS; i++)
		if (strcmp(known_points[i], point) == 0)
			return true;
	return false;
}

/* TIERDB_FAULT, or NULL when unset or empty. */
static const char *armed_point(void)
{
	const char *armed = getenv("TIERDB_FAULT");
	return (armed != NULL && armed[0] != '\0') ? armed : NULL;
}

int tdb_fault_check_env(tl_error *err)
{
	const char *armed = armed_point();
	if (armed == NULL || is_known(armed))
		return 0;
	tl_buf names;
	tl_buf_init(&names);
	for (size_t i = 0; i < NPOINTS; i++)
		tl_buf_printf(&names, "%s%s", i > 0 ? ", " : "", known_points[i]);
	tl_buf_append_byte(&names, 0);
	tl_error_set(err, TL_ERR_INVALID, "TIERDB_FAULT='%s' is not a fault point; the known points are: %s", armed,
	             (const char *)names.data);
	tl_buf_free(&names);
	return -1;
}

void tdb_fault(const char *point)
{
	if (!is_known(point))
		abort(); /* a call site naming a point fault.h does not list: fix the code */
	const char *armed = armed_point();
	if (armed == NULL || strcmp(armed, point) != 0)
		return;
	tdb_log(NULL, "fault point %s reached (TIERDB_FAULT): killing this process with SIGKILL", point);
	raise(SIGKILL);
}
