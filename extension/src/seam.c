/*-------------------------------------------------------------------------
 *
 * seam.c
 *		Registered tables and statement pins for in-database reads; see
 *		seam.h for the protocol and why it is safe.
 *
 * Both catalog tables are read directly (heap scans with a scan key), not
 * through SPI: this runs inside the planner and the executor of the
 * user's own query, where a nested SPI query would be both slower and
 * subject to the catalog's privileges, which the reader need not hold.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "commands/trigger.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/proc.h"
#include "storage/smgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "parser/parse_relation.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/fmgrprotos.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "coordination.h"
#include "cutline_changes.h"
#include "hybrid.h"
#include "seam.h"

/* Days between 1970-01-01 and Postgres' epoch 2000-01-01. */
#define UNIX_TO_PG_DAYS (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)

/* One statement's (or transaction's) pin of one table. */
typedef struct PinEntry
{
	Oid			relid;
	TransactionId xmin;			/* the reading snapshot's bounds: under READ */
	TransactionId xmax;			/* COMMITTED a new statement has new ones */
	uint32		xcnt;
	SeamPin		pin;
} PinEntry;

/* Pins of the current transaction, in TopTransactionContext; reset at its end. */
static List *pins = NIL;

/*
 * Tiered tables the executor checked SELECT on for a statement of the
 * current transaction (note_readable_tables), in TopTransactionContext;
 * reset at its end. The heap arm's bound (tierdb.seam_t_*) runs as the
 * current user, but the reference it bounds may be checked as another (a
 * view's owner): such a reader may learn T, as it reads the rows.
 */
static List *readable_tables = NIL;
static ExecutorCheckPerms_hook_type prev_check_perms_hook = NULL;

/* ------------------------------------------------------------ catalog access */

/*
 * The tierdb schema, looked up once per change to pg_namespace: every
 * planning asks (0.1% of a point lookup).
 */
static Oid	tierdb_namespace = InvalidOid;
static bool tierdb_namespace_known = false;

static void
forget_namespace(Datum arg, int cacheid, uint32 hashvalue)
{
	tierdb_namespace_known = false;
}

Oid
seam_namespace(void)
{
	static bool callback_registered = false;

	if (!callback_registered)
	{
		CacheRegisterSyscacheCallback(NAMESPACEOID, forget_namespace, (Datum) 0);
		callback_registered = true;
	}
	if (!tierdb_namespace_known)
	{
		tierdb_namespace = get_namespace_oid("tierdb", true);
		tierdb_namespace_known = true;
	}
	return tierdb_namespace;
}

/* The relation tierdb.<name>, or InvalidOid when the extension is not installed here. */
static Oid
catalog_relid(const char *name)
{
	Oid			nsp = seam_namespace();

	return OidIsValid(nsp) ? get_relname_relid(name, nsp) : InvalidOid;
}

/*
 * tierdb.tables and tierdb.cutline, which every planning and every pin
 * ask for, looked up once: forget_registrations forgets them when either
 * relation changes (dropped with the extension, say) and on a full reset.
 * Cached only while that callback is registered.
 */
static Oid	tables_catalog = InvalidOid;
static Oid	cutline_catalog = InvalidOid;
static int	cutline_counted = -1;	/* cutline_writes_counted's answer; -1: not known yet */
static bool catalog_callback_registered = false;

static Oid
cached_catalog_relid(Oid *cache, const char *name)
{
	if (!OidIsValid(*cache))
	{
		Oid			relid = catalog_relid(name);

		if (!catalog_callback_registered)
			return relid;
		*cache = relid;
	}
	return *cache;
}

/* The text value of column `name` of a catalog tuple, or NULL. */
static char *
text_column(Relation rel, HeapTuple tuple, const char *name)
{
	bool		isnull;
	Datum		d = heap_getattr(tuple, attnameAttNum(rel, name, false), RelationGetDescr(rel), &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

/*
 * The first row of catalog table tierdb.<name> whose table_id is relid,
 * copied, or NULL; *rel_out receives the open relation (closed by the
 * caller), NULL when the catalog table does not exist.
 */
static HeapTuple
catalog_row(const char *name, Oid relid, Snapshot snapshot, Relation *rel_out)
{
	Oid			catalog = catalog_relid(name);
	Relation	rel;
	TableScanDesc scan;
	ScanKeyData key;
	HeapTuple	tuple;

	*rel_out = NULL;
	if (!OidIsValid(catalog))
		return NULL;
	rel = table_open(catalog, AccessShareLock);
	ScanKeyInit(&key, attnameAttNum(rel, "table_id", false), BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum((int64) relid));
	scan = table_beginscan(rel, snapshot, 1, &key);
	tuple = heap_getnext(scan, ForwardScanDirection);
	if (tuple != NULL)
		tuple = heap_copytuple(tuple);
	table_endscan(scan);
	*rel_out = rel;
	return tuple;
}

static SeamKeyKind
parse_key_kind(const char *name)
{
	if (strcmp(name, "bigint") == 0)
		return SEAM_KEY_BIGINT;
	if (strcmp(name, "timestamptz") == 0)
		return SEAM_KEY_TIMESTAMPTZ;
	if (strcmp(name, "timestamp") == 0)
		return SEAM_KEY_TIMESTAMP;
	if (strcmp(name, "date") == 0)
		return SEAM_KEY_DATE;
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("tierdb.tables names an unknown tier key type \"%s\"", name)));
}

/* The attribute number of a column the registration names; ERROR if the table lost it. */
static AttrNumber
registered_column(Oid relid, const char *column)
{
	AttrNumber	attno = get_attnum(relid, column);

	if (attno == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of table %s, registered with TierDB, does not exist",
						column, seam_table_name(relid)),
				 errhint("Re-register the table, or set tierdb.transparent_reads = off to read its heap.")));
	return attno;
}

/*
 * The tier key type's btree comparison operators, found once per
 * registration: the planner asks which one a condition uses for every
 * query (get_op_opfamily_strategy, 0.1% of a point lookup).
 */
static void
tier_key_operators(SeamTable *t, Oid key_type)
{
	Oid			opfamily = lookup_type_cache(key_type, TYPECACHE_BTREE_OPFAMILY)->btree_opf;

	t->tier_key_opfamily = opfamily;
	for (int strategy = 1; strategy <= BTMaxStrategyNumber; strategy++)
		t->tier_key_ops[strategy - 1] = OidIsValid(opfamily)
			? get_opfamily_member(opfamily, key_type, key_type, strategy) : InvalidOid;
}

/*
 * A snapshot of the newest committed state, registered (the caller
 * unregisters it). GetLatestSnapshot would do, but it is refused in
 * parallel mode, and the leader of a parallel plan (a Gather) runs the
 * whole plan in parallel mode: its cold scan and the heap arm's bound pin
 * while it runs. A catalog snapshot taken afresh is as new and allowed
 * there. (Workers never pin: the functions and the custom scan that do
 * are parallel restricted, so the lake is read once, by the leader.)
 */
static Snapshot
fresh_snapshot(void)
{
	InvalidateCatalogSnapshot();
	return RegisterSnapshot(GetCatalogSnapshot(InvalidOid));
}

/* Reads the registration from tierdb.tables; NULL when not registered. Palloc'd in the current context. */
static SeamTable *
read_registration(Oid relid)
{
	Relation	rel;
	Snapshot	latest = fresh_snapshot();
	HeapTuple	tuple = catalog_row("tables", relid, latest, &rel);
	SeamTable  *t = NULL;

	if (tuple != NULL)
	{
		char	   *mode = text_column(rel, tuple, "mode");

		if (mode != NULL &&
			(strcmp(mode, "tiered") == 0 || strcmp(mode, "direct") == 0 || strcmp(mode, "mirrored") == 0))
		{
			bool		isnull;
			Datum		pk = heap_getattr(tuple, attnameAttNum(rel, "primary_key_cols", false),
										  RelationGetDescr(rel), &isnull);
			Datum	   *parts;
			int			nparts;

			t = palloc0(sizeof(SeamTable));
			t->relid = relid;
			t->table_id = (int64) relid;
			t->direct = strcmp(mode, "direct") == 0;
			if (strcmp(mode, "mirrored") == 0)
			{
				bool		no_retention;

				(void) heap_getattr(tuple, attnameAttNum(rel, "heap_retention_lag", false), RelationGetDescr(rel),
									&no_retention);
				t->mirrored = no_retention;
				t->lake_beyond_t = !no_retention;
			}
			t->lake_location = text_column(rel, tuple, "lake_table_ref");
			t->tier_key_attno = registered_column(relid, text_column(rel, tuple, "tier_key_col"));
			t->key_kind = parse_key_kind(text_column(rel, tuple, "tier_key_type"));
			{
				bool		keep_null;
				Datum		keep = heap_getattr(tuple, attnameAttNum(rel, "keep_heap", false), RelationGetDescr(rel),
												&keep_null);

				t->keep_heap = !keep_null && DatumGetBool(keep);
			}
			tier_key_operators(t, get_atttype(relid, t->tier_key_attno));
			if (isnull)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("tierdb.tables has no primary_key_cols for table %s", seam_table_name(relid))));
			deconstruct_array(DatumGetArrayTypeP(pk), TEXTOID, -1, false, TYPALIGN_INT, &parts, NULL, &nparts);
			t->npk = nparts;
			t->pk_attnos = palloc(sizeof(AttrNumber) * nparts);
			for (int i = 0; i < nparts; i++)
				t->pk_attnos[i] = registered_column(relid, TextDatumGetCString(parts[i]));
		}
		heap_freetuple(tuple);
	}
	if (rel != NULL)
		table_close(rel, AccessShareLock);
	UnregisterSnapshot(latest);
	return t;
}

/*
 * Registrations are cached per backend, because every plan and every
 * execution touching a partitioned table asks. The trigger on
 * tierdb.tables invalidates the table's relcache entry on every change
 * (tierdb_registration_changed), and so this cache's entry, in every
 * session; so does any DDL on the table. A new tierdb.tables (the
 * extension dropped and created again) empties the cache.
 */
typedef struct RegistrationEntry
{
	Oid			relid;			/* hash key */
	bool		tiered;			/* tiered or direct */
	bool		mirrored;
	SeamTable	table;			/* when either; strings and arrays in CacheMemoryContext */
	ItemPointerData cutline_tid;	/* where its tierdb.cutline row was last seen */
	bool		planning_t_known;
	int64		planning_t;		/* seam_planning_t's */
	bool		statement_t_known;
	int64		statement_t;	/* seam_statement_t's, while tierdb.cutline is unchanged since: */
	uint64		statement_t_changes;	/* the count of its writes then (cutline_changes.h) */
} RegistrationEntry;

static HTAB *registrations = NULL;
static Oid	registrations_catalog = InvalidOid;	/* the tierdb.tables they came from */

static void
free_registration(RegistrationEntry *e)
{
	if (e->tiered || e->mirrored)
	{
		pfree(e->table.lake_location);
		pfree(e->table.pk_attnos);
	}
}

static void
forget_registrations(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS seq;
	RegistrationEntry *e;

	if (!OidIsValid(relid) || relid == tables_catalog || relid == cutline_catalog)
	{
		tables_catalog = cutline_catalog = InvalidOid;
		cutline_counted = -1;
	}
	if (registrations == NULL)
		return;
	hash_seq_init(&seq, registrations);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (OidIsValid(relid) && e->relid != relid)
			continue;
		free_registration(e);
		hash_search(registrations, &e->relid, HASH_REMOVE, NULL);
	}
}

static SeamTable *
copy_table(const SeamTable *from, MemoryContext cxt)
{
	SeamTable  *t = MemoryContextAlloc(cxt, sizeof(SeamTable));

	*t = *from;
	t->lake_location = from->lake_location ? MemoryContextStrdup(cxt, from->lake_location) : NULL;
	t->pk_attnos = MemoryContextAlloc(cxt, sizeof(AttrNumber) * from->npk);
	memcpy(t->pk_attnos, from->pk_attnos, sizeof(AttrNumber) * from->npk);
	return t;
}

/* The table's entry in the registrations cache, read on a miss; NULL without the extension. */
static RegistrationEntry *
registration(Oid relid)
{
	Oid			catalog;
	RegistrationEntry *e;
	SeamTable  *read;
	bool		found;

	if (!catalog_callback_registered)
	{
		CacheRegisterRelcacheCallback(forget_registrations, (Datum) 0);
		catalog_callback_registered = true;
	}
	catalog = cached_catalog_relid(&tables_catalog, "tables");
	if (!OidIsValid(catalog))
		return NULL;
	if (registrations == NULL)
	{
		HASHCTL		ctl = {.keysize = sizeof(Oid), .entrysize = sizeof(RegistrationEntry)};

		registrations = hash_create("tierdb registrations", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	if (catalog != registrations_catalog)
	{
		forget_registrations((Datum) 0, InvalidOid);
		registrations_catalog = catalog;
	}
	e = hash_search(registrations, &relid, HASH_FIND, NULL);
	if (e != NULL)
		return e;

	/* Read first, then enter: an error while reading leaves no half-made entry. */
	read = read_registration(relid);
	e = hash_search(registrations, &relid, HASH_ENTER, &found);
	e->tiered = read != NULL && !read->mirrored;
	e->mirrored = read != NULL && read->mirrored;
	ItemPointerSetInvalid(&e->cutline_tid);
	e->planning_t_known = false;
	e->statement_t_known = false;
	if (read != NULL)
	{
		SeamTable  *cached = copy_table(read, CacheMemoryContext);

		e->table = *cached;
		pfree(cached);
		pfree(read);
	}
	return e;
}

SeamTable *
seam_lookup_table(Oid relid)
{
	RegistrationEntry *e = registration(relid);

	return e != NULL && e->tiered ? copy_table(&e->table, CurrentMemoryContext) : NULL;
}

SeamTable *
seam_lookup_mirrored(Oid relid)
{
	RegistrationEntry *e = registration(relid);

	return e != NULL && e->mirrored ? copy_table(&e->table, CurrentMemoryContext) : NULL;
}

SeamTable *
seam_lookup_read_table(Oid relid)
{
	RegistrationEntry *e = registration(relid);

	return e != NULL && (e->tiered || e->mirrored) ? copy_table(&e->table, CurrentMemoryContext) : NULL;
}

bool
seam_has_mode(Oid relid, const char *wanted)
{
	Relation	rel;
	Snapshot	latest = fresh_snapshot();
	HeapTuple	tuple = catalog_row("tables", relid, latest, &rel);
	char	   *mode = tuple != NULL ? text_column(rel, tuple, "mode") : NULL;

	if (rel != NULL)
		table_close(rel, AccessShareLock);
	UnregisterSnapshot(latest);
	return mode != NULL && strcmp(mode, wanted) == 0;
}

bool
seam_is_direct(Oid relid)
{
	return seam_has_mode(relid, "direct");
}

Oid
seam_mirrored_root(Oid relid)
{
	List	   *ancestors;
	Oid			root;

	if (!OidIsValid(relid) || !OidIsValid(seam_namespace()) || !get_rel_relispartition(relid))
		return InvalidOid;
	ancestors = get_partition_ancestors(relid);
	root = llast_oid(ancestors);
	return seam_has_mode(root, "mirrored") ? root : InvalidOid;
}

bool
seam_is_tiered(Oid relid)
{
	RegistrationEntry *e = registration(relid);

	return e != NULL && e->tiered;
}

/* ------------------------------------------------------------ pins */

/* The snapshot this read's rows come from. */
static Snapshot
reading_snapshot(void)
{
	return ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();
}

static PinEntry *
find_pin(Oid relid, Snapshot snap)
{
	ListCell   *lc;

	foreach(lc, pins)
	{
		PinEntry   *e = lfirst(lc);

		if (e->relid == relid &&
			(IsolationUsesXactSnapshot() ||
			 (e->xmin == snap->xmin && e->xmax == snap->xmax && e->xcnt == snap->xcnt)))
			return e;
	}
	return NULL;
}

/*
 * Whether block blkno of rel exists, mostly without asking the kernel: the
 * size smgr last saw is a lower bound, as long as the relation was not
 * truncated since, and a truncation (VACUUM's, under an exclusive lock)
 * sends an smgr invalidation at once, which closes our smgr relation and
 * so forgets that size the next time we lock the table. Asking (lseek)
 * cost a point lookup 1% of its time.
 */
static bool
block_exists(Relation rel, BlockNumber blkno)
{
	BlockNumber known = RelationGetSmgr(rel)->smgr_cached_nblocks[MAIN_FORKNUM];

	if (known != InvalidBlockNumber && blkno < known)
		return true;
	return blkno < RelationGetNumberOfBlocks(rel);	/* remembers the size */
}

/* The cut-line in the table's tierdb.cutline tuple. */
static SeamPin
cutline_of(Oid relid, Relation rel, HeapTuple tuple)
{
	TupleDesc	desc = RelationGetDescr(rel);
	SeamPin		pin = {0};
	bool		isnull;
	Datum		d = heap_getattr(tuple, attnameAttNum(rel, "tier_key_hi", false), desc, &isnull);
	/* read again if an invalidation (the pump publishing F) dropped it since the caller looked */
	RegistrationEntry *e = registration(relid);

	/* A mirrored table has no T: its heap holds every row (as if T were at the very bottom). */
	if (isnull && e != NULL && e->mirrored)
		d = Int64GetDatum(PG_INT64_MIN);
	else if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the TierDB cut-line of table %s has no tier_key_hi", seam_table_name(relid))));
	pin.tier_key_hi = DatumGetInt64(d);
	d = heap_getattr(tuple, attnameAttNum(rel, "lake_snapshot_id", false), desc, &isnull);
	pin.has_snapshot = !isnull;
	pin.snapshot_id = isnull ? 0 : DatumGetInt64(d);
	d = heap_getattr(tuple, attnameAttNum(rel, "retention_line", false), desc, &isnull);
	pin.has_retention_line = !isnull;
	pin.retention_line = isnull ? 0 : DatumGetInt64(d);
	d = heap_getattr(tuple, attnameAttNum(rel, "lake_props", false), desc, &isnull);
	if (pin.has_snapshot && !isnull)
	{
		Jsonb	   *props = DatumGetJsonbP(d);
		JsonbValue *v = getKeyJsonValueFromContainer(&props->root, "metadata_location",
													 strlen("metadata_location"), NULL);

		if (v != NULL && v->type == jbvString && v->val.string.len > 0)
			pin.metadata_location = pnstrdup(v->val.string.val, v->val.string.len);
	}
	return pin;
}

/*
 * Reads the cut-line from the table's tierdb.cutline row at the TID where
 * it was last seen, if a version visible to `snapshot` is there: under an
 * MVCC snapshot at most one version of the row is visible, so a visible
 * tuple at that TID with the table's id is the row a scan would return,
 * for one buffer access instead of a scan. False after an update (the
 * daemon advancing the cut-line) has moved the row.
 */
static bool
cutline_where_last_seen(Oid relid, Relation rel, Snapshot snapshot, SeamPin *pin)
{
	RegistrationEntry *e = registrations ? hash_search(registrations, &relid, HASH_FIND, NULL) : NULL;
	HeapTupleData tuple;
	Buffer		buffer;
	Datum		id;
	bool		isnull;
	bool		ours;

	if (e == NULL || !ItemPointerIsValid(&e->cutline_tid) ||
		!block_exists(rel, ItemPointerGetBlockNumber(&e->cutline_tid)))
		return false;
	tuple.t_self = e->cutline_tid;
	if (!heap_fetch(rel, snapshot, &tuple, &buffer, false))
		return false;
	id = heap_getattr(&tuple, attnameAttNum(rel, "table_id", false), RelationGetDescr(rel), &isnull);
	ours = !isnull && DatumGetInt64(id) == (int64) relid;
	if (ours)
		*pin = cutline_of(relid, rel, &tuple);
	ReleaseBuffer(buffer);
	return ours;
}

/* The cut-line as `snapshot` sees it. */
static SeamPin
cutline_at(Oid relid, Snapshot snapshot)
{
	Oid			catalog = cached_catalog_relid(&cutline_catalog, "cutline");
	Relation	rel = OidIsValid(catalog) ? table_open(catalog, AccessShareLock) : NULL;
	HeapTuple	found;
	RegistrationEntry *e;
	SeamPin		pin;

	/* The registration is looked up after the lock: invalidations it accepted may have dropped it. */
	if (rel != NULL && cutline_where_last_seen(relid, rel, snapshot, &pin))
	{
		table_close(rel, AccessShareLock);
		return pin;
	}
	if (rel != NULL)
		table_close(rel, AccessShareLock);
	found = catalog_row("cutline", relid, snapshot, &rel);
	if (found == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("table %s is registered with TierDB but has no tierdb.cutline row",
						seam_table_name(relid)),
				 errhint("Re-register the table with tierdb register.")));
	e = registrations ? hash_search(registrations, &relid, HASH_FIND, NULL) : NULL;
	if (e != NULL)
		e->cutline_tid = found->t_self;
	pin = cutline_of(relid, rel, found);
	heap_freetuple(found);
	table_close(rel, AccessShareLock);
	return pin;
}

/* Reads the cut-line with a snapshot taken after the lock (seam.h says why). */
static SeamPin
read_cutline(const SeamTable *table)
{
	Snapshot	latest = fresh_snapshot();
	SeamPin		pin = cutline_at(table->relid, latest);

	UnregisterSnapshot(latest);
	return pin;
}

SeamPin
seam_latest_cutline(const SeamTable *table)
{
	return read_cutline(table);
}

SeamPin
seam_pin(const SeamTable *table)
{
	Snapshot	snap = reading_snapshot();
	PinEntry   *e = find_pin(table->relid, snap);
	MemoryContext old;

	if (e != NULL)
		return e->pin;
	/* Shared until the transaction ends; no SQL session can take it (coordination.h). */
	if (!table->mirrored)
		coordination_lock_readers(table->table_id, ShareLock);
	old = MemoryContextSwitchTo(TopTransactionContext);
	e = palloc(sizeof(PinEntry));
	e->relid = table->relid;
	e->xmin = snap->xmin;
	e->xmax = snap->xmax;
	e->xcnt = snap->xcnt;
	/* A mirrored table's heap is complete and nothing drops it: no lock, the capture decides (hybrid.h). */
	e->pin = table->mirrored ? hybrid_capture(table, snap) : read_cutline(table);
	pins = lappend(pins, e);
	MemoryContextSwitchTo(old);
	return e->pin;
}

/*
 * Whether writes to tierdb.cutline are counted (cutline_changes.h): its
 * trigger cutline_writing is there and fires in every replication role. Not
 * in a database whose extension predates the trigger, nor once someone
 * disables it; enabling or disabling it invalidates the catalog's relcache
 * entry, which makes this be asked again.
 */
static bool
cutline_writes_counted(void)
{
	Oid			catalog;
	Relation	rel;

	if (cutline_counted >= 0)
		return cutline_counted > 0;
	catalog = cached_catalog_relid(&cutline_catalog, "cutline");
	if (!OidIsValid(catalog))
		return false;
	rel = table_open(catalog, AccessShareLock);
	cutline_counted = 0;
	for (int i = 0; rel->trigdesc != NULL && i < rel->trigdesc->numtriggers; i++)
	{
		Trigger    *trigger = &rel->trigdesc->triggers[i];

		if (strcmp(trigger->tgname, "cutline_writing") == 0 && trigger->tgenabled == TRIGGER_FIRES_ALWAYS)
			cutline_counted = 1;
	}
	table_close(rel, AccessShareLock);
	return cutline_counted > 0;
}

/*
 * T for a read of heap rows only (heap_only.c's guard): the statement's pin
 * when it has one, else the cut-line its own snapshot sees, without
 * pinning. Such a read touches neither the lake nor the delta, so it needs
 * no reader key: the partitions it reads are locked by the statement
 * itself, and a snapshot that shows T shows every correction at or above
 * T in the heap. Nor does it leave a pin behind, which another reference
 * in the same statement, one that reads the lake, must take properly.
 */
int64
seam_statement_t(Oid relid, Snapshot snapshot)
{
	PinEntry   *e = find_pin(relid, snapshot);
	RegistrationEntry *r;
	uint64		changes;

	if (e != NULL)
		return e->pin.tier_key_hi;
	r = registrations ? hash_search(registrations, &relid, HASH_FIND, NULL) : NULL;
	if (r != NULL && r->statement_t_known && cutline_unchanged_since(r->statement_t_changes) &&
		cutline_writes_counted())
		return r->statement_t;
	/*
	 * Cached from a snapshot taken after the counters were found quiet, so
	 * that it holds for any snapshot taken while they stay the same
	 * (cutline_changes.h). The snapshot of a statement can be older than
	 * that (a function's statement reads with its caller's): it then sees
	 * the same T or a lower one, as T only advances, and reading the heap
	 * only at or above the higher T reads the same rows.
	 */
	if (cutline_writes_counted() && cutline_changes_quiet(&changes))
	{
		Snapshot	latest = fresh_snapshot();
		int64		t = cutline_at(relid, latest).tier_key_hi;

		UnregisterSnapshot(latest);
		/* Looked up again: reading the cut-line may have accepted an invalidation. */
		r = registrations ? hash_search(registrations, &relid, HASH_FIND, NULL) : NULL;
		if (r != NULL)
		{
			r->statement_t = t;
			r->statement_t_changes = changes;
			r->statement_t_known = true;
		}
	}
	return cutline_at(relid, snapshot).tier_key_hi;
}

int64
seam_planning_t(const SeamTable *table)
{
	RegistrationEntry *e;
	int64		t;

	if (IsolationUsesXactSnapshot())
		return seam_pin(table).tier_key_hi;
	e = registrations ? hash_search(registrations, &table->relid, HASH_FIND, NULL) : NULL;
	if (e != NULL && e->planning_t_known)
		return e->planning_t;
	t = read_cutline(table).tier_key_hi;
	/* Looked up again: reading the cut-line may have accepted an invalidation. */
	e = registrations ? hash_search(registrations, &table->relid, HASH_FIND, NULL) : NULL;
	if (e != NULL)
	{
		e->planning_t = t;
		e->planning_t_known = true;
	}
	return t;
}

static void
forget_pins(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			pins = NIL;			/* the lists lived in TopTransactionContext */
			readable_tables = NIL;
			break;
		default:
			break;
	}
}

/*
 * ExecutorCheckPerms_hook, called once a statement's range table passed
 * the executor's checks: notes the tiered tables it may read.
 */
static bool
note_readable_tables(List *range_table, bool ereport_on_violation)
{
	ListCell   *lc;

	if (prev_check_perms_hook && !prev_check_perms_hook(range_table, ereport_on_violation))
		return false;
	if (IsParallelWorker())
		return true;			/* workers never compute the bound: the leader does */
	foreach(lc, range_table)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_RELATION && rte->relkind == RELKIND_PARTITIONED_TABLE &&
			(rte->requiredPerms & ACL_SELECT) && !list_member_oid(readable_tables, rte->relid) &&
			seam_is_tiered(rte->relid))
		{
			MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

			readable_tables = lappend_oid(readable_tables, rte->relid);
			MemoryContextSwitchTo(old);
		}
	}
	return true;
}

void
seam_init(void)
{
	RegisterXactCallback(forget_pins, NULL);
	prev_check_perms_hook = ExecutorCheckPerms_hook;
	ExecutorCheckPerms_hook = note_readable_tables;
	cutline_changes_init();
}

/* ------------------------------------------------------------ tier-key values */

/*
 * Canonical values beyond what the type holds (T is INT64_MIN while a
 * MINVALUE partition is the oldest) become the type's infinities, which
 * compare with its values as the canonical value does with theirs.
 */
Datum
seam_key_datum(SeamKeyKind kind, int64 canonical)
{
	int64		pg;

	switch (kind)
	{
		case SEAM_KEY_BIGINT:
			return Int64GetDatum(canonical);
		case SEAM_KEY_TIMESTAMPTZ:
		case SEAM_KEY_TIMESTAMP:
			if (pg_sub_s64_overflow(canonical, (int64) UNIX_TO_PG_DAYS * USECS_PER_DAY, &pg))
				pg = DT_NOBEGIN;	/* only below can it overflow: the epoch shift is positive */
			return Int64GetDatum(pg);
		case SEAM_KEY_DATE:
			if (pg_sub_s64_overflow(canonical, UNIX_TO_PG_DAYS, &pg) || pg <= PG_INT32_MIN)
				return DateADTGetDatum(DATEVAL_NOBEGIN);
			if (pg >= PG_INT32_MAX)
				return DateADTGetDatum(DATEVAL_NOEND);
			return DateADTGetDatum((DateADT) pg);
	}
	return (Datum) 0;
}

char *
seam_table_name(Oid relid)
{
	char	   *name = get_rel_name(relid);
	char	   *nsp = name != NULL ? get_namespace_name(get_rel_namespace(relid)) : NULL;

	if (name == NULL || nsp == NULL)
		return psprintf("with OID %u", relid);
	return quote_qualified_identifier(nsp, name);
}

char *
seam_key_text(const SeamTable *table, int64 canonical)
{
	Oid			typid = get_atttype(table->relid, table->tier_key_attno);
	Oid			out;
	bool		varlena;

	if (table->key_kind == SEAM_KEY_BIGINT && typid != INT8OID)
		return psprintf(INT64_FORMAT, canonical);
	getTypeOutputInfo(typid, &out, &varlena);
	return OidOutputFunctionCall(out, seam_key_datum(table->key_kind, canonical));
}

int64
seam_key_canonical(SeamKeyKind kind, Oid typid, Datum value)
{
	switch (kind)
	{
		case SEAM_KEY_BIGINT:
			if (typid == INT2OID)
				return DatumGetInt16(value);
			if (typid == INT4OID)
				return DatumGetInt32(value);
			return DatumGetInt64(value);
		case SEAM_KEY_TIMESTAMPTZ:
		case SEAM_KEY_TIMESTAMP:
			{
				int64		canonical;

				/*
				 * Only above can it overflow (the epoch shift is positive):
				 * 'infinity' and instants after 294247-01-10 have no
				 * canonical value and are above every one, as INT64_MAX is
				 * at or above every T (issue 16 item 3).
				 */
				if (pg_add_s64_overflow(DatumGetInt64(value), (int64) UNIX_TO_PG_DAYS * USECS_PER_DAY, &canonical))
					return PG_INT64_MAX;
				return canonical;
			}
		case SEAM_KEY_DATE:
			return (int64) DatumGetDateADT(value) + UNIX_TO_PG_DAYS;
	}
	return 0;
}

/* ------------------------------------------------------------ SQL: the heap branch's bound */

/*
 * tierdb.seam_t_<type>(regclass): T of the statement's pin, in the tier
 * key's type, for the heap branch of a transparent read (transparent.c):
 * tier_key >= (SELECT tierdb.seam_t_timestamptz('public.events')). One
 * function per family so the comparison uses the key's own operator and
 * run-time partition pruning applies. Callable by those who may read the
 * table: with SELECT on it or on some of its columns, or through a
 * reference the executor checked (readable_tables).
 */
static Datum
pinned_t(Oid relid, SeamKeyKind expected)
{
	SeamTable  *table;
	SeamPin		pin;

	/* T is the table's: for those who may read it (an unknown relid is an error here too). */
	if (!list_member_oid(readable_tables, relid) &&
		pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
		pg_attribute_aclcheck_all(relid, GetUserId(), ACL_SELECT, ACLMASK_ANY) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(relid));
	table = seam_lookup_read_table(relid);
	if (table == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is not registered with TierDB in tiered mode", seam_table_name(relid))));
	if (table->key_kind != expected)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the tier key of table %s is not of this function's type", seam_table_name(relid))));
	pin = seam_pin(table);
	return seam_key_datum(expected, pin.tier_key_hi);
}

PG_FUNCTION_INFO_V1(tierdb_seam_t_bigint);
PG_FUNCTION_INFO_V1(tierdb_seam_t_timestamptz);
PG_FUNCTION_INFO_V1(tierdb_seam_t_timestamp);
PG_FUNCTION_INFO_V1(tierdb_seam_t_date);

Datum
tierdb_seam_t_bigint(PG_FUNCTION_ARGS)
{
	return pinned_t(PG_GETARG_OID(0), SEAM_KEY_BIGINT);
}

Datum
tierdb_seam_t_timestamptz(PG_FUNCTION_ARGS)
{
	return pinned_t(PG_GETARG_OID(0), SEAM_KEY_TIMESTAMPTZ);
}

Datum
tierdb_seam_t_timestamp(PG_FUNCTION_ARGS)
{
	return pinned_t(PG_GETARG_OID(0), SEAM_KEY_TIMESTAMP);
}

Datum
tierdb_seam_t_date(PG_FUNCTION_ARGS)
{
	return pinned_t(PG_GETARG_OID(0), SEAM_KEY_DATE);
}

/* ------------------------------------------------------------ SQL: plan invalidation */

PG_FUNCTION_INFO_V1(tierdb_registration_changed);

/*
 * Trigger on tierdb.tables: a table registered, changed or unregistered
 * invalidates the plans that read it, in every session (a relcache
 * invalidation of the table), so that a prepared statement planned before
 * registration starts reading the lake and one planned before
 * unregistration stops. Also on tierdb.cutline, when T advances: heap-only
 * plans were made for the old T (heap_only.h).
 */
Datum
tierdb_registration_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	rel;
	HeapTuple	rows[2];

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "tierdb_registration_changed: not called as a trigger");
	rel = trigdata->tg_relation;
	rows[0] = trigdata->tg_trigtuple;
	rows[1] = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ? trigdata->tg_newtuple : NULL;
	for (int i = 0; i < 2; i++)
	{
		bool		isnull;
		Datum		id;

		if (rows[i] == NULL)
			continue;
		id = heap_getattr(rows[i], attnameAttNum(rel, "table_id", false), RelationGetDescr(rel), &isnull);
		if (!isnull && OidIsValid((Oid) DatumGetInt64(id)) &&
			SearchSysCacheExists1(RELOID, ObjectIdGetDatum((Oid) DatumGetInt64(id))))
			CacheInvalidateRelcacheByRelid((Oid) DatumGetInt64(id));
	}
	return PointerGetDatum(NULL);
}
