/*
 * recovery.c: adopting or rolling back interrupted tiering operations (see
 * recovery.h for the two outcomes and why they are the only two).
 *
 * The decision rests on the lake alone, read fresh under the table's lake
 * lock: a snapshot stamped with the op id means the commit happened, none
 * means it did not (commits are atomic, SPEC §6). The journal's phase only
 * guards the decision: an operation journaled 'committed' whose snapshot is
 * missing is not rolled back, because deleting its files could break a
 * lake someone else changed; it is reported for an operator instead.
 *
 * Every step here can itself be interrupted and redone: files are deleted
 * before the transaction that marks the operation aborted (a second pass
 * finds them missing and goes on), and adoption publishes in one
 * transaction guarded by the cut-line the operation started from.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "daemon.h"
#include "lake_catalog.h"
#include "pg.h"
#include "lakestep.h"
#include "recovery.h"
#include "tiering.h"
#include "tierlake/iceberg_metadata.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/io.h"

/* One op_log row to settle. */
typedef struct interrupted_op {
	const char *op_id;
	const char *phase;
	const char *details_text; /* op_log.details as JSON text */
	json_t *details;
	int64_t tier_key_lo;      /* T when the operation started */
	int64_t tier_key_hi;      /* T once it is published */
} interrupted_op;

typedef struct recovery {
	PGconn *c;
	const tdb_catalog_table *t;
	const char *label;
	tl_ice_table *lake;
} recovery;

/* ------------------------------------------------------------ reading the journal */

/* The table's tiering operations that stopped before publishing, oldest first. */
static PGresult *interrupted_ops(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	char id[24];
	tdb_int_text(t->table_id, id);
	const char *params[] = {id};
	return tdb_pg_query(c, "reading interrupted tiering operations",
	                    "SELECT op_id, phase, details::text FROM tierdb.op_log WHERE table_id = $1"
	                    " AND op_kind = 'tiering' AND phase NOT IN ('published', 'done', 'aborted')"
	                    " ORDER BY updated_at, op_id",
	                    1, params, err);
}

/* Parses the details tiering.c journals: partitions, tier_key_lo, tier_key_hi (and files, if recorded). */
static int parse_details(interrupted_op *op, tl_error *err)
{
	json_error_t jerr;
	op->details = json_loads(op->details_text, 0, &jerr);
	json_t *lo = op->details ? json_object_get(op->details, "tier_key_lo") : NULL;
	json_t *hi = op->details ? json_object_get(op->details, "tier_key_hi") : NULL;
	json_t *parts = op->details ? json_object_get(op->details, "partitions") : NULL;
	if (!json_is_integer(lo) || !json_is_integer(hi) || !json_is_array(parts))
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "operation %s: tierdb.op_log.details lacks the partitions and tier-key range a "
		                    "tiering run records (%s); settle it by hand",
		                    op->op_id, op->details_text);
	op->tier_key_lo = json_integer_value(lo);
	op->tier_key_hi = json_integer_value(hi);
	return 0;
}

/* ------------------------------------------------------------ adopting */

/*
 * Advances the cut-line to the operation's snapshot. The guard is the state
 * the operation started from: T at its lower bound and S at its snapshot's
 * parent; anything else means the catalog moved on and adopting would
 * publish over someone else's work.
 */
static int advance_cutline(const recovery *rc, const interrupted_op *op, const tl_ice_snapshot *snap, tl_error *err)
{
	bool published;
	if (tdb_cutline_publish(rc->c, rc->t->table_id, true, op->tier_key_lo, op->tier_key_hi, snap->parent_id,
	                        snap->snapshot_id, rc->lake, &published, err) < 0)
		return -1;
	if (!published)
		return tl_error_set(err, TL_ERR_CONFLICT,
		                    "operation %s committed lake snapshot %" PRId64 " over snapshot %" PRId64 " with T %" PRId64
		                    ", but the cut-line of %s has moved since; it cannot be adopted without hiding or "
		                    "repeating rows: compare tierdb.cutline with the lake table %s and settle it by hand",
		                    op->op_id, snap->snapshot_id, snap->parent_id, op->tier_key_lo, rc->label,
		                    rc->lake->location);
	return 0;
}

/* Publishes the operation's snapshot as tiering.c's publish step would have: one transaction. */
static int adopt(const recovery *rc, const interrupted_op *op, const tl_ice_snapshot *snap, tl_error *err)
{
	char id[24];
	tdb_int_text(rc->t->table_id, id);
	const char *params[] = {id, op->details_text};
	int64_t snapshot_id = snap->snapshot_id;
	if (tdb_pg_exec(rc->c, "starting to adopt an operation", "BEGIN", 0, NULL, err) < 0 ||
	    advance_cutline(rc, op, snap, err) < 0 ||
	    tdb_pg_exec(rc->c, "recording adopted partitions as tiered",
	                "UPDATE tierdb.partitions SET state = 'tiered', updated_at = now() WHERE table_id = $1"
	                " AND partition_id IN (SELECT jsonb_array_elements_text($2::jsonb -> 'partitions'))",
	                2, params, err) < 0 ||
	    tdb_oplog_set_phase(rc->c, op->op_id, "published", &snapshot_id, err) < 0 ||
	    tdb_pg_exec(rc->c, "committing the adoption", "COMMIT", 0, NULL, err) < 0)
		return -1;
	tdb_log(rc->label,
	        "recovery: operation %s stopped in phase '%s' after its lake commit (snapshot %" PRId64
	        " carries its op id); adopted it: T %" PRId64 " -> %" PRId64 ", S -> %" PRId64
	        "; its heap partitions go in the drop step",
	        op->op_id, op->phase, snapshot_id, op->tier_key_lo, op->tier_key_hi, snapshot_id);
	return 0;
}

/* ------------------------------------------------------------ rolling back */

/* "schema"."name" of a partition that still exists, or false. */
static int resolve_partition(PGconn *c, const char *partition_id, tl_buf *qualified, bool *exists, tl_error *err)
{
	const char *params[] = {partition_id};
	PGresult *res = tdb_pg_query(c, "finding a sealed partition",
	                             "SELECT n.nspname, r.relname FROM pg_catalog.pg_class r"
	                             " JOIN pg_catalog.pg_namespace n ON n.oid = r.relnamespace"
	                             " WHERE r.oid = to_regclass($1)",
	                             1, params, err);
	if (res == NULL)
		return -1;
	*exists = PQntuples(res) == 1;
	if (*exists)
		tdb_pg_quote_qualified(PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1), qualified);
	PQclear(res);
	return 0;
}

/* Removes both seal triggers from a partition, if it still exists. */
static int unseal_partition(PGconn *c, const char *partition_id, tl_error *err)
{
	static const char *const triggers[] = {"tierdb_sealed", "tierdb_sealed_rows"};
	tl_buf qualified;
	tl_buf_init(&qualified);
	bool exists;
	int rc = resolve_partition(c, partition_id, &qualified, &exists, err);
	for (size_t k = 0; rc == 0 && exists && k < sizeof(triggers) / sizeof(triggers[0]); k++) {
		tl_buf sql;
		tl_buf_init(&sql);
		tl_buf_append_str(&sql, "DROP TRIGGER IF EXISTS ");
		tdb_pg_quote_ident(triggers[k], &sql);
		tl_buf_append_str(&sql, " ON ");
		tl_buf_append(&sql, qualified.data, qualified.len);
		rc = tdb_pg_exec(c, "removing a partition's seal", tdb_buf_cstr(&sql), 0, NULL, err);
		tl_buf_free(&sql);
	}
	tl_buf_free(&qualified);
	return rc;
}

/* Unseals the partitions, makes them hot and the operation aborted: one transaction. */
static int unseal_and_abort(const recovery *rc, const interrupted_op *op, tl_error *err)
{
	if (tdb_pg_exec(rc->c, "starting a rollback", "BEGIN", 0, NULL, err) < 0)
		return -1;
	json_t *parts = json_object_get(op->details, "partitions");
	size_t i;
	json_t *part;
	json_array_foreach(parts, i, part)
	{
		if (json_is_string(part) && unseal_partition(rc->c, json_string_value(part), err) < 0)
			return -1;
	}
	char id[24];
	tdb_int_text(rc->t->table_id, id);
	const char *params[] = {id, op->details_text};
	/* Only partitions this operation moved to 'sealing': a state set by anyone else stays. */
	if (tdb_pg_exec(rc->c, "recording rolled-back partitions as hot",
	                "UPDATE tierdb.partitions SET state = 'hot', updated_at = now() WHERE table_id = $1"
	                " AND state IN ('sealing', 'tiering')"
	                " AND partition_id IN (SELECT jsonb_array_elements_text($2::jsonb -> 'partitions'))",
	                2, params, err) < 0 ||
	    tdb_oplog_set_phase(rc->c, op->op_id, "aborted", NULL, err) < 0 ||
	    tdb_pg_exec(rc->c, "committing the rollback", "COMMIT", 0, NULL, err) < 0)
		return -1;
	return 0;
}

static int roll_back(const recovery *rc, const interrupted_op *op, tl_error *err)
{
	/* The journal recorded a lake snapshot the lake does not have: someone changed the lake. */
	if (strcmp(op->phase, "committed") == 0)
		return tl_error_set(err, TL_ERR_CONFLICT,
		                    "operation %s is journaled as committed to the lake, but no snapshot of %s carries "
		                    "its op id (expired or replaced by another writer?); it is neither adopted nor "
		                    "rolled back: inspect tierdb.op_log and the lake table and settle it by hand",
		                    op->op_id, rc->lake->location);
	int deleted, missing;
	tdb_lake_remove_op_files(rc->lake, json_object_get(op->details, "files"), rc->label, op->op_id, &deleted,
	                         &missing);
	if (unseal_and_abort(rc, op, err) < 0)
		return -1;
	size_t nparts = json_array_size(json_object_get(op->details, "partitions"));
	tdb_log(rc->label,
	        "recovery: operation %s stopped in phase '%s' before any lake commit (no snapshot carries its op "
	        "id); rolled it back: %d data file%s deleted (%d already gone), seal removed from %zu "
	        "partition%s [%" PRId64 ", %" PRId64 "), phase 'aborted'; tiering moves those rows again",
	        op->op_id, op->phase, deleted, deleted == 1 ? "" : "s", missing, nparts, nparts == 1 ? "" : "s",
	        op->tier_key_lo, op->tier_key_hi);
	return 0;
}

/* ------------------------------------------------------------ the pass */

static int settle(const recovery *rc, interrupted_op *op, tl_error *err)
{
	if (parse_details(op, err) < 0)
		return -1;
	const tl_ice_snapshot *snap = tdb_lake_snapshot_of_op(rc->lake, op->op_id);
	int status = snap != NULL ? adopt(rc, op, snap, err) : roll_back(rc, op, err);
	if (status < 0) {
		tdb_abort_transaction(rc->c);
		tl_error_prefix(err, "recovering operation %s", op->op_id);
	}
	return status;
}

/* Settles every row of `ops` with the lake opened under the lock; returns how many. */
static int settle_all(recovery *rc, PGresult *ops, tl_error *err)
{
	rc->lake = tdb_lake_open(rc->t, err);
	if (rc->lake == NULL) {
		tl_error_prefix(err, "opening the lake table to recover interrupted operations");
		return -1;
	}
	int settled = 0;
	for (int i = 0; i < PQntuples(ops); i++) {
		interrupted_op op;
		memset(&op, 0, sizeof(op));
		op.op_id = PQgetvalue(ops, i, 0);
		op.phase = PQgetvalue(ops, i, 1);
		op.details_text = PQgetvalue(ops, i, 2);
		int status = settle(rc, &op, err);
		json_decref(op.details);
		if (status < 0)
			return -1;
		settled++;
	}
	return settled;
}

int tdb_recover_tiering(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	PGresult *ops = interrupted_ops(c, t, err);
	if (ops == NULL)
		return -1;
	if (PQntuples(ops) == 0) {
		PQclear(ops);
		return 0;
	}
	/* Every lake commit holds this lock: the lake cannot change while the decision is made. */
	if (tdb_lake_lock(c, t->table_id, true, err) < 0) {
		PQclear(ops);
		return -1;
	}
	recovery rc = {c, t, tdb_table_label(t), NULL};
	int settled = settle_all(&rc, ops, err);
	tl_ice_table_free(rc.lake);
	PQclear(ops);
	tl_error ignored;
	tl_error_clear(&ignored);
	tdb_lake_lock(c, t->table_id, false, &ignored);
	return settled;
}
