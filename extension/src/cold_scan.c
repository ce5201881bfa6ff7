/*-------------------------------------------------------------------------
 *
 * cold_scan.c
 *		lake@S ⊕ delta inside the backend: the "TierDB Cold Scan" custom
 *		scan and tierdb.cold_rows(); see cold_scan.h.
 *
 * A ColdReader produces the cold rows of one table for one pin:
 *
 *	1. the delta rows below T are read first, with the statement's
 *	   snapshot: every key they name (upsert or tombstone) into a set
 *	   (delta_keys.c), and the row images of the upserts as tuples;
 *	2. the lake rows at S follow, minus those whose key is in the set
 *	   (no lookup at all when the delta is empty);
 *	3. then the upserted row images.
 *
 * Each pk has one delta row (the delta's primary key), so "newest wins"
 * needs no version comparison here.
 *
 * The custom scan pushes the scan's conditions the lake can take
 * (cold_conditions.h: comparisons, IN lists, null tests and ORs of them,
 * their values computed at executor start) into the lake scan, where they
 * prune files, row groups and pages, and where the lake decides one
 * exactly on its values, the executor no longer checks it on the lake's
 * rows (the delta's row images meet every condition).  When they hold for
 * no row below T, the scan reads neither the lake nor the delta.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/hash.h"
#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "parser/parsetree.h"
#include "optimizer/restrictinfo.h"
#include "parser/parse_relation.h"
#include "port/atomics.h"
#include "storage/fd.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "cold_conditions.h"
#include "cold_scan.h"
#include "delta_keys.h"
#include "hybrid.h"
#include "lake_scan.h"
#include "seam.h"
#include "storage_profiles.h"

#define COLD_SCAN_NAME "TierDB Cold Scan"

/* tierdb.enable_cold_pushdown: the query's conditions prune the lake and are checked on its values. */
static bool enable_cold_pushdown = true;

/* tierdb.enable_parallel_cold_scan: a parallel query's workers share the lake's files. */
static bool enable_parallel_cold_scan = true;

/* ------------------------------------------------------------ the reader */

/*
 * What the processes of a parallel read of the cold rows share (the plan
 * node's DSM chunk): the leader's pin, so that every process reads the
 * same lake snapshot and delta below the same T as the leader's heap arm
 * (a worker's own pin could see a later cut-line), and the claims on the
 * plan's files and on the delta's row images.
 */
struct ColdRowsShared
{
	pg_atomic_uint32 next_task;	/* the next lake task to read */
	pg_atomic_uint32 upserts_taken;
	slock_t		mutex;			/* guards workers */
	ColdReadFigures workers;	/* what the workers that finished read, for the leader's EXPLAIN */
	int64		tier_key_hi;
	bool		has_snapshot;
	int64		snapshot_id;
	bool		has_retention_line;
	int64		retention_line;
	bool		has_metadata_location;
	char		metadata_location[FLEXIBLE_ARRAY_MEMBER];
};

Size
cold_rows_shared_size(const SeamPin *pin)
{
	return add_size(offsetof(ColdRowsShared, metadata_location),
					pin->metadata_location != NULL ? strlen(pin->metadata_location) + 1 : 1);
}

void
cold_rows_shared_init(ColdRowsShared *shared, const SeamPin *pin)
{
	pg_atomic_init_u32(&shared->next_task, 0);
	pg_atomic_init_u32(&shared->upserts_taken, 0);
	SpinLockInit(&shared->mutex);
	memset(&shared->workers, 0, sizeof(shared->workers));
	shared->tier_key_hi = pin->tier_key_hi;
	shared->has_snapshot = pin->has_snapshot;
	shared->snapshot_id = pin->snapshot_id;
	shared->has_retention_line = pin->has_retention_line;
	shared->retention_line = pin->retention_line;
	shared->has_metadata_location = pin->metadata_location != NULL;
	strcpy(shared->metadata_location, pin->metadata_location != NULL ? pin->metadata_location : "");
}


/* Adds the reading figures of `more` to `sum` (the planning ones are the same plan's in every process). */
static void
add_figures(ColdReadFigures *sum, const ColdReadFigures *more)
{
	sum->lake.files_read += more->lake.files_read;
	sum->lake.row_groups_read += more->lake.row_groups_read;
	sum->lake.row_groups_skipped += more->lake.row_groups_skipped;
	sum->lake.row_groups_skipped_by_bloom += more->lake.row_groups_skipped_by_bloom;
	sum->lake.pages_read += more->lake.pages_read;
	sum->lake.pages_skipped += more->lake.pages_skipped;
	sum->lake.rows_deleted += more->lake.rows_deleted;
	sum->lake.rows_returned += more->lake.rows_returned;
	sum->lake.rows_skipped += more->lake.rows_skipped;
	sum->lake.batches_skipped += more->lake.batches_skipped;
	sum->rows_replaced += more->rows_replaced;
	sum->rows += more->rows;
	sum->rows_from_vectors += more->rows_from_vectors;
}

void
cold_rows_shared_add(ColdRowsShared *shared, const ColdReadFigures *mine)
{
	SpinLockAcquire(&shared->mutex);
	add_figures(&shared->workers, mine);
	SpinLockRelease(&shared->mutex);
}

void
cold_rows_shared_collect(ColdRowsShared *shared, ColdReadFigures *sum)
{
	SpinLockAcquire(&shared->mutex);
	add_figures(sum, &shared->workers);
	memset(&shared->workers, 0, sizeof(shared->workers));
	SpinLockRelease(&shared->mutex);
}

void
cold_rows_shared_reset(ColdRowsShared *shared, ColdReadFigures *collected)
{
	cold_rows_shared_collect(shared, collected);
	pg_atomic_write_u32(&shared->next_task, 0);
	pg_atomic_write_u32(&shared->upserts_taken, 0);
}

/* The statement's pin of the table: the leader's in a parallel worker. */
static SeamPin
pin_of(const SeamTable *table, const ColdRowsShared *shared)
{
	SeamPin		pin = {0};

	if (shared == NULL || !IsParallelWorker())
		return seam_pin(table);
	pin.tier_key_hi = shared->tier_key_hi;
	pin.has_snapshot = shared->has_snapshot;
	pin.snapshot_id = shared->snapshot_id;
	pin.has_retention_line = shared->has_retention_line;
	pin.retention_line = shared->retention_line;
	pin.metadata_location = shared->has_metadata_location ? shared->metadata_location : NULL;
	return pin;
}

/* The next lake task for this process of a parallel read (lake_scan_share_tasks). */
static uint32
claim_lake_task(void *arg)
{
	return pg_atomic_fetch_add_u32(&((ColdRowsShared *) arg)->next_task, 1);
}

typedef struct ColdReader
{
	SeamTable  *table;
	SeamPin		pin;
	TupleDesc	tupdesc;		/* the table's row type */
	Bitmapset  *attrs;			/* attributes the lake must read, unless all_attrs */
	bool		all_attrs;		/* a whole-row reference: read every attribute */
	List	   *conditions;		/* EvaluatedCondition *: the query's, for pruning */
	const tl_ice_expr *filter;	/* built from them once the lake is open, or NULL */
	int			pushed;			/* conditions in the filter */
	Bitmapset  *lake_checked;	/* the scan's quals (by index) the lake checks exactly on its rows */
	tl_arena	filter_arena;	/* holds filter */
	bool		skip;			/* the conditions keep the read at or above T */
	bool		check_split;	/* a hybrid read whose lake rows at or above T the lake did not filter out */
	LakeExtreme *extremes;		/* the caller wants only these (cold_rows_reader_seek_extremes) */
	int			nextremes;
	bool		narrowed;		/* and the lake reads only what may hold them */
	bool		opened;

	LakeScan   *lake;			/* NULL until opened, and when there is no snapshot */
	bool		lake_done;
	DeltaKeys  *delta_keys;		/* the keys the delta names; NULL when it names none */
	List	   *upserts;		/* HeapTuple row images, the table's row type */
	int			next_upsert;
	ColdRowsShared *shared;		/* a parallel read's: the lake's tasks and the upserts are claimed */
	int64		delta_rows;
	int64		lake_rows_replaced; /* lake rows a delta row replaced or removed */
	Datum	   *batch_values;	/* keep_cold_rows' keys of one row (the table's attributes) */
	bool	   *batch_isnull;
} ColdReader;

/*
 * jsonb_populate_record(NULL::rowtype, payload) called directly: the
 * function learns the row type from its call expression, so one is built.
 */
typedef struct RowImageBuilder
{
	FmgrInfo	flinfo;
	Oid			rowtype;
} RowImageBuilder;

static void
row_image_builder_init(RowImageBuilder *b, Oid rowtype)
{
	FuncExpr   *call;

	fmgr_info(F_JSONB_POPULATE_RECORD, &b->flinfo);
	call = makeFuncExpr(F_JSONB_POPULATE_RECORD, rowtype,
						list_make2(makeNullConst(rowtype, -1, InvalidOid), makeNullConst(JSONBOID, -1, InvalidOid)),
						InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	b->flinfo.fn_expr = (Node *) call;
	b->rowtype = rowtype;
}

static HeapTuple
row_image(RowImageBuilder *b, Datum payload)
{
	LOCAL_FCINFO(fcinfo, 2);
	Datum		result;
	HeapTupleData tmp;

	InitFunctionCallInfoData(*fcinfo, &b->flinfo, 2, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = (Datum) 0;
	fcinfo->args[0].isnull = true;
	fcinfo->args[1].value = payload;
	fcinfo->args[1].isnull = false;
	result = FunctionCallInvoke(fcinfo);
	if (fcinfo->isnull)
		elog(ERROR, "jsonb_populate_record returned null");
	tmp.t_len = HeapTupleHeaderGetDatumLength(DatumGetHeapTupleHeader(result));
	ItemPointerSetInvalid(&tmp.t_self);
	tmp.t_tableOid = InvalidOid;
	tmp.t_data = DatumGetHeapTupleHeader(result);
	return heap_copytuple(&tmp);
}

/*
 * Reads the table's delta rows below T with the statement's snapshot,
 * through the delta's primary key index (table_id leads it). The catalog's
 * privileges are bypassed on purpose: whoever may read the table may read
 * its corrections, and nobody needs SELECT on tierdb.delta for that.
 */
static void
load_delta(ColdReader *r)
{
	Oid			nsp = get_namespace_oid("tierdb", false);
	Relation	rel = table_open(get_relname_relid("delta", nsp), AccessShareLock);
	Oid			index = get_relname_relid("delta_pkey", nsp);
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *texts = NIL;
	AttrNumber	pk_att = attnameAttNum(rel, "pk", false);
	AttrNumber	op_att = attnameAttNum(rel, "op", false);
	AttrNumber	tk_att = attnameAttNum(rel, "tier_key", false);
	AttrNumber	payload_att = attnameAttNum(rel, "payload", false);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	RowImageBuilder builder;

	if (!OidIsValid(index))
		elog(ERROR, "the TierDB catalog index tierdb.delta_pkey is missing");
	row_image_builder_init(&builder, r->tupdesc->tdtypeid);

	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(r->table->table_id));
	scan = systable_beginscan(rel, index, true, GetActiveSnapshot(), 1, &key);
	while ((tuple = systable_getnext(scan)) != NULL)
	{
		bool		isnull;
		int64		tier_key = DatumGetInt64(heap_getattr(tuple, tk_att, desc, &isnull));

		if (isnull || tier_key >= r->pin.tier_key_hi)
			continue;			/* delta rows target cold rows; verify reports any other */
		texts = lappend(texts, TextDatumGetCString(heap_getattr(tuple, pk_att, desc, &isnull)));
		r->delta_rows++;
		if (DatumGetInt16(heap_getattr(tuple, op_att, desc, &isnull)) == 0)
		{
			Datum		payload = heap_getattr(tuple, payload_att, desc, &isnull);

			if (!isnull)
				r->upserts = lappend(r->upserts, row_image(&builder, payload));
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (texts != NIL)
	{
		r->delta_keys = delta_keys_create(r->tupdesc, r->table->npk, r->table->pk_attnos);
		delta_keys_add_texts(r->delta_keys, texts);
	}
}

/* Whether a delta row replaces or removes the lake row of these values (the table's attributes). */
static bool
replaced_by_delta(ColdReader *r, const Datum *values, const bool *isnull)
{
	return r->delta_keys != NULL && delta_keys_contains(r->delta_keys, values, isnull);
}

/*
 * The split of a hybrid read as a value of an integer tier key's own type,
 * clamped to it: the split is a value of the column less the lag, so only
 * a split below the type's range is clamped, and it keeps every row off
 * the lake, as it should.
 */
static Datum
split_as_column_type(Oid typid, int64 split)
{
	switch (typid)
	{
		case INT2OID:
			return Int16GetDatum((int16) Max(Min(split, PG_INT16_MAX), PG_INT16_MIN));
		case INT4OID:
			return Int32GetDatum((int32) Max(Min(split, PG_INT32_MAX), PG_INT32_MIN));
		default:
			return Int64GetDatum(split);
	}
}

/* Whether the lake row of these values lies below a hybrid read's split (the lake filter could not say). */
static bool
below_split(ColdReader *r, const Datum *values, const bool *isnull)
{
	AttrNumber	attno = r->table->tier_key_attno;

	return !isnull[attno - 1] &&
		seam_key_canonical(r->table->key_kind, TupleDescAttr(r->tupdesc, attno - 1)->atttypid,
						   values[attno - 1]) < r->pin.tier_key_hi;
}

/*
 * Whether condition e holds for no cold row: for no row at all, or only
 * where the tier key is at or above T (a lower bound there, or an IN
 * list of such keys), which keeps the read off the lake and the delta.
 */
static bool
rules_out_cold_rows(const ColdReader *r, const EvaluatedCondition *e)
{
	if (e->op == TL_ICE_EXPR_FALSE)
		return true;
	if (e->attno != r->table->tier_key_attno)
		return false;
	switch (e->op)
	{
		case TL_ICE_EXPR_GE:
		case TL_ICE_EXPR_GT:
		case TL_ICE_EXPR_EQ:
		case TL_ICE_EXPR_IN:
			for (int i = 0; i < e->nvalues; i++)
				if (seam_key_canonical(r->table->key_kind, e->typid, e->values[i]) < r->pin.tier_key_hi)
					return false;
			return true;
		default:
			return false;
	}
}

/*
 * Prepares a reader for the table at a pin; nothing is read until
 * cold_reader_next. The caller has checked SELECT on the table.
 */
static void
cold_reader_begin(ColdReader *r, SeamTable *table, TupleDesc tupdesc, SeamPin pin)
{
	memset(r, 0, sizeof(*r));
	r->table = table;
	r->tupdesc = tupdesc;
	r->pin = pin;
	r->all_attrs = true;		/* until the caller narrows it */
	tl_arena_init(&r->filter_arena, 1024);
}

static double lake_record_count(const SeamTable *table);

/*
 * The lake filter of the conditions on columns the lake has, in types it
 * compares, and the row checks of those the lake decides exactly on its
 * values, sparing the conversion of rows that cannot match. With
 * tierdb.enable_cold_pushdown off nothing is pushed: the executor checks
 * every condition on every cold row.
 */
static void
build_filter(ColdReader *r)
{
	ListCell   *lc;

	foreach(lc, r->conditions)
	{
		EvaluatedCondition *c = lfirst(lc);
		const tl_ice_expr *pred = NULL;
		LakeRowCondition *check = NULL;

		if (enable_cold_pushdown)
			cold_condition_for_lake(c, r->lake, &r->filter_arena, &pred, &check);
		if (pred == NULL)
		{
			r->check_split |= c->qual_index < 0;
			continue;
		}
		r->filter = r->filter == NULL ? pred : tl_ice_expr_and(&r->filter_arena, r->filter, pred);
		if (r->filter == NULL)
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory building a lake filter")));
		r->pushed++;
		if (check == NULL || !lake_scan_add_row_condition(r->lake, check))
			r->check_split |= c->qual_index < 0;
		else if (c->qual_index >= 0)
			r->lake_checked = bms_add_member(r->lake_checked, c->qual_index);
	}
	if (r->filter != NULL)
		lake_scan_set_filter(r->lake, r->filter);
}

/*
 * Reads the delta and opens the lake, unless the conditions keep the read
 * at or above T (r->skip): then neither is touched.
 */
static void
cold_reader_open(ColdReader *r)
{
	Bitmapset  *attrs = r->attrs;

	r->opened = true;
	r->lake_done = true;
	if (r->skip)
		return;
	if (r->table->mirrored)
		hybrid_corrections(r->table, &r->pin, r->tupdesc, &r->delta_keys, &r->upserts);
	else
		load_delta(r);
	if (!r->pin.has_snapshot)
		return;
	/* The pk columns are needed to match delta rows even if the query reads none of them. */
	if (!r->all_attrs && r->delta_keys != NULL)
	{
		attrs = bms_copy(attrs);
		for (int i = 0; i < r->table->npk; i++)
			attrs = bms_add_member(attrs, r->table->pk_attnos[i]);
	}
	/*
	 * A mirror's lake rows at or above T (a hybrid read's split, or the T of
	 * a table keeping a heap window) are the heap arm's: the lake filters
	 * them, or the reader does.
	 */
	if (r->table->mirrored || r->table->lake_beyond_t)
	{
		AttrNumber	attno = r->table->tier_key_attno;
		Oid			typid = TupleDescAttr(r->tupdesc, attno - 1)->atttypid;
		Datum		split = r->table->key_kind == SEAM_KEY_BIGINT
			? split_as_column_type(typid, r->pin.tier_key_hi)
			: seam_key_datum(r->table->key_kind, r->pin.tier_key_hi);

		if (!r->all_attrs)
			attrs = bms_add_member(bms_copy(attrs), attno);
		r->conditions = lappend(r->conditions, cold_condition_of_value(TL_ICE_EXPR_LT, attno, typid, split, false));
	}
	r->lake = lake_scan_open(r->pin.metadata_location ? r->pin.metadata_location : r->table->lake_location,
							 r->pin.snapshot_id, r->tupdesc, attrs, r->all_attrs);
	r->lake_done = false;
	if (r->shared != NULL)
		lake_scan_share_tasks(r->lake, claim_lake_task, r->shared);
	/*
	 * Extremes of every cold row are those of the lake's rows only while no
	 * delta row replaces one (or adds one) and no condition narrows them.
	 */
	if (r->nextremes > 0 && r->conditions == NIL && r->delta_keys == NULL && r->upserts == NIL)
		r->narrowed = lake_scan_narrow_to_extremes(r->lake, r->extremes, r->nextremes, &r->filter_arena);
	build_filter(r);
}

static bool
cold_reader_next(ColdReader *r, TupleTableSlot *slot)
{
	if (!r->opened)
		cold_reader_open(r);
	while (!r->lake_done)
	{
		if (!lake_scan_next(r->lake, slot))
		{
			r->lake_done = true;
			break;
		}
		if (r->check_split && !below_split(r, slot->tts_values, slot->tts_isnull))
			continue;
		if (!replaced_by_delta(r, slot->tts_values, slot->tts_isnull))
			return true;
		r->lake_rows_replaced++;
	}
	ExecClearTuple(slot);
	/* In a parallel scan every process reads the delta, and the first to finish its lake files returns it. */
	if (r->shared != NULL && r->next_upsert == 0 && r->upserts != NIL &&
		pg_atomic_exchange_u32(&r->shared->upserts_taken, 1) != 0)
		r->next_upsert = list_length(r->upserts);
	if (!r->skip && r->next_upsert < list_length(r->upserts))
	{
		HeapTuple	image = list_nth(r->upserts, r->next_upsert++);

		heap_deform_tuple(image, r->tupdesc, slot->tts_values, slot->tts_isnull);
		ExecStoreVirtualTuple(slot);
		return true;
	}
	return false;
}

static void
cold_reader_end(ColdReader *r)
{
	if (r->lake != NULL)
		lake_scan_close(r->lake);
	r->lake = NULL;
	tl_arena_free(&r->filter_arena);
}

/* The privileges the table reference a seam union replaced needs (lake_check_select). */
static void
check_reference_privileges(Oid relid, Oid check_as, List *selected_cols)
{
	Bitmapset  *cols = NULL;
	ListCell   *lc;

	foreach(lc, selected_cols)
		cols = bms_add_member(cols, lfirst_int(lc));
	lake_check_select(relid, check_as, cols);
}

void
cold_scan_read_for(RangeTblEntry *cold_rows, const RangeTblEntry *reference)
{
	Assert(cold_rows->rtekind == RTE_FUNCTION);
	cold_rows->requiredPerms = ACL_SELECT;
	cold_rows->checkAsUser = reference->checkAsUser;
	cold_rows->selectedCols = bms_copy(reference->selectedCols);
}

/* The tiered table whose row type the cold_rows argument has; ERROR otherwise. */
static SeamTable *
table_of_rowtype(Oid rowtype)
{
	Oid			relid = OidIsValid(rowtype) ? get_typ_typrelid(rowtype) : InvalidOid;
	SeamTable  *table = OidIsValid(relid) ? seam_lookup_read_table(relid) : NULL;

	if (table == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s is not the row type of a table registered with TierDB in tiered mode",
						OidIsValid(rowtype) ? format_type_be(rowtype) : "the argument"),
				 errhint("Call it as tierdb.cold_rows(NULL::schema.table).")));
	return table;
}

/* ------------------------------------------------------------ pushing conditions into the lake */

bool
cold_scan_match_condition(Expr *clause, Index self, AttrNumber *attno, Oid *typid, int *op, Expr **value)
{
	PushedCondition *c = cold_condition_match(clause, self, true);

	if (c == NULL || c->op == TL_ICE_EXPR_AND || c->op == TL_ICE_EXPR_OR)
		return false;
	*attno = c->attno;
	*op = (int) c->op;
	/* A null test has no value: a constant true stands for it. */
	*typid = c->value != NULL ? c->typid : BOOLOID;
	*value = c->value != NULL ? c->value : (Expr *) makeBoolConst(true, false);
	return true;
}

/* ------------------------------------------------------------ the reader for others */

double
cold_scan_lake_records(const SeamTable *table)
{
	return lake_record_count(table);
}

HeapTuple
cold_scan_row_image(Oid rowtype, Datum payload)
{
	RowImageBuilder builder;

	row_image_builder_init(&builder, rowtype);
	return row_image(&builder, payload);
}

struct ColdRowsReader
{
	ColdReader	reader;
};

ColdRowsReader *
cold_rows_reader_open(SeamTable *table, TupleDesc tupdesc, const ColdRowsCondition *conditions, int nconditions,
					  ColdRowsShared *shared)
{
	ColdRowsReader *cr = palloc0(sizeof(ColdRowsReader));
	ColdReader *r = &cr->reader;

	cold_reader_begin(r, table, tupdesc, pin_of(table, shared));
	r->shared = shared;
	for (int i = 0; i < nconditions; i++)
	{
		const ColdRowsCondition *c = &conditions[i];
		EvaluatedCondition *e = cold_condition_of_value((tl_ice_expr_op) c->op, c->attno, c->typid, c->value,
														c->isnull);

		if (rules_out_cold_rows(r, e))
		{
			r->skip = true;
			break;
		}
		e->qual_index = i;
		r->conditions = lappend(r->conditions, e);
	}
	return cr;
}

ColdRowsReader *
cold_rows_reader_open_quals(SeamTable *table, TupleDesc tupdesc, List *quals, PlanState *parent,
							ColdRowsShared *shared)
{
	ColdRowsReader *cr = palloc0(sizeof(ColdRowsReader));
	ColdReader *r = &cr->reader;
	ListCell   *lc;

	cold_reader_begin(r, table, tupdesc, pin_of(table, shared));
	r->shared = shared;
	foreach(lc, quals)
	{
		PushedCondition *pushed = cold_condition_match(lfirst(lc), INDEX_VAR, false);
		EvaluatedCondition *e;

		if (pushed == NULL)
			continue;
		e = cold_condition_evaluate(pushed, parent, parent->ps_ExprContext);
		if (rules_out_cold_rows(r, e))
		{
			r->skip = true;
			break;
		}
		e->qual_index = foreach_current_index(lc);
		r->conditions = lappend(r->conditions, e);
	}
	return cr;
}

void
cold_rows_reader_read_only(ColdRowsReader *reader, const Bitmapset *attnos)
{
	Assert(!reader->reader.opened);
	reader->reader.attrs = bms_copy(attnos);
	reader->reader.all_attrs = false;
}

bool
cold_rows_reader_count(ColdRowsReader *reader, int64 *count)
{
	ColdReader *r = &reader->reader;
	LakeScanStats st;

	/* (each process of a parallel read would count them all) */
	if (r->opened || r->shared != NULL || r->conditions != NIL || r->table->mirrored || r->table->lake_beyond_t)
		return false;
	cold_reader_open(r);
	if (r->skip || !r->pin.has_snapshot)
	{
		/* no lake rows: the delta's row images are the cold rows */
		*count = r->skip ? 0 : list_length(r->upserts);
		return true;
	}
	if (r->delta_keys != NULL || r->upserts != NIL)
		return false;
	lake_scan_plan(r->lake);
	lake_scan_stats(r->lake, &st);
	if (st.delete_files != 0)
		return false;
	*count = st.planned_records;
	return true;
}

void
cold_rows_reader_seek_extremes(ColdRowsReader *reader, const LakeExtreme *extremes, int n)
{
	ColdReader *r = &reader->reader;

	Assert(!r->opened);
	r->extremes = palloc(sizeof(LakeExtreme) * n);
	memcpy(r->extremes, extremes, sizeof(LakeExtreme) * n);
	r->nextremes = n;
}

bool
cold_rows_reader_narrowed(ColdRowsReader *reader)
{
	return reader->reader.narrowed;
}

bool
cold_rows_reader_next(ColdRowsReader *reader, TupleTableSlot *slot)
{
	return cold_reader_next(&reader->reader, slot);
}

/*
 * Narrows a batch of lake rows to those cold_reader_next would return:
 * below a hybrid read's split, and not replaced by a delta row. Only the
 * tier key and the primary key are converted, into the reader's arrays.
 */
static void
keep_cold_rows(ColdReader *r, LakeBatch *batch)
{
	AttrNumber	split_attno = r->table->tier_key_attno;
	int64		kept = 0;

	if (r->batch_values == NULL)
	{
		r->batch_values = palloc0(sizeof(Datum) * r->tupdesc->natts);
		r->batch_isnull = palloc0(sizeof(bool) * r->tupdesc->natts);
	}
	for (int64 i = 0; i < batch->nrows; i++)
	{
		int32		row = batch->rows[i];

		if (r->check_split)
		{
			r->batch_values[split_attno - 1] = lake_scan_batch_value(r->lake, split_attno, row,
																	 &r->batch_isnull[split_attno - 1]);
			if (!below_split(r, r->batch_values, r->batch_isnull))
				continue;
		}
		if (r->delta_keys != NULL)
		{
			for (int k = 0; k < r->table->npk; k++)
			{
				AttrNumber	attno = r->table->pk_attnos[k];

				r->batch_values[attno - 1] = lake_scan_batch_value(r->lake, attno, row, &r->batch_isnull[attno - 1]);
			}
			if (replaced_by_delta(r, r->batch_values, r->batch_isnull))
			{
				r->lake_rows_replaced++;
				continue;
			}
		}
		batch->rows[kept++] = row;
	}
	batch->nrows = kept;
}

bool
cold_rows_reader_next_batch(ColdRowsReader *reader, LakeScan **lake, LakeBatch *batch)
{
	ColdReader *r = &reader->reader;

	if (!r->opened)
		cold_reader_open(r);
	while (!r->lake_done)
	{
		if (!lake_scan_next_batch(r->lake, batch))
		{
			r->lake_done = true;
			break;
		}
		if (r->check_split || r->delta_keys != NULL)
			keep_cold_rows(r, batch);
		if (batch->nrows > 0)
		{
			*lake = r->lake;
			return true;
		}
	}
	return false;
}

const Bitmapset *
cold_rows_reader_lake_checked(ColdRowsReader *reader)
{
	if (!reader->reader.opened)
		cold_reader_open(&reader->reader);
	return reader->reader.lake_checked;
}

bool
cold_rows_reader_from_lake(ColdRowsReader *reader)
{
	return !reader->reader.lake_done;
}

/* This process's reading figures. */
static void
reader_figures(ColdReader *r, ColdReadFigures *out)
{
	memset(out, 0, sizeof(*out));
	if (r->lake != NULL)
		lake_scan_stats(r->lake, &out->lake);
	out->rows_replaced = r->lake_rows_replaced;
}

void
cold_rows_reader_figures(ColdRowsReader *reader, ColdReadFigures *out)
{
	reader_figures(&reader->reader, out);
}

void
cold_rows_reader_close(ColdRowsReader *reader)
{
	cold_reader_end(&reader->reader);
}

/* ------------------------------------------------------------ the custom scan */


typedef struct ColdScanState
{
	CustomScanState css;
	ColdRowsShared *shared;		/* a parallel scan's, once its DSM is set up */
	ColdReadFigures workers;	/* the leader's: what its workers read */
	SeamTable  *table;
	TupleDesc	tupdesc;		/* the table's, once the lake or the delta is read */
	ColdReader	reader;
	List	   *conditions;		/* PushedCondition *, the tier key's lower bounds first */
	bool		filter_set;		/* ps.qual and all_quals made for the open reader */
	ExprState  *all_quals;		/* the plan's quals; ps.qual keeps those the lake does not check */
	Bitmapset  *lake_checked;	/* the quals left out of ps.qual */
} ColdScanState;

/*
 * The plan's custom_private: the table, the attributes the query reads
 * (pull_varattnos' numbering), and the privileges to check: those of the
 * table reference a seam union replaced, or a direct call's.
 *
 * The quals are the plan's custom_exprs (cold_scan_quals), not its qual:
 * the executor would compile those as the scan starts, and a generic
 * plan's point lookup on hot rows starts this scan at every execution only
 * to find it need not read. They are compiled when the scan reads
 * (filter_what_the_lake_does_not), and shown in EXPLAIN as the plan's
 * quals would be. Which of them the lake can take is found as the scan
 * starts (set_up_cold_scan), from the quals as setrefs left them.
 */
enum
{
	COLD_PRIVATE_RELID,
	COLD_PRIVATE_ATTRS,
	COLD_PRIVATE_CHECK_AS,		/* reference_check_as: NIL for a direct call */
	COLD_PRIVATE_SELECTED_COLS	/* reference_columns */
};

#define cold_private(cscan, which) ((List *) list_nth((cscan)->custom_private, (which)))

List *
cold_scan_quals(CustomScan *cscan)
{
	return cscan->custom_exprs;
}

static Plan *plan_cold_scan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path, List *tlist,
							List *clauses, List *custom_plans);
static Node *create_cold_scan_state(CustomScan *cscan);
static void begin_cold_scan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_cold_scan(CustomScanState *node);
static void end_cold_scan(CustomScanState *node);
static void rescan_cold_scan(CustomScanState *node);
static void explain_cold_scan(CustomScanState *node, List *ancestors, ExplainState *es);
static Size estimate_cold_scan_dsm(CustomScanState *node, ParallelContext *pcxt);
static void initialize_cold_scan_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate);
static void reinitialize_cold_scan_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate);
static void initialize_cold_scan_worker(CustomScanState *node, shm_toc *toc, void *coordinate);
static void shutdown_cold_scan(CustomScanState *node);

static const CustomPathMethods cold_path_methods = {
	.CustomName = COLD_SCAN_NAME,
	.PlanCustomPath = plan_cold_scan,
};

static const CustomScanMethods cold_scan_methods = {
	.CustomName = COLD_SCAN_NAME,
	.CreateCustomScanState = create_cold_scan_state,
};

static const CustomExecMethods cold_exec_methods = {
	.CustomName = COLD_SCAN_NAME,
	.BeginCustomScan = begin_cold_scan,
	.ExecCustomScan = exec_cold_scan,
	.EndCustomScan = end_cold_scan,
	.ReScanCustomScan = rescan_cold_scan,
	.ExplainCustomScan = explain_cold_scan,
	.EstimateDSMCustomScan = estimate_cold_scan_dsm,
	.InitializeDSMCustomScan = initialize_cold_scan_dsm,
	.ReInitializeDSMCustomScan = reinitialize_cold_scan_dsm,
	.InitializeWorkerCustomScan = initialize_cold_scan_worker,
	.ShutdownCustomScan = shutdown_cold_scan,
};

/* The relation whose cold rows a function RTE of tierdb.cold_rows asks for, or InvalidOid. */
static Oid
cold_rows_target(RangeTblEntry *rte)
{
	RangeTblFunction *rtf;
	FuncExpr   *call;
	Const	   *arg;
	Oid			nsp;

	if (rte->rtekind != RTE_FUNCTION || list_length(rte->functions) != 1 || rte->funcordinality)
		return InvalidOid;
	rtf = linitial(rte->functions);
	if (!IsA(rtf->funcexpr, FuncExpr))
		return InvalidOid;
	call = (FuncExpr *) rtf->funcexpr;
	nsp = seam_namespace();
	if (!OidIsValid(nsp) || get_func_namespace(call->funcid) != nsp ||
		strcmp(get_func_name(call->funcid), "cold_rows") != 0 || list_length(call->args) != 1)
		return InvalidOid;
	arg = linitial(call->args);
	if (!IsA(arg, Const))
		return InvalidOid;
	return get_typ_typrelid(arg->consttype);
}

Oid
cold_scan_target(RangeTblEntry *rte)
{
	return cold_rows_target(rte);
}

bool
cold_scan_planned(RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, rel->pathlist)
	{
		Path	   *path = lfirst(lc);

		/* (a Gather over the parallel cold scan may have pushed the serial one out) */
		if (IsA(path, GatherPath))
			path = ((GatherPath *) path)->subpath;
		if (IsA(path, CustomPath) && ((CustomPath *) path)->methods == &cold_path_methods)
			return true;
	}
	return false;
}

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;

/*
 * The user a seam union's cold arm checks privileges as (cold_scan_read_for
 * marked it: requiredPerms, which a function reference otherwise never
 * has), as a one-element list; NIL for a direct call of cold_rows.
 */
static List *
reference_check_as(const RangeTblEntry *rte)
{
	return (rte->requiredPerms & ACL_SELECT) ? list_make1_oid(rte->checkAsUser) : NIL;
}

/* The columns its reference reads (selectedCols' members: copyable nodes). */
static List *
reference_columns(const RangeTblEntry *rte)
{
	List	   *cols = NIL;
	int			i = -1;

	while ((i = bms_next_member(rte->selectedCols, i)) >= 0)
		cols = lappend_int(cols, i);
	return cols;
}

/*
 * The record count of a table's published lake snapshot, for the planner's
 * estimate, per table, with the metadata file it was read from: published
 * metadata files never change, so planning reads no lake file while the
 * cut-line stays (a table published before metadata_location was recorded
 * finds its current metadata file each time).
 */
typedef struct RecordCount
{
	char		location[MAXPGPATH];
	char		metadata_file[MAXPGPATH];
	double		records;
	bool		has_key_low;	/* the lowest tier key the lake's files hold, canonical */
	int64		key_low;
} RecordCount;

static HTAB *record_counts = NULL;

/*
 * The lowest tier key among the lower bounds the snapshot's data files
 * record (canonical: Iceberg stores the tier key's types as SeamKeyKind
 * counts them); false when a file records none.
 */
static bool
lake_key_low(const tl_ice_table *lake, const tl_ice_snapshot *snap, const SeamTable *table, int64 *low)
{
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(lake->metadata);
	char	   *name = get_attname(table->relid, table->tier_key_attno, true);
	const tl_ice_field *field = schema != NULL && name != NULL ? tl_ice_schema_find_name(schema, name) : NULL;
	tl_ice_scan *plan;
	bool		found = true;
	tl_error	err;

	if (field == NULL)
		return false;
	tl_error_clear(&err);
	plan = tl_ice_scan_plan(lake->metadata, snap->snapshot_id, NULL, &err);
	if (plan == NULL)
		return false;
	*low = PG_INT64_MAX;
	for (int t = 0; t < tl_ice_scan_ntasks(plan) && found; t++)
	{
		const tl_ice_data_file *file = &tl_ice_scan_task_at(plan, t)->file;
		tl_ice_value v;

		found = false;
		for (uint32_t i = 0; i < file->lower_bounds.n && !found; i++)
		{
			if (file->lower_bounds.keys[i] != field->id ||
				tl_ice_value_deserialize(&field->type, file->lower_bounds.values[i].ptr,
										 file->lower_bounds.values[i].len, &v, NULL) != 0)
				continue;
			if (field->type.id == TL_ICE_INT || field->type.id == TL_ICE_DATE)
				*low = Min(*low, (int64) v.v.i32), found = true;
			else if (field->type.id == TL_ICE_LONG || field->type.id == TL_ICE_TIMESTAMP ||
					 field->type.id == TL_ICE_TIMESTAMPTZ)
				*low = Min(*low, v.v.i64), found = true;
		}
	}
	tl_ice_scan_free(plan);
	return found && *low != PG_INT64_MAX;
}

/*
 * The cached figures of the table's published lake snapshot, refreshed
 * when its metadata file changes; NULL when there is none, or the
 * metadata cannot be read (the scan will say why).
 */
static RecordCount *lake_figures(const SeamTable *table);

/* -1 when unknown (no snapshot, or the metadata cannot be read: the scan will say why). */
static double
lake_record_count(const SeamTable *table)
{
	RecordCount *entry = lake_figures(table);

	return entry != NULL ? entry->records : -1;
}

static RecordCount *
lake_figures(const SeamTable *table)
{
	SeamPin		cut = seam_latest_cutline(table);
	RecordCount *entry;
	char	   *file;
	bool		found;
	tl_error	err;
	tl_ice_table *lake;
	const tl_ice_snapshot *snap;
	const char *total;

	if (!cut.has_snapshot)
		return NULL;
	if (record_counts == NULL)
	{
		HASHCTL		ctl = {.keysize = MAXPGPATH, .entrysize = sizeof(RecordCount)};

		record_counts = hash_create("tierdb lake record counts", 16, &ctl, HASH_ELEM | HASH_STRINGS);
	}
	tl_error_clear(&err);
	storage_profiles_prepare();
	if (strlen(table->lake_location) >= MAXPGPATH)
		return NULL;
	file = cut.metadata_location ? tl_strdup(cut.metadata_location)
		: tl_ice_table_current_metadata(table->lake_location, NULL, &err);
	if (file == NULL || strlen(file) >= MAXPGPATH)
	{
		tl_free(file);
		return NULL;
	}
	entry = hash_search(record_counts, table->lake_location, HASH_ENTER, &found);
	if (!found || strcmp(entry->metadata_file, file) != 0)
	{
		lake = tl_ice_table_open(file, &err);
		snap = lake != NULL ? tl_ice_metadata_snapshot(lake->metadata, cut.snapshot_id) : NULL;
		total = snap != NULL ? tl_ice_snapshot_summary(snap, "total-records") : NULL;
		entry->records = total != NULL ? strtod(total, NULL) : -1;
		entry->has_key_low = snap != NULL && lake_key_low(lake, snap, table, &entry->key_low);
		strlcpy(entry->metadata_file, file, sizeof(entry->metadata_file));
		tl_ice_table_free(lake);
	}
	tl_free(file);
	return entry;
}

/*
 * Whether the query refers to the function's rows as whole rows
 * (SELECT c FROM tierdb.cold_rows(NULL::t) c, or such a condition): the
 * custom scan produces the columns, not the row, so the set-returning
 * function serves those (a seam union's cold arm lists its columns).
 */
static bool
references_whole_row(RelOptInfo *rel)
{
	Bitmapset  *attrs = NULL;
	ListCell   *lc;

	if (!bms_is_empty(rel->attr_needed[0 - rel->min_attr]))
		return true;
	foreach(lc, rel->baserestrictinfo)
		pull_varattnos((Node *) ((RestrictInfo *) lfirst(lc))->clause, rel->relid, &attrs);
	pull_varattnos((Node *) rel->reltarget->exprs, rel->relid, &attrs);
	return bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, attrs);
}

/*
 * What reading a cold rows relation's lake rows costs: every row the
 * conditions on the tier key leave (partitions and files outside them are
 * pruned; other conditions prune what their statistics allow, which
 * planning cannot know) is decoded and checked, at half a heap tuple's
 * cost (the columns are decoded in batches) plus its quals'. A selective
 * filter on a column statistics cannot prune still reads every row: this,
 * not the rows returned, is what a parallel scan divides.
 */
/*
 * The share of the lake's rows the conditions on the tier key leave. The
 * cold rows have no statistics, so Postgres would guess a range at half a
 * percent: a day of ten would look as cheap as a point, and no parallel
 * plan pay off. Lake rows lie in [the lowest key its files record, T):
 * constant bounds cut that span, the rows taken as spread evenly over it
 * (history is, as a rule); other conditions get Postgres' estimate.
 */
static double
tier_key_fraction(PlannerInfo *root, const SeamTable *table, List *key_quals, Index relid)
{
	RecordCount *figures = table != NULL ? lake_figures(table) : NULL;
	int64		t = table != NULL ? seam_latest_cutline(table).tier_key_hi : 0;
	int64		lo,
				hi;
	List	   *others = NIL;
	bool		bounded = false;
	ListCell   *lc;

	if (figures == NULL || !figures->has_key_low || t <= figures->key_low)
		return clauselist_selectivity(root, key_quals, 0, JOIN_INNER, NULL);
	lo = figures->key_low;
	hi = t;
	foreach(lc, key_quals)
	{
		OpExpr	   *op = (OpExpr *) ((RestrictInfo *) lfirst(lc))->clause;
		Var		   *var;
		Const	   *value;
		int			strategy;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2 || !IsA(linitial(op->args), Var) ||
			!IsA(lsecond(op->args), Const) || ((Var *) linitial(op->args))->varno != relid ||
			((Const *) lsecond(op->args))->constisnull ||
			((Const *) lsecond(op->args))->consttype != ((Var *) linitial(op->args))->vartype ||
			!OidIsValid(table->tier_key_opfamily) || !op_in_opfamily(op->opno, table->tier_key_opfamily))
		{
			others = lappend(others, lfirst(lc));
			continue;
		}
		var = linitial(op->args);
		value = lsecond(op->args);
		strategy = get_op_opfamily_strategy(op->opno, table->tier_key_opfamily);
		if (strategy == BTGreaterStrategyNumber || strategy == BTGreaterEqualStrategyNumber)
			lo = Max(lo, seam_key_canonical(table->key_kind, var->vartype, value->constvalue));
		else if (strategy == BTLessStrategyNumber || strategy == BTLessEqualStrategyNumber)
			hi = Min(hi, seam_key_canonical(table->key_kind, var->vartype, value->constvalue));
		else
		{
			others = lappend(others, lfirst(lc));
			continue;
		}
		bounded = true;
	}
	if (!bounded)
		return clauselist_selectivity(root, key_quals, 0, JOIN_INNER, NULL);
	return Max(0.0, (double) hi - (double) lo) / ((double) t - (double) figures->key_low) *
		clauselist_selectivity(root, others, 0, JOIN_INNER, NULL);
}

Cost
cold_scan_read_cost(PlannerInfo *root, RelOptInfo *rel)
{
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);
	Oid			relid = cold_rows_target(rte);
	SeamTable  *table = OidIsValid(relid) ? seam_lookup_read_table(relid) : NULL;
	double		records = table != NULL ? lake_record_count(table) : -1;
	List	   *key_quals = NIL;
	QualCost	quals;
	ListCell   *lc;

	if (records < 0)
		records = rel->rows;
	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst(lc);
		Bitmapset  *attrs = NULL;

		pull_varattnos((Node *) rinfo->clause, rel->relid, &attrs);
		if (table != NULL && bms_num_members(attrs) == 1 &&
			bms_is_member(table->tier_key_attno - FirstLowInvalidHeapAttributeNumber, attrs))
			key_quals = lappend(key_quals, rinfo);
	}
	cost_qual_eval(&quals, rel->baserestrictinfo, root);
	return records * tier_key_fraction(root, table, key_quals, rel->relid) * (cpu_tuple_cost / 2 + quals.per_tuple);
}

/*
 * The function scan of cold_rows, which only a whole-row reference still
 * plans, runs in the leader: in a worker it would take a pin of its own,
 * not the one the rest of the statement reads at.
 */
static void
forbid_parallel_function_scan(RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, rel->pathlist)
		((Path *) lfirst(lc))->parallel_safe = false;
	rel->partial_pathlist = NIL;
}

/*
 * The share of a parallel path's work each process does, as Postgres
 * reckons it (costsize.c's get_parallel_divisor): the leader helps less
 * the more workers there are.
 */
double
cold_scan_parallel_divisor(int workers)
{
	double		divisor = workers;

	if (parallel_leader_participation && 1.0 - 0.3 * workers > 0)
		divisor += 1.0 - 0.3 * workers;
	return divisor;
}

/*
 * Adds the parallel-aware cold scan: each process of a parallel query
 * reads the lake files it claims (ColdRowsShared) at the leader's pin. Its
 * workers are chosen as for a heap of the lake's size (a page holds about
 * a hundred rows of a typical table), and each process is costed with its
 * share of the rows, as Postgres costs a partial sequential scan.
 *
 * In a seam union the cold rows are one member of an append relation
 * whose heap member never has a partial path (its bound on the tier key
 * is an initPlan, and Postgres plans no partial path above one), so no
 * Parallel Append can hold both, and Postgres gathers no member on its
 * own. The member then also gets a Gather of its own over the parallel
 * scan, which the costs weigh against the serial scan: it pays where few
 * of the lake's rows pass the scan's filter.
 */
static void
add_partial_cold_path(PlannerInfo *root, RelOptInfo *rel, const CustomPath *serial, double records)
{
	CustomPath *path = makeNode(CustomPath);
	int			workers = compute_parallel_worker(rel, records / 100, -1, max_parallel_workers_per_gather);
	double		divisor = cold_scan_parallel_divisor(workers);

	if (workers <= 0)
		return;
	*path = *serial;
	path->path.parallel_aware = true;
	path->path.parallel_safe = true;
	path->path.parallel_workers = workers;
	path->path.rows = clamp_row_est(rel->rows / divisor);
	path->path.total_cost = path->path.startup_cost + (serial->path.total_cost - serial->path.startup_cost) / divisor;
	add_partial_path(rel, &path->path);
	if (IS_OTHER_REL(rel))
		add_path(rel, (Path *) create_gather_path(root, rel, &path->path, rel->reltarget, NULL, NULL));
}

/*
 * Replaces the function scan of tierdb.cold_rows(NULL::table) with the
 * custom scan, estimating its rows from the lake's current record count
 * and the selectivity of the scan's conditions. (The snapshot read is
 * the one pinned at execution, usually the same.)
 */
static void
cold_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	Oid			relid;
	CustomPath *path;
	SeamTable  *table;
	double		records;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);
	relid = cold_rows_target(rte);
	if (!OidIsValid(relid) || IS_DUMMY_REL(rel))
		return;
	if (references_whole_row(rel))
	{
		forbid_parallel_function_scan(rel);
		return;
	}
	table = seam_lookup_read_table(relid);
	records = table != NULL ? lake_record_count(table) : -1;
	if (records >= 0)
		rel->rows = clamp_row_est(records * clauselist_selectivity(root, rel->baserestrictinfo, 0,
																	JOIN_INNER, NULL));
	path = makeNode(CustomPath);
	path->path.pathtype = T_CustomScan;
	path->path.parent = rel;
	path->path.pathtarget = rel->reltarget;
	path->path.param_info = NULL;
	path->path.parallel_aware = false;
	path->path.parallel_safe = false;
	path->path.rows = rel->rows;
	path->path.startup_cost = 10 * seq_page_cost;
	path->path.total_cost = path->path.startup_cost + cold_scan_read_cost(root, rel) + rel->rows * cpu_tuple_cost;
	path->flags = 0;
	path->custom_private = list_make3(list_make1_oid(relid), reference_check_as(rte), reference_columns(rte));
	path->methods = &cold_path_methods;
	rel->pathlist = NIL;
	rel->partial_pathlist = NIL;
	add_path(rel, &path->path);
	if (rel->consider_parallel && enable_parallel_cold_scan && table != NULL && !table->mirrored &&
		records > 0 && max_parallel_workers_per_gather > 0)
		add_partial_cold_path(root, rel, path, records);
}

/*
 * The scan produces the table's row type; custom_scan_tlist lists every
 * attribute in order (a null for dropped ones), so setrefs turns the plan's
 * Vars into INDEX_VAR references whose attno is the table's.
 */
static Plan *
plan_cold_scan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path, List *tlist, List *clauses,
			   List *custom_plans)
{
	Oid			relid = linitial_oid(linitial(best_path->custom_private));
	CustomScan *cscan = makeNode(CustomScan);
	Relation	table = table_open(relid, NoLock);
	TupleDesc	desc = RelationGetDescr(table);
	List	   *scan_tlist = NIL;
	List	   *quals = extract_actual_clauses(clauses, false);
	Bitmapset  *attrs = NULL;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Expr	   *e;

		if (att->attisdropped)
			e = (Expr *) makeNullConst(INT4OID, -1, InvalidOid);
		else
			e = (Expr *) makeVar(rel->relid, att->attnum, att->atttypid, att->atttypmod, att->attcollation, 0);
		scan_tlist = lappend(scan_tlist, makeTargetEntry(e, i + 1, pstrdup(NameStr(att->attname)), false));
	}
	table_close(table, NoLock);

	pull_varattnos((Node *) tlist, rel->relid, &attrs);
	pull_varattnos((Node *) quals, rel->relid, &attrs);

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.scanrelid = 0;
	cscan->custom_scan_tlist = scan_tlist;
	/* custom_private must be copyable nodes: the pulled attribute set goes as an integer list. */
	{
		List	   *pulled = NIL;
		int			i = -1;

		while ((i = bms_next_member(attrs, i)) >= 0)
			pulled = lappend_int(pulled, i);
		cscan->custom_private = list_make4(list_make1_oid(relid), pulled, lsecond(best_path->custom_private),
										   lthird(best_path->custom_private));
	}
	cscan->custom_exprs = quals;
	cscan->methods = &cold_scan_methods;
	return &cscan->scan.plan;
}

static Node *
create_cold_scan_state(CustomScan *cscan)
{
	ColdScanState *state = palloc0(sizeof(ColdScanState));

	NodeSetTag(state, T_CustomScanState);
	state->css.methods = &cold_exec_methods;
	return (Node *) state;
}

/*
 * The attributes pull_varattnos collected (offset by
 * FirstLowInvalidHeapAttributeNumber) as the reader's attnos, or all of
 * them for a whole-row reference. None at all is fine: the lake still
 * yields the rows, so count(*) decodes nothing.
 */
static void
set_needed_attrs(ColdReader *r, const List *pulled)
{
	ListCell   *lc;

	r->attrs = NULL;
	r->all_attrs = false;
	foreach(lc, pulled)
	{
		AttrNumber	attno = lfirst_int(lc) + FirstLowInvalidHeapAttributeNumber;

		if (attno <= 0)
		{
			r->all_attrs = true;
			return;
		}
		r->attrs = bms_add_member(r->attrs, attno);
	}
}

/* Whether condition c may bound the tier key from below (key >, >= or = value, key IN list). */
static bool
bounds_tier_key_below(const ColdScanState *s, const PushedCondition *c)
{
	return c->attno == s->table->tier_key_attno &&
		(c->op == TL_ICE_EXPR_GE || c->op == TL_ICE_EXPR_GT || c->op == TL_ICE_EXPR_EQ || c->op == TL_ICE_EXPR_IN);
}

/*
 * Evaluates the pushable conditions' values for the reader, and skips the
 * read when one holds for no cold row (rules_out_cold_rows). The tier
 * key's bounds come first and the rest is not evaluated once the read is
 * skipped: a generic plan's point lookup on hot rows gets here at every
 * execution.
 */
static void
evaluate_conditions(ColdScanState *s)
{
	ColdReader *r = &s->reader;
	ListCell   *lc;

	foreach(lc, s->conditions)
	{
		PushedCondition *c = lfirst(lc);
		EvaluatedCondition *e = cold_condition_evaluate(c, &s->css.ss.ps, s->css.ss.ps.ps_ExprContext);

		if (rules_out_cold_rows(r, e))
		{
			r->skip = true;
			return;
		}
		e->qual_index = c->qual_index;
		r->conditions = lappend(r->conditions, e);
	}
}

/*
 * Only the privileges are checked when the executor starts: those of the
 * table reference the seam union replaced, which its heap arm checks too
 * (and row-level security is its reference's filter, over both arms); a
 * direct call's (lake_check_direct_read). The rest waits
 * for the first row (or EXPLAIN), because a prepared point lookup on hot
 * rows starts the plan at every execution and never reads this arm.
 */
static void
begin_cold_scan(CustomScanState *node, EState *estate, int eflags)
{
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	Oid			relid = linitial_oid(cold_private(cscan, COLD_PRIVATE_RELID));
	List	   *check_as = cold_private(cscan, COLD_PRIVATE_CHECK_AS);

	if (check_as != NIL)
		check_reference_privileges(relid, linitial_oid(check_as), cold_private(cscan, COLD_PRIVATE_SELECTED_COLS));
	else
		lake_check_direct_read(relid, "tierdb.cold_rows");
}

/* The statement's pin: in a parallel worker, the leader's. */

/* The registration, the pin, the columns and the conditions, once. */
static void
set_up_cold_scan(ColdScanState *s)
{
	CustomScan *cscan = (CustomScan *) s->css.ss.ps.plan;
	Oid			relid = linitial_oid(cold_private(cscan, COLD_PRIVATE_RELID));
	ListCell   *lc;

	if (s->table != NULL)
		return;
	s->table = seam_lookup_read_table(relid);
	if (s->table == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is no longer registered with TierDB", seam_table_name(relid)),
				 errhint("Run the statement again.")));
	cold_reader_begin(&s->reader, s->table, NULL, pin_of(s->table, s->shared));
	set_needed_attrs(&s->reader, cold_private(cscan, COLD_PRIVATE_ATTRS));

	foreach(lc, cold_scan_quals(cscan))
	{
		PushedCondition *c = cold_condition_match(lfirst(lc), 0, false);

		if (c == NULL)
			continue;
		c->qual_index = foreach_current_index(lc);
		s->conditions = bounds_tier_key_below(s, c) ? lcons(c, s->conditions) : lappend(s->conditions, c);
	}
}

/* The table's row type, read once: only a scan that reads the lake or the delta needs it. */
static TupleDesc
table_tupdesc(ColdScanState *s)
{
	if (s->tupdesc == NULL)
	{
		Relation	rel = table_open(s->table->relid, AccessShareLock);

		s->tupdesc = CreateTupleDescCopy(RelationGetDescr(rel));
		table_close(rel, NoLock);
	}
	return s->tupdesc;
}

/*
 * Sets the executor's filter for the open reader: the quals but those the
 * lake checks exactly on every lake row (its row conditions, on the lake's
 * values before conversion): checked twice they cost a fifth of an
 * aggregate's scan. Which those are is known once the reader is open, and
 * may change at a rescan (a parameter's new value out of the column's
 * range is not pushed). The delta's row images never meet the lake's
 * checks: cold_scan_access applies all the quals to them.
 */
static void
filter_what_the_lake_does_not(ColdScanState *s)
{
	List	   *quals = cold_scan_quals((CustomScan *) s->css.ss.ps.plan);
	List	   *rest = NIL;
	ListCell   *lc;

	if (s->filter_set && bms_equal(s->lake_checked, s->reader.lake_checked))
		return;
	if (s->all_quals == NULL)
		s->all_quals = ExecInitQual(quals, &s->css.ss.ps);
	foreach(lc, quals)
		if (!bms_is_member(foreach_current_index(lc), s->reader.lake_checked))
			rest = lappend(rest, lfirst(lc));
	s->css.ss.ps.qual = list_length(rest) == list_length(quals) ? s->all_quals
		: ExecInitQual(rest, &s->css.ss.ps);
	s->lake_checked = bms_copy(s->reader.lake_checked);
	s->filter_set = true;
}

/*
 * Spares the lake scan converting the columns only the lake-checked quals
 * read: nothing above the scan looks at them (an aggregate over a range of
 * ts then converts no ts). The delta's keys are matched on the rows, so
 * the primary key is converted while the delta names any.
 */
static void
convert_only_what_is_read(ColdScanState *s)
{
	ColdReader *r = &s->reader;
	Bitmapset  *read = NULL;
	ListCell   *lc;

	if (r->lake == NULL || r->all_attrs || bms_is_empty(r->lake_checked))
		return;
	pull_varattnos((Node *) s->css.ss.ps.plan->targetlist, INDEX_VAR, &read);
	foreach(lc, cold_scan_quals((CustomScan *) s->css.ss.ps.plan))
		if (!bms_is_member(foreach_current_index(lc), r->lake_checked))
			pull_varattnos(lfirst(lc), INDEX_VAR, &read);
	if (r->delta_keys != NULL)
		for (int i = 0; i < r->table->npk; i++)
			read = bms_add_member(read, r->table->pk_attnos[i] - FirstLowInvalidHeapAttributeNumber);
	if (r->check_split)
		read = bms_add_member(read, r->table->tier_key_attno - FirstLowInvalidHeapAttributeNumber);
	/* A whole-row reference (attribute 0) reads everything. */
	if (bms_is_member(-FirstLowInvalidHeapAttributeNumber, read))
		return;
	foreach(lc, r->conditions)
	{
		EvaluatedCondition *c = lfirst(lc);
		Bitmapset  *checked = NULL;
		int			attno = -1;

		if (c->qual_index < 0 || !bms_is_member(c->qual_index, r->lake_checked))
			continue;
		cold_condition_attnos(c, &checked);
		while ((attno = bms_next_member(checked, attno)) >= 0)
			if (!bms_is_member(attno - FirstLowInvalidHeapAttributeNumber, read))
				lake_scan_skip_conversion(r->lake, attno);
	}
}


/* Evaluates the conditions and opens the reader: at the first row, or for EXPLAIN. */
static void
open_reader(ColdScanState *s)
{
	set_up_cold_scan(s);
	evaluate_conditions(s);
	if (!s->reader.skip)
		s->reader.tupdesc = table_tupdesc(s);
	s->reader.shared = s->shared;
	cold_reader_open(&s->reader);
	if (s->reader.skip)
		return;					/* no row to filter: the filter is never even compiled */
	filter_what_the_lake_does_not(s);
	convert_only_what_is_read(s);
}

/*
 * open_reader unless the reader is open. Asked at every row, so the test is
 * made inline: a function call to make it cost a count(*) a tenth of its
 * time, and finding the answer through the plan as much again.
 */
static inline void
open_for_scan(ColdScanState *s)
{
	if (!s->reader.opened)
		open_reader(s);
}

static TupleTableSlot *
cold_scan_access(ScanState *ss)
{
	ColdScanState *s = (ColdScanState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;
	ExprContext *econtext = ss->ps.ps_ExprContext;

	open_for_scan(s);			/* done already, unless called other than through exec_cold_scan */
	while (cold_reader_next(&s->reader, slot))
	{
		/* A row image from the delta (the lake is done): the quals the lake checked apply too. */
		if (s->reader.lake_done && ss->ps.qual != s->all_quals)
		{
			econtext->ecxt_scantuple = slot;
			if (!ExecQual(s->all_quals, econtext))
				continue;
		}
		return slot;
	}
	return ExecClearTuple(slot);
}

static bool
cold_scan_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

/*
 * The reader is opened before ExecScan takes ps.qual, which it does as each
 * call starts: the quals the lake checks are then out of it from the first
 * row on (the columns only they read are no longer converted).
 */
static TupleTableSlot *
exec_cold_scan(CustomScanState *node)
{
	open_for_scan((ColdScanState *) node);
	return ExecScan(&node->ss, cold_scan_access, cold_scan_recheck);
}

static void
end_cold_scan(CustomScanState *node)
{
	ColdScanState *s = (ColdScanState *) node;

	if (s->table != NULL)
		cold_reader_end(&s->reader);
}

/*
 * Starts over: the conditions may hold parameters that changed, so they
 * are evaluated again and the lake reopened with their filter. The pin
 * stays the statement's.
 */
static void
rescan_cold_scan(CustomScanState *node)
{
	ColdScanState *s = (ColdScanState *) node;
	Bitmapset  *attrs = s->reader.attrs;
	bool		all_attrs = s->reader.all_attrs;

	if (s->table == NULL)
		return;					/* not set up yet: nothing to start over */
	/* The filter is set again when the reader opens: the lake may check other quals then. */
	s->filter_set = false;
	cold_reader_end(&s->reader);
	cold_reader_begin(&s->reader, s->table, NULL, pin_of(s->table, s->shared));
	s->reader.attrs = attrs;
	s->reader.all_attrs = all_attrs;
}

/* ------------------------------------------------------------ parallel scans */

/*
 * The leader takes the statement's pin here, as the executor sets up the
 * parallel query: its processes read at the pin the leader's heap arm uses.
 */
static Size
estimate_cold_scan_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	ColdScanState *s = (ColdScanState *) node;

	set_up_cold_scan(s);
	return cold_rows_shared_size(&s->reader.pin);
}

static void
initialize_cold_scan_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	ColdScanState *s = (ColdScanState *) node;

	cold_rows_shared_init(coordinate, &s->reader.pin);
	s->shared = coordinate;
}

static void
reinitialize_cold_scan_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	cold_rows_shared_reset(coordinate, &((ColdScanState *) node)->workers);
}

/*
 * A worker adds what it read to the shared figures as it finishes; the
 * leader takes them for its EXPLAIN before the DSM goes away.
 */
static void
shutdown_cold_scan(CustomScanState *node)
{
	ColdScanState *s = (ColdScanState *) node;
	ColdReadFigures mine;

	if (s->shared == NULL)
		return;
	if (!IsParallelWorker())
		cold_rows_shared_collect(s->shared, &s->workers);
	else if (s->reader.opened)
	{
		reader_figures(&s->reader, &mine);
		cold_rows_shared_add(s->shared, &mine);
	}
}

static void
initialize_cold_scan_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	((ColdScanState *) node)->shared = coordinate;
}

/* The table and the pin a reader reads at. */
static void
explain_pin(ColdReader *r, ExplainState *es)
{
	ExplainPropertyText("Table", seam_table_name(r->table->relid), es);
	if (!r->table->mirrored)
		ExplainPropertyText("Cut-line T", seam_key_text(r->table, r->pin.tier_key_hi), es);
	else if (r->pin.has_snapshot)
		ExplainPropertyText("Hybrid Split", seam_key_text(r->table, r->pin.tier_key_hi), es);
	else
		ExplainPropertyText("Hybrid Split", "none: the heap answers (the mirror is late or cannot serve)", es);
	if (r->pin.has_snapshot)
		ExplainPropertyInteger("Lake Snapshot", NULL, r->pin.snapshot_id, es);
	else
		ExplainPropertyText("Lake Snapshot", "none", es);
}

/* What an open reader read and what pruning spared it (the lake's figures with ANALYZE). */
static void
explain_reading(ColdReader *r, const ColdReadFigures *workers, ExplainState *es)
{
	ColdReadFigures all;
	LakeScanStats st;

	if (r->skip)
	{
		ExplainPropertyText("Lake", "not read: no row below T meets the conditions", es);
		return;
	}
	if (r->table->mirrored)
	{
		ExplainPropertyInteger("Batches Newer Than the Snapshot", NULL, r->pin.ncorrections, es);
		ExplainPropertyInteger("Their Rows Read From the Heap", NULL, list_length(r->upserts), es);
	}
	else
		ExplainPropertyInteger("Delta Rows", NULL, r->delta_rows, es);
	ExplainPropertyInteger("Conditions Pushed to the Lake", NULL, r->pushed, es);
	if (r->lake == NULL)
		return;
	lake_scan_plan(r->lake);
	reader_figures(r, &all);
	if (workers != NULL)
		add_figures(&all, workers);
	st = all.lake;
	ExplainPropertyInteger("Lake Files", NULL, st.data_files - st.data_files_skipped, es);
	ExplainPropertyInteger("Lake Files Pruned", NULL, st.data_files_skipped, es);
	ExplainPropertyInteger("Lake Delete Files", NULL, st.delete_files, es);
	if (es->analyze)
	{
		ExplainPropertyInteger("Row Groups Read", NULL, st.row_groups_read, es);
		ExplainPropertyInteger("Row Groups Pruned", NULL, st.row_groups_skipped, es);
		ExplainPropertyInteger("Row Groups Pruned by Bloom Filters", NULL, st.row_groups_skipped_by_bloom, es);
		ExplainPropertyInteger("Pages Read", NULL, st.pages_read, es);
		ExplainPropertyInteger("Pages Skipped", NULL, st.pages_skipped, es);
		ExplainPropertyInteger("Rows Skipped Before Conversion", NULL, st.rows_skipped, es);
		ExplainPropertyInteger("Batches Skipped Before Decoding", NULL, st.batches_skipped, es);
		ExplainPropertyInteger("Rows Removed by Lake Deletes", NULL, st.rows_deleted, es);
		ExplainPropertyInteger("Rows Replaced by Delta", NULL, all.rows_replaced, es);
	}
}

void
cold_rows_reader_explain(ColdRowsReader *reader, const ColdReadFigures *workers, ExplainState *es)
{
	ColdReader *r = &reader->reader;

	explain_pin(r, es);
	if (!r->opened)
		cold_reader_open(r);	/* EXPLAIN without ANALYZE: plan the lake scan to show its pruning */
	explain_reading(r, workers, es);
}

/*
 * The quals' lines, as EXPLAIN shows a plan's own (cold_scan_quals says
 * why they are not): "Filter", and with ANALYZE the rows it removed.
 */
static void
explain_filter(ColdScanState *s, List *ancestors, ExplainState *es)
{
	PlanState  *ps = &s->css.ss.ps;
	List	   *quals = cold_scan_quals((CustomScan *) ps->plan);
	List	   *context;

	if (quals == NIL || es->deparse_cxt == NIL)
		return;					/* tierdb_explain asks for the other lines, with nothing to deparse against */
	context = set_deparse_context_plan(es->deparse_cxt, ps->plan, ancestors);
	ExplainPropertyText("Filter", deparse_expression((Node *) make_ands_explicit(quals), context, es->verbose, false),
						es);
	if (es->analyze && ps->instrument != NULL &&
		(ps->instrument->nfiltered1 > 0 || es->format != EXPLAIN_FORMAT_TEXT))
		ExplainPropertyFloat("Rows Removed by Filter", NULL,
							 ps->instrument->nloops > 0 ? ps->instrument->nfiltered1 / ps->instrument->nloops : 0,
							 0, es);
}

static void
explain_cold_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	ColdScanState *s = (ColdScanState *) node;

	explain_filter(s, ancestors, es);
	set_up_cold_scan(s);
	explain_pin(&s->reader, es);
	open_for_scan(s);			/* EXPLAIN without ANALYZE: plan the lake scan to show its pruning */
	explain_reading(&s->reader, &s->workers, es);
}

/* ------------------------------------------------------------ tierdb.cold_rows() */

PG_FUNCTION_INFO_V1(tierdb_cold_rows);

/*
 * tierdb.cold_rows(rowtype anyelement) RETURNS SETOF anyelement: the cold
 * rows of the table at the statement's pin, as a plain set-returning
 * function (the planner hook runs it as the custom scan instead).
 *
 * tierdb.cold_rows(rowtype anyelement, snapshot_id bigint, tier_key_hi
 * bigint): the same at a pin the caller holds (a tierdb.read_pins row, the
 * explicit protocol of SPEC §5: tierdb_rewrite_scan's SQL): the lake at S,
 * the delta below T.
 */
Datum
tierdb_cold_rows(PG_FUNCTION_ARGS)
{
	SeamTable  *table = table_of_rowtype(get_fn_expr_argtype(fcinfo->flinfo, 0));
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel;
	TupleDesc	desc;
	TupleTableSlot *slot;
	ColdReader	r;

	/*
	 * Only a backend without tierdb in shared_preload_libraries plans this
	 * function where a parallel worker may run it (the planner hook plans
	 * the cold scan instead, or keeps the function in the leader); a
	 * worker's pin could differ from the rest of the statement's.
	 */
	if (IsParallelWorker() && PG_NARGS() == 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tierdb.cold_rows(NULL::%s) cannot run in a parallel worker", seam_table_name(table->relid)),
				 errhint("Load tierdb with shared_preload_libraries, or SET max_parallel_workers_per_gather = 0.")));
	lake_check_direct_read(table->relid, "tierdb.cold_rows");
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	rel = table_open(table->relid, AccessShareLock);
	desc = CreateTupleDescCopy(RelationGetDescr(rel));
	table_close(rel, NoLock);
	slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	if (PG_NARGS() == 3)
	{
		SeamPin		given = {0};

		if (PG_ARGISNULL(2))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("tierdb.cold_rows needs the pinned cut-line T, not NULL")));
		given.tier_key_hi = PG_GETARG_INT64(2);
		given.has_snapshot = !PG_ARGISNULL(1);
		given.snapshot_id = given.has_snapshot ? PG_GETARG_INT64(1) : 0;
		if (given.snapshot_id < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("snapshot id " INT64_FORMAT " is not valid", given.snapshot_id),
					 errhint("Pass the pinned snapshot of the table's lake (tierdb.read_pins.pinned_lake_snapshot_id), "
							 "or NULL for none.")));
		cold_reader_begin(&r, table, desc, given);
	}
	else
		cold_reader_begin(&r, table, desc, seam_pin(table));
	while (cold_reader_next(&r, slot))
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, slot->tts_values, slot->tts_isnull);
	cold_reader_end(&r);
	ExecDropSingleTupleTableSlot(slot);
	return (Datum) 0;
}

/* ------------------------------------------------------------ registration */

void
cold_scan_init(void)
{
	DefineCustomBoolVariable("tierdb.enable_cold_pushdown",
							 "Pushes a query's conditions on a tiered table into its cold scan.",
							 "They prune lake files and row groups by their statistics, and are checked on the "
							 "lake's values before rows are converted. Off: every cold row is converted and "
							 "checked by the executor (for comparing results and plans).",
							 &enable_cold_pushdown, true, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("tierdb.enable_parallel_cold_scan",
							 "Lets parallel queries read a tiered table's lake files in their workers.",
							 "Off: the cold scan runs in one process, and a query reading a tiered table "
							 "gets no parallel plan over it.",
							 &enable_parallel_cold_scan, true, PGC_USERSET, 0, NULL, NULL, NULL);
	RegisterCustomScanMethods(&cold_scan_methods);
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = cold_set_rel_pathlist;
}
