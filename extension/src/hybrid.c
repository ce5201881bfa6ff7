/*-------------------------------------------------------------------------
 *
 * hybrid.c
 *		Hybrid reads of mirrored tables: the pin (hybrid_capture) and the
 *		heap's answers for the keys the pinned snapshot must not serve
 *		(hybrid_corrections); hybrid.h says why the result is exact.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "cold_scan.h"
#include "hybrid.h"
#include "lake_scan.h"

typedef enum MirroredReads
{
	MIRRORED_READS_HEAP,
	MIRRORED_READS_HYBRID
} MirroredReads;

static const struct config_enum_entry mirrored_reads_options[] = {
	{"heap", MIRRORED_READS_HEAP, false},
	{"hybrid", MIRRORED_READS_HYBRID, false},
	{NULL, 0, false}
};

static int	mirrored_reads = MIRRORED_READS_HEAP;
static int	mirror_wait_ms = 5000;
static int	hybrid_lag = 0;

/* Set while hybrid_corrections reads the heap: that read is a plain one. */
static int	correcting = 0;

bool
hybrid_reads_on(void)
{
	return mirrored_reads == MIRRORED_READS_HYBRID && correcting == 0;
}

/* ------------------------------------------------------------ the catalog */

static Oid
catalog_relid(const char *name)
{
	Oid			relid = get_relname_relid(name, seam_namespace());

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the TierDB catalog has no tierdb.%s", name),
				 errhint("The extension's catalog predates hybrid reads: create the extension again.")));
	return relid;
}

/* A fresh catalog snapshot: the frontier and the batches as last committed, not as the statement saw them. */
static Snapshot
latest_snapshot(void)
{
	InvalidateCatalogSnapshot();
	return RegisterSnapshot(GetCatalogSnapshot(InvalidOid));
}

static Datum
column(Relation rel, HeapTuple tuple, const char *name, bool *isnull)
{
	return heap_getattr(tuple, attnameAttNum(rel, name, false), RelationGetDescr(rel), isnull);
}

/* What tierdb.cutline says of a mirrored table. */
typedef struct Frontier
{
	bool		has_frontier;	/* F is NULL while the initial copy runs */
	uint64		frontier;		/* F */
	bool		has_snapshot;
	int64		snapshot_id;	/* S, the newest batch's */
	char	   *metadata_location;
} Frontier;

static Frontier
read_frontier(const SeamTable *table, Snapshot snapshot)
{
	Relation	rel = table_open(catalog_relid("cutline"), AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Frontier	f = {0};

	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(table->table_id));
	scan = systable_beginscan(rel, catalog_relid("cutline_pkey"), true, snapshot, 1, &key);
	if ((tuple = systable_getnext(scan)) != NULL)
	{
		bool		isnull;
		Datum		d = column(rel, tuple, "replicated_lsn", &isnull);

		f.has_frontier = !isnull;
		f.frontier = isnull ? 0 : (uint64) DatumGetInt64(d);
		d = column(rel, tuple, "lake_snapshot_id", &isnull);
		f.has_snapshot = !isnull;
		f.snapshot_id = isnull ? 0 : DatumGetInt64(d);
		d = column(rel, tuple, "lake_props", &isnull);
		if (!isnull)
		{
			Jsonb	   *props = DatumGetJsonbP(d);
			JsonbValue *v = getKeyJsonValueFromContainer(&props->root, "metadata_location",
														 strlen("metadata_location"), NULL);

			if (v != NULL && v->type == jbvString && v->val.string.len > 0)
				f.metadata_location = pnstrdup(v->val.string.val, v->val.string.len);
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return f;
}

/* One row of tierdb.mirror_batches. */
typedef struct MirrorBatch
{
	pg_uuid_t	op_id;
	int64		snapshot_id;
	bool		has_xids;
	uint64		xid_lo;
	uint64		xid_hi;
	uint64		xid_hi_running;
	bool		has_tier_key_max;
	int64		tier_key_max;
	bool		exact;
	bool		truncated;
} MirrorBatch;

/* The table's batches in publishing order, *n of them. */
static MirrorBatch *
read_batches(const SeamTable *table, Snapshot snapshot, int *n)
{
	Relation	rel = table_open(catalog_relid("mirror_batches"), AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	int			size = 16;
	MirrorBatch *batches = palloc(sizeof(MirrorBatch) * size);

	*n = 0;
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(table->table_id));
	/* the primary key (table_id, seq): in seq order */
	scan = systable_beginscan_ordered(rel, index_open(catalog_relid("mirror_batches_pkey"), AccessShareLock),
									  snapshot, 1, &key);
	while ((tuple = systable_getnext_ordered(scan, ForwardScanDirection)) != NULL)
	{
		MirrorBatch *b;
		bool		isnull;
		bool		hi_null;
		Datum		d;

		if (*n == size)
			batches = repalloc(batches, sizeof(MirrorBatch) * (size *= 2));
		b = &batches[(*n)++];
		memcpy(&b->op_id, DatumGetUUIDP(column(rel, tuple, "op_id", &isnull)), sizeof(pg_uuid_t));
		b->snapshot_id = DatumGetInt64(column(rel, tuple, "lake_snapshot_id", &isnull));
		d = column(rel, tuple, "xid_lo", &isnull);
		b->xid_lo = isnull ? 0 : (uint64) DatumGetInt64(d);
		b->xid_hi = (uint64) DatumGetInt64(column(rel, tuple, "xid_hi", &hi_null));
		b->has_xids = !isnull && !hi_null;
		b->xid_hi_running = (uint64) DatumGetInt64(column(rel, tuple, "xid_hi_running", &isnull));
		d = column(rel, tuple, "tier_key_max", &isnull);
		b->has_tier_key_max = !isnull;
		b->tier_key_max = isnull ? 0 : DatumGetInt64(d);
		b->exact = DatumGetBool(column(rel, tuple, "exact", &isnull));
		b->truncated = DatumGetBool(column(rel, tuple, "truncated", &isnull));
	}
	{
		Relation	index = scan->irel;

		systable_endscan_ordered(scan);
		index_close(index, AccessShareLock);
	}
	table_close(rel, AccessShareLock);
	return batches;
}

/* ------------------------------------------------------------ the capture */

/* A 32-bit transaction id of a live snapshot as a full one: it is at most one epoch behind the next id. */
static uint64
widen(TransactionId xid, FullTransactionId next)
{
	uint64		epoch = EpochFromFullTransactionId(next);

	if (xid > XidFromFullTransactionId(next))
		epoch--;
	return (epoch << 32) | xid;
}

/*
 * Whether every transaction of the batch is one `snapshot` sees (an id
 * below its xmax and none it lists as running lies in the batch's range;
 * conservative: the range may hold ids of other transactions).
 */
static bool
seen_by(const MirrorBatch *b, Snapshot snapshot, FullTransactionId next)
{
	if (!b->has_xids || b->xid_hi >= widen(snapshot->xmax, next))
		return false;
	for (uint32 i = 0; i < snapshot->xcnt; i++)
	{
		uint64		running = widen(snapshot->xip[i], next);

		if (running >= b->xid_lo && running <= b->xid_hi)
			return false;
	}
	return true;
}

/* The table's owner, and whether its row-level security binds the owner too (the heap corrections run as the owner). */
static Oid
table_owner(Oid relid, bool *forces_row_security)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class form;
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	form = (Form_pg_class) GETSTRUCT(tuple);
	owner = form->relowner;
	*forces_row_security = form->relrowsecurity && form->relforcerowsecurity;
	ReleaseSysCache(tuple);
	return owner;
}

/*
 * The split: `top` (the highest tier key the mirror wrote, canonical) less
 * a lag in the key's units: seconds for timestamps, days for dates, the
 * value for integers. Overflow puts it at the very bottom.
 */
static int64
split_below(SeamKeyKind kind, int64 top, int64 lag)
{
	int64		canonical = lag;
	int64		split;

	if ((kind == SEAM_KEY_TIMESTAMPTZ || kind == SEAM_KEY_TIMESTAMP) &&
		pg_mul_s64_overflow(lag, USECS_PER_SEC, &canonical))
		return PG_INT64_MIN;
	if (pg_sub_s64_overflow(top, canonical, &split))
		return PG_INT64_MIN;
	return split;
}

/*
 * Waits until F passes `position`, then reads the batches as published
 * with it; false when the wait times out or F is not set (the copy runs).
 */
static bool
wait_for_frontier(const SeamTable *table, XLogRecPtr position, int wait_ms, Frontier *f, MirrorBatch **batches,
				  int *nbatches)
{
	TimestampTz start = GetCurrentTimestamp();

	for (;;)
	{
		Snapshot	latest = latest_snapshot();

		*f = read_frontier(table, latest);
		if (f->has_frontier && f->frontier >= position)
			*batches = read_batches(table, latest, nbatches);
		UnregisterSnapshot(latest);
		if (!f->has_frontier)
			return false;
		if (f->frontier >= position)
			return true;
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), wait_ms))
			return false;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

SeamPin
hybrid_capture(const SeamTable *table, Snapshot snapshot)
{
	SeamPin		heap_only = {.tier_key_hi = PG_INT64_MIN, .hybrid = true};
	SeamPin		pin = heap_only;
	XLogRecPtr	position;
	FullTransactionId next;
	Frontier	f;
	MirrorBatch *b = NULL;
	int			n = 0;
	int			k;
	uint64		xmin;
	bool		forced;

	/* Its own writes are in no batch; a standby's snapshots list no running ids. */
	(void) table_owner(table->relid, &forced);
	if (snapshot->snapshot_type != SNAPSHOT_MVCC || snapshot->takenDuringRecovery ||
		TransactionIdIsValid(GetTopTransactionIdIfAny()) || forced)
		return heap_only;
	/* After the snapshot: every transaction it sees committed before this position. */
	position = GetXLogInsertRecPtr();
	if (!wait_for_frontier(table, position, mirror_wait_ms, &f, &b, &n) || n == 0 || !f.has_snapshot ||
		b[n - 1].snapshot_id != f.snapshot_id || !b[n - 1].has_tier_key_max)
		return heap_only;

	/*
	 * Batches up to the last whose running highest id is below the
	 * snapshot's xmin hold only transactions it sees; the batch before the
	 * first that may not must be kept, or the pruned ones are unknown.
	 */
	next = ReadNextFullTransactionId();
	xmin = widen(snapshot->xmin, next);
	for (k = 0; k < n && b[k].xid_hi_running < xmin; k++)
		;
	if (k == 0)
		return heap_only;
	k--;
	while (k + 1 < n && seen_by(&b[k + 1], snapshot, next))
		k++;
	if (!b[k].exact)
		return heap_only;
	for (int i = k + 1; i < n; i++)
		if (b[i].truncated)
			return heap_only;	/* its keys do not say what it removed */

	pin.has_snapshot = true;
	pin.snapshot_id = b[k].snapshot_id;
	pin.metadata_location = f.metadata_location;	/* the newest metadata holds every kept snapshot */
	pin.tier_key_hi = split_below(table->key_kind, b[n - 1].tier_key_max, hybrid_lag);
	pin.ncorrections = n - 1 - k;
	pin.corrections = palloc(sizeof(pg_uuid_t) * Max(pin.ncorrections, 1));
	for (int i = k + 1; i < n; i++)
		pin.corrections[i - k - 1] = b[i].op_id;
	return pin;
}

/* ------------------------------------------------------------ the corrections */

/* The keys (a row image each: the key columns and the tier key) the correction batches changed. */
static List *
correction_keys(const SeamTable *table, const SeamPin *pin, TupleDesc tupdesc)
{
	Relation	rel = table_open(catalog_relid("mirror_keys"), AccessShareLock);
	Relation	index = index_open(catalog_relid("mirror_keys_op"), AccessShareLock);
	/* written before their batches' lake commits, and so before the frontier that named them */
	Snapshot	latest = latest_snapshot();
	List	   *images = NIL;

	for (int i = 0; i < pin->ncorrections; i++)
	{
		ScanKeyData keys[2];
		SysScanDesc scan;
		HeapTuple	tuple;

		ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(table->table_id));
		ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_UUID_EQ, UUIDPGetDatum(&pin->corrections[i]));
		scan = systable_beginscan_ordered(rel, index, latest, 2, keys);
		while ((tuple = systable_getnext_ordered(scan, ForwardScanDirection)) != NULL)
		{
			bool		isnull;

			images = lappend(images, cold_scan_row_image(tupdesc->tdtypeid, column(rel, tuple, "key", &isnull)));
		}
		systable_endscan_ordered(scan);
	}
	UnregisterSnapshot(latest);
	index_close(index, AccessShareLock);
	table_close(rel, AccessShareLock);
	return images;
}

/* "OPERATOR(schema.=)": the default btree equality of typid, schema-qualified, for SQL run with a fixed search_path. */
static char *
equality_operator(Oid typid)
{
	Oid			opclass = GetDefaultOpClass(typid, BTREE_AM_OID);
	Oid			opno = OidIsValid(opclass)
		? get_opfamily_member(get_opclass_family(opclass), get_opclass_input_type(opclass),
							  get_opclass_input_type(opclass), BTEqualStrategyNumber)
		: InvalidOid;
	HeapTuple	tuple;
	char	   *name;

	if (!OidIsValid(opno))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("type %s has no default btree equality, which hybrid reads match keys with",
						format_type_be(typid))));
	tuple = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for operator %u", opno);
	name = psprintf("OPERATOR(%s.%s)",
					quote_identifier(get_namespace_name(((Form_pg_operator) GETSTRUCT(tuple))->oprnamespace)),
					NameStr(((Form_pg_operator) GETSTRUCT(tuple))->oprname));
	ReleaseSysCache(tuple);
	return name;
}

/* The key columns of a lake row: the merge key's, and the tier key unless it is one of them. */
static List *
key_attnos(const SeamTable *table)
{
	List	   *attnos = NIL;

	for (int i = 0; i < table->npk; i++)
		attnos = lappend_int(attnos, table->pk_attnos[i]);
	return list_append_unique_int(attnos, table->tier_key_attno);
}

/*
 * SELECT t FROM (the distinct keys in $1) k JOIN the table t ON the key
 * columns WHERE t.tier_key < $2: whole rows of the table's row type.
 */
static char *
corrections_sql(const SeamTable *table, TupleDesc tupdesc)
{
	StringInfoData sql;
	List	   *attnos = key_attnos(table);
	ListCell   *lc;
	const char *tk = quote_identifier(NameStr(TupleDescAttr(tupdesc, table->tier_key_attno - 1)->attname));

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT t FROM (SELECT DISTINCT ");
	foreach(lc, attnos)
		appendStringInfo(&sql, "%sk.%s", foreach_current_index(lc) > 0 ? ", " : "",
						 quote_identifier(NameStr(TupleDescAttr(tupdesc, lfirst_int(lc) - 1)->attname)));
	appendStringInfo(&sql, " FROM pg_catalog.unnest($1) AS k) AS k JOIN %s AS t ON ", seam_table_name(table->relid));
	foreach(lc, attnos)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, lfirst_int(lc) - 1);
		const char *name = quote_identifier(NameStr(att->attname));

		appendStringInfo(&sql, "%st.%s %s k.%s", foreach_current_index(lc) > 0 ? " AND " : "", name,
						 equality_operator(att->atttypid), name);
	}
	appendStringInfo(&sql, " WHERE t.%s OPERATOR(pg_catalog.<) $2", tk);
	return sql.data;
}

static Oid
split_type(SeamKeyKind kind)
{
	switch (kind)
	{
		case SEAM_KEY_BIGINT:
			return INT8OID;
		case SEAM_KEY_TIMESTAMPTZ:
			return TIMESTAMPTZOID;
		case SEAM_KEY_TIMESTAMP:
			return TIMESTAMPOID;
		case SEAM_KEY_DATE:
			return DATEOID;
	}
	return InvalidOid;
}

/*
 * The heap's rows of the keys below T, with the statement's snapshot (a
 * read-only SPI query uses the active one). As the table's owner, with a
 * fixed search_path: the reader's own reference to the table was checked
 * by the executor, and its policies filter the whole union; the owner is
 * bound by none unless it forces row-level security, which
 * hybrid_capture refuses.
 */
static List *
heap_rows(const SeamTable *table, const SeamPin *pin, TupleDesc tupdesc, List *images)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			rowtype = tupdesc->tdtypeid;
	Datum	   *elems = palloc(sizeof(Datum) * list_length(images));
	int16		len;
	bool		byval;
	char		align;
	ArrayType  *array;
	Oid			argtypes[2] = {get_array_type(rowtype), split_type(table->key_kind)};
	Datum		args[2];
	char	   *sql = corrections_sql(table, tupdesc);
	Oid			save_user;
	int			save_context;
	int			nest;
	bool		forced;
	List	   *rows = NIL;
	ListCell   *lc;

	foreach(lc, images)
		elems[foreach_current_index(lc)] = heap_copy_tuple_as_datum(lfirst(lc), tupdesc);
	get_typlenbyvalalign(rowtype, &len, &byval, &align);
	array = construct_array(elems, list_length(images), rowtype, len, byval, align);
	args[0] = PointerGetDatum(array);
	args[1] = seam_key_datum(table->key_kind, pin->tier_key_hi);

	GetUserIdAndSecContext(&save_user, &save_context);
	SetUserIdAndSecContext(table_owner(table->relid, &forced),
						   save_context | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
	nest = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	correcting++;
	PG_TRY();
	{
		int			rc;

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		rc = SPI_execute_with_args(sql, 2, argtypes, args, NULL, true, 0);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "reading the heap's rows for a hybrid read failed: %s", SPI_result_code_string(rc));
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			bool		isnull;
			Datum		row = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
			HeapTupleData tmp;
			MemoryContext old;

			tmp.t_len = HeapTupleHeaderGetDatumLength(DatumGetHeapTupleHeader(row));
			ItemPointerSetInvalid(&tmp.t_self);
			tmp.t_tableOid = InvalidOid;
			tmp.t_data = DatumGetHeapTupleHeader(row);
			old = MemoryContextSwitchTo(caller);
			rows = lappend(rows, heap_copytuple(&tmp));
			MemoryContextSwitchTo(old);
		}
		SPI_finish();
	}
	PG_FINALLY();
	{
		correcting--;
	}
	PG_END_TRY();
	AtEOXact_GUC(true, nest);
	SetUserIdAndSecContext(save_user, save_context);
	return rows;
}

void
hybrid_corrections(const SeamTable *table, const SeamPin *pin, TupleDesc tupdesc, DeltaKeys **keys, List **rows)
{
	List	   *images;
	Datum	   *values = palloc(sizeof(Datum) * tupdesc->natts);
	bool	   *isnull = palloc(sizeof(bool) * tupdesc->natts);
	ListCell   *lc;

	*keys = NULL;
	*rows = NIL;
	if (pin->ncorrections == 0)
		return;
	images = correction_keys(table, pin, tupdesc);
	if (images == NIL)
		return;
	*keys = delta_keys_create(tupdesc, table->npk, table->pk_attnos);
	foreach(lc, images)
	{
		heap_deform_tuple(lfirst(lc), tupdesc, values, isnull);
		delta_keys_add_row(*keys, values, isnull);
	}
	*rows = heap_rows(table, pin, tupdesc, images);
}

/* ------------------------------------------------------------ SQL: Spark's capture */

PG_FUNCTION_INFO_V1(tierdb_hybrid_read_begin);

/*
 * tierdb.hybrid_read_begin(table, lag, wait_ms) -> (split, lake_snapshot_id,
 * metadata_location), all NULL when the read must take the heap alone:
 * tierdb-spark's hybrid capture (SeamOptions.hybrid, the seed's "Mirrored"
 * reads). It waits, at most wait_ms, until F passes the WAL position now,
 * so the lake at the newest batch's snapshot holds everything committed so
 * far, and splits at the highest tier key less `lag`. Spark reads that
 * snapshot below the split and the heap, live, above it (as its reads of
 * tiered tables do: the cold side is the capture's, the hot side is read
 * when each task runs). For those who may read the whole table, without
 * row-level security (the lake files would bypass it).
 */
Datum
tierdb_hybrid_read_begin(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	int64		lag = PG_GETARG_INT64(1);
	int32		wait_ms = PG_GETARG_INT32(2);
	SeamTable  *table;
	TupleDesc	desc;
	Datum		values[3] = {0};
	bool		nulls[3] = {true, true, true};
	Frontier	f;
	MirrorBatch *b = NULL;
	int			n = 0;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "tierdb.hybrid_read_begin must return a row");
	if (lag < 0 || wait_ms < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a hybrid read's lag and wait must be 0 or more, not %lld and %d", (long long) lag, wait_ms)));
	lake_check_direct_read(relid, "tierdb.hybrid_read_begin");
	table = seam_lookup_mirrored(relid);
	if (table == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is not registered with TierDB in mirrored mode", seam_table_name(relid))));
	if (wait_for_frontier(table, GetXLogInsertRecPtr(), wait_ms, &f, &b, &n) && n > 0 && f.has_snapshot &&
		b[n - 1].snapshot_id == f.snapshot_id && b[n - 1].exact && b[n - 1].has_tier_key_max &&
		f.metadata_location != NULL)
	{
		values[0] = Int64GetDatum(split_below(table->key_kind, b[n - 1].tier_key_max, lag));
		values[1] = Int64GetDatum(f.snapshot_id);
		values[2] = CStringGetTextDatum(f.metadata_location);
		nulls[0] = nulls[1] = nulls[2] = false;
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

/* ------------------------------------------------------------ settings */

/* Plans made with one setting would go on reading the other way: the session's cached plans are made again. */
static void
replan_on_change(int newval, void *extra)
{
	if (newval != mirrored_reads)
		ResetPlanCache();
}

void
hybrid_init(void)
{
	DefineCustomEnumVariable("tierdb.mirrored_reads",
							 "How queries read mirrored tables: 'heap', or 'hybrid' (the lake below a split).",
							 "A hybrid read waits (tierdb.mirror_wait_ms) for the mirror to hold every change it "
							 "can see, then reads rows below the highest tier key minus tierdb.hybrid_lag from "
							 "the lake; when the mirror is late it reads the heap. Both are exact.",
							 &mirrored_reads,
							 MIRRORED_READS_HEAP,
							 mirrored_reads_options,
							 PGC_USERSET,
							 0,
							 NULL, replan_on_change, NULL);
	DefineCustomIntVariable("tierdb.mirror_wait_ms",
							"How long a hybrid read waits for the mirror to catch up before reading the heap.",
							NULL,
							&mirror_wait_ms,
							5000, 0, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("tierdb.hybrid_lag",
							"How far below the highest tier key a hybrid read splits: rows above stay on the heap.",
							"Seconds for timestamp tier keys, days for date keys, the key's own units for "
							"integer keys.",
							&hybrid_lag,
							0, 0, INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
}
