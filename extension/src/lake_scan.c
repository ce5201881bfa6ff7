/*-------------------------------------------------------------------------
 *
 * lake_scan.c
 *		The cold scan: a registered table's Iceberg rows read in the backend
 *		through the lake library (see lake_scan.h), and tierdb.lake_scan(),
 *		the SQL function that exposes it.
 *
 * The lake library allocates with malloc and opens files with open(2),
 * outside Postgres' memory contexts and virtual file descriptors, and it
 * never throws.  So every lake object a scan acquires is stored in the
 * scan the moment the call that made it returns, and one memory context
 * callback frees whatever is there when the scan's context goes away: at
 * lake_scan_close, or when an ERROR or a cancel aborts the query and its
 * memory.  Lake errors are turned into ereport(ERROR) only after the lake
 * call returned, so no longjmp ever crosses lake code.  The open files are
 * reported to fd.c (AcquireExternalFD) so that Postgres keeps room for them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include <malloc.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "nodes/makefuncs.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "storage/fd.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "columns.h"
#include "lake_env.h"
#include "lake_scan.h"
#include "lake_values.h"
#include "routing.h"
#include "seam.h"
#include "storage_profiles.h"

/* Rows per batch: large enough to amortise the reader's per-call work. */
#define LAKE_SCAN_BATCH_ROWS 4096

/*
 * Files a reader holds open at once: the data file, and a delete file
 * while it loads the deletes that apply to that data file.
 */
#define LAKE_SCAN_OPEN_FILES 2

/* Snapshot ids listed in an "unknown snapshot" message, newest last. */
#define LAKE_SCAN_LISTED_SNAPSHOTS 10

/* One attribute of the output tuple. */
/*
 * Text values of a dictionary-encoded column repeat: every row of a batch
 * holding the same dictionary entry views the same bytes. A small cache
 * per text column, keyed by that view and emptied with every batch, turns
 * them into one text datum each rather than one per row.
 */
#define LAKE_TEXT_CACHE_SLOTS 64

typedef struct TextCacheSlot
{
	const uint8_t *ptr;			/* the view, NULL when empty */
	uint32		len;
	Datum		datum;			/* in the scan's batch context */
} TextCacheSlot;

typedef struct LakeColumn
{
	const tl_ice_field *field;	/* NULL: the attribute reads its default, else NULL */
	int			batch_index;	/* its column in the reader's batches */
	LakeValueConverter conv;
	TextCacheSlot *text_cache;	/* text columns only */
	bool		unconverted;	/* read for the row conditions only: NULL in the rows */

	/*
	 * An added column's default (columns.h): the rows of files with a data
	 * sequence number at most default_until read it instead of the field
	 * (all rows when the column has no field).
	 */
	bool		has_default;
	Datum		default_value;
	int64		default_until;
	bool		reads_default;	/* the current batch's file predates the column */
} LakeColumn;

struct LakeScan
{
	MemoryContext cxt;			/* holds the scan; its reset releases the lake objects */
	MemoryContext row_cxt;		/* the current row's values */
	MemoryContext batch_cxt;	/* values cached for the current batch */
	MemoryContextCallback release;

	char	   *location;
	int64		snapshot_id;	/* as asked; TL_ICE_NO_SNAPSHOT for the current one */
	int64		plan_snapshot;	/* the snapshot found; TL_ICE_NO_SNAPSHOT for none */
	TupleDesc	tupdesc;
	LakeColumn *columns;		/* one per attribute of tupdesc */
	int			nfields;
	int32	   *field_ids;		/* the projection, in batch column order */
	int		   *read_attrs;		/* per batch column, its attribute's index */
	bool		row_allocates;	/* some read attribute's values are palloc'd */
	TupleTableSlot *nulls_set_in;	/* the slot whose unread attributes are already set (NULL or default) */

	/* Lake objects, freed by release_lake_objects. */
	tl_ice_table *table;
	tl_ice_scan *plan;
	tl_ice_reader *reader;
	tl_pq_batch *batch;
	int			external_fds;	/* reported to fd.c */

	const tl_ice_schema *schema;	/* the snapshot's, inside table->metadata */
	const tl_ice_expr *filter;	/* the caller's, until planned */
	const char *current_file;	/* the file the batch came from */
	int64		next_row;		/* in batch: the row to convert next */
	bool		deferring;		/* columns no row condition reads wait for a passing row */
	int32	   *selected;		/* with row conditions: the batch's rows that pass them */
	int64		nselected;
	int64		next_selected;	/* index into selected */
	bool		done;
	int			converting;		/* attribute being converted, for the error context */
	LakeScanStats stats;
	tl_ice_reader_stats read_before;	/* readers of earlier rescans */
	List	   *row_conditions;	/* LakeRowCondition *, checked before conversion */
	LakeTaskClaim claim;		/* set: read the tasks it hands out (lake_scan_share_tasks) */
	void	   *claim_arg;
};

/* ------------------------------------------------------------ lake errors */

static const char *
lake_errhint(tl_error_code code)
{
	switch (code)
	{
		case TL_ERR_CORRUPT:
			return "The file is damaged or is not valid Iceberg or Parquet: restore it from a copy, "
				"or read a snapshot that does not use it.";
		case TL_ERR_NOT_FOUND:
		case TL_ERR_IO:
			return "Check that the file exists and that the operating system user of the "
				"PostgreSQL server can read it.";
		case TL_ERR_UNSUPPORTED:
			return "The lake table uses a feature this version of TierDB cannot read.";
		default:
			return "This is a bug in TierDB; please report it with the message.";
	}
}

/* An ERROR for a lake call that failed with err; `what` says what the scan was doing. */
static void
pg_attribute_noreturn()
report_lake_error(const LakeScan *scan, const char *what, const tl_error *err)
{
	tierdb_lake_error_precheck(err);
	ereport(ERROR,
			(errcode(tierdb_lake_errcode(err->code)),
			 errmsg("%s", err->message),
			 errdetail("TierDB was %s of the lake table at %s (%s).", what, scan->location,
					   tl_error_code_name(err->code)),
			 errhint("%s", lake_errhint(err->code))));
}

/* ------------------------------------------------------------ lake objects */

/* Frees the reader and its batch (a rescan makes new ones). */
static void
release_reader(LakeScan *scan)
{
	tl_pq_batch_free(scan->batch);
	scan->batch = NULL;
	tl_ice_reader_free(scan->reader);
	scan->reader = NULL;
	scan->current_file = NULL;
}

/* The memory context callback: runs at close, and when an abort deletes the scan's context. */
static void
release_lake_objects(void *arg)
{
	LakeScan   *scan = (LakeScan *) arg;

	release_reader(scan);
	tl_ice_scan_free(scan->plan);
	scan->plan = NULL;
	tl_ice_table_free(scan->table);
	scan->table = NULL;
	for (; scan->external_fds > 0; scan->external_fds--)
		ReleaseExternalFD();
}

/* ------------------------------------------------------------ opening */

static const tl_ice_schema *
snapshot_schema(const LakeScan *scan, const tl_ice_snapshot *snap)
{
	const tl_ice_table_metadata *md = scan->table->metadata;
	const tl_ice_schema *schema;

	if (snap != NULL && snap->schema_id >= 0)
		schema = tl_ice_metadata_schema(md, snap->schema_id);
	else
		schema = tl_ice_metadata_current_schema(md);
	if (schema == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("lake table metadata %s names schema %d for snapshot " INT64_FORMAT
						", but has no such schema",
						scan->table->metadata_file, snap ? snap->schema_id : md->current_schema_id,
						snap ? (int64) snap->snapshot_id : (int64) 0),
				 errhint("%s", lake_errhint(TL_ERR_CORRUPT))));
	return schema;
}

/* "1, 2, 3" for the last few snapshots of the table. */
static char *
snapshot_list(const tl_ice_table_metadata *md)
{
	StringInfoData buf;
	int			first = Max(0, md->nsnapshots - LAKE_SCAN_LISTED_SNAPSHOTS);

	initStringInfo(&buf);
	if (first > 0)
		appendStringInfo(&buf, "%d older ones and ", first);
	for (int i = first; i < md->nsnapshots; i++)
		appendStringInfo(&buf, "%s" INT64_FORMAT, i > first ? ", " : "",
						 (int64) md->snapshots[i].snapshot_id);
	return buf.data;
}

static const tl_ice_snapshot *
find_snapshot(const LakeScan *scan)
{
	const tl_ice_table_metadata *md = scan->table->metadata;
	const tl_ice_snapshot *snap;

	if (scan->snapshot_id == TL_ICE_NO_SNAPSHOT)
		return tl_ice_metadata_current_snapshot(md);
	snap = tl_ice_metadata_snapshot(md, scan->snapshot_id);
	if (snap == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snapshot " INT64_FORMAT " does not exist in the lake table at %s",
						scan->snapshot_id, scan->location),
				 md->nsnapshots == 0
				 ? errdetail("Its newest metadata file, %s, lists no snapshots.", scan->table->metadata_file)
				 : errdetail("Its newest metadata file, %s, lists the snapshots %s; the current one is " INT64_FORMAT ".",
							 scan->table->metadata_file, snapshot_list(md), (int64) md->current_snapshot_id),
				 errhint("A snapshot given by hand may have expired. Reads use the one in "
						 "tierdb.cutline.lake_snapshot_id: if it is missing, metadata files were deleted or the "
						 "table was replaced outside TierDB; restore them from a backup.")));
	return snap;
}

/*
 * The lake field a column reads, by field id (SPEC §6): the column's field
 * in the lake's current schema (by its name there, or as tierdb.columns
 * says after a rename, columns.c), then the field with that id in the
 * pinned snapshot's schema, which the files are read by; NULL when the
 * column has no field (added since: it reads its default or NULL).
 */
static const tl_ice_field *
column_lake_field(const LakeScan *scan, const ColumnMap *map, const char *name)
{
	const tl_ice_schema *current = tl_ice_metadata_current_schema(scan->table->metadata);
	const tl_ice_field *field = current != NULL ? column_field(current, map, name) : NULL;

	return field != NULL ? tl_ice_schema_find_id(scan->schema, field->id) : NULL;
}

/* An added column's default for the lake's older rows (tierdb.column_defaults), if it has one. */
static void
set_column_default(LakeColumn *col, Form_pg_attribute att, const ColumnDefault *d)
{
	Oid			input;
	Oid			ioparam;

	if (d == NULL)
		return;
	getTypeInputInfo(att->atttypid, &input, &ioparam);
	col->has_default = true;
	col->default_value = OidInputFunctionCall(input, d->value, ioparam, att->atttypmod);
	/* Until the lake has a field for the column, and knows since when, every row predates it. */
	if (!d->has_sequence)
		col->field = NULL;
	col->default_until = d->sequence;
}

/* Maps the needed attributes to lake fields and prepares their converters. */
static void
map_columns(LakeScan *scan, const Bitmapset *attrs, bool all_attrs)
{
	TupleDesc	desc = scan->tupdesc;
	Oid			relid = OidIsValid(desc->tdtypeid) ? get_typ_typrelid(desc->tdtypeid) : InvalidOid;
	ColumnMap	map = OidIsValid(relid) ? column_map(relid) : (ColumnMap) {NIL, NIL};

	scan->columns = palloc0(sizeof(LakeColumn) * Max(desc->natts, 1));
	scan->field_ids = palloc(sizeof(int32) * Max(desc->natts, 1));
	scan->read_attrs = palloc(sizeof(int) * Max(desc->natts, 1));
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		LakeColumn *col = &scan->columns[i];
		tl_pq_column pqcol;
		tl_error	err;

		col->batch_index = -1;
		if (att->attisdropped || (!all_attrs && !bms_is_member(att->attnum, attrs)))
			continue;
		col->field = column_lake_field(scan, &map, NameStr(att->attname));
		set_column_default(col, att, column_default(&map, NameStr(att->attname)));
		if (col->field == NULL)
			continue;
		tl_error_clear(&err);
		if (tl_ice_field_to_pq_column(col->field, &pqcol, &err) < 0)
			report_lake_error(scan, "mapping the columns", &err);
		lake_value_converter_init(&col->conv, att, col->field, &pqcol, &scan->current_file, scan->cxt);
		if (col->conv.kind == LAKE_VALUE_TEXT)
			col->text_cache = palloc0(sizeof(TextCacheSlot) * LAKE_TEXT_CACHE_SLOTS);
		col->batch_index = scan->nfields;
		scan->read_attrs[scan->nfields] = i;
		scan->field_ids[scan->nfields++] = col->field->id;
		/* Cached text is made in the batch's context. */
		scan->row_allocates |= !att->attbyval && col->text_cache == NULL;
	}
}

/*
 * Keeps the lake reader's large buffers (column chunks of several MB, page
 * buffers, batches) in the backend's heap between files and scans. By
 * default glibc serves them with mmap or trims them back to the kernel on
 * free, so every row group paid for zero-filled fresh pages: a fifth of a
 * selective scan's time went to page faults. The price is that a backend
 * which has scanned the lake keeps up to LAKE_SCAN_RETAINED_BYTES of freed
 * memory for reuse. Set once per backend.
 */
#define LAKE_SCAN_MMAP_THRESHOLD (32 * 1024 * 1024)
#define LAKE_SCAN_RETAINED_BYTES (64 * 1024 * 1024)

static void
retain_reader_buffers(void)
{
	static bool done = false;

	if (done)
		return;
	done = true;
	mallopt(M_MMAP_THRESHOLD, LAKE_SCAN_MMAP_THRESHOLD);
	mallopt(M_TRIM_THRESHOLD, LAKE_SCAN_RETAINED_BYTES);
}

LakeScan *
lake_scan_open(const char *location, int64 snapshot_id, TupleDesc tupdesc, const Bitmapset *attrs,
			   bool all_attrs)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "tierdb lake scan",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	LakeScan   *scan = palloc0(sizeof(LakeScan));
	const tl_ice_snapshot *snap;
	tl_error	err;

	retain_reader_buffers();
	scan->cxt = cxt;
	scan->release.func = release_lake_objects;
	scan->release.arg = scan;
	MemoryContextRegisterResetCallback(cxt, &scan->release);
	scan->row_cxt = AllocSetContextCreate(cxt, "tierdb lake scan row", ALLOCSET_DEFAULT_SIZES);
	scan->batch_cxt = AllocSetContextCreate(cxt, "tierdb lake scan batch", ALLOCSET_DEFAULT_SIZES);
	scan->location = pstrdup(location);
	scan->snapshot_id = snapshot_id;
	scan->tupdesc = CreateTupleDescCopy(tupdesc);

	tl_error_clear(&err);
	storage_profiles_prepare();
	scan->table = tl_ice_table_open(location, &err);
	if (scan->table == NULL)
		report_lake_error(scan, "opening the metadata", &err);
	snap = find_snapshot(scan);
	scan->plan_snapshot = snap ? snap->snapshot_id : TL_ICE_NO_SNAPSHOT;
	scan->stats.snapshot_id = snap ? snap->snapshot_id : 0;
	scan->schema = snapshot_schema(scan, snap);
	map_columns(scan, attrs, all_attrs);

	MemoryContextSwitchTo(old);
	return scan;
}

const tl_ice_field *
lake_scan_attr_field(const LakeScan *scan, AttrNumber attno)
{
	if (attno < 1 || attno > scan->tupdesc->natts)
		return NULL;
	/* The lake's statistics know nothing of a default its older files read: no condition goes there. */
	if (scan->columns[attno - 1].has_default)
		return NULL;
	return scan->columns[attno - 1].field;
}

void
lake_scan_set_filter(LakeScan *scan, const tl_ice_expr *filter)
{
	if (scan->plan != NULL)
		elog(ERROR, "lake scan filter set after the scan was planned");
	scan->filter = filter;
}

/*
 * Whether the scan can check predicate c exactly on the values of its
 * attribute's field (lake_scan_add_row_condition lists which).
 */
static bool
predicate_supported(const LakeScan *scan, const LakeRowCondition *c)
{
	const LakeColumn *col;
	bool		ordered;

	if (c->attno < 1 || c->attno > scan->tupdesc->natts)
		return false;
	col = &scan->columns[c->attno - 1];
	if (col->field == NULL || col->batch_index < 0 || col->has_default)
		return false;
	if (c->op == TL_ICE_EXPR_IS_NULL || c->op == TL_ICE_EXPR_NOT_NULL)
		return tl_ice_type_is_primitive(col->field->type.id);
	switch (col->field->type.id)
	{
		case TL_ICE_INT:
		case TL_ICE_LONG:
		case TL_ICE_DATE:
		case TL_ICE_TIME:
		case TL_ICE_TIMESTAMP:
		case TL_ICE_TIMESTAMPTZ:
		case TL_ICE_FLOAT:
		case TL_ICE_DOUBLE:
		case TL_ICE_STRING:
		case TL_ICE_BINARY:
		case TL_ICE_UUID:
			ordered = true;
			break;
		case TL_ICE_BOOLEAN:
			ordered = false;
			break;
		default:
			return false;
	}
	switch (c->op)
	{
		case TL_ICE_EXPR_IN:
		case TL_ICE_EXPR_NOT_IN:
			return c->nvalues >= 1;
		case TL_ICE_EXPR_EQ:
		case TL_ICE_EXPR_NOT_EQ:
			return c->nvalues == 1;
		case TL_ICE_EXPR_STARTS_WITH:
		case TL_ICE_EXPR_NOT_STARTS_WITH:
			return col->field->type.id == TL_ICE_STRING && c->nvalues == 1;
		case TL_ICE_EXPR_LT:
		case TL_ICE_EXPR_LE:
		case TL_ICE_EXPR_GT:
		case TL_ICE_EXPR_GE:
			return ordered && c->nvalues == 1;
		default:
			return false;
	}
}

static bool
row_condition_supported(const LakeScan *scan, const LakeRowCondition *c)
{
	ListCell   *lc;

	check_stack_depth();
	switch (c->op)
	{
		case TL_ICE_EXPR_FALSE:
			return true;
		case TL_ICE_EXPR_AND:
		case TL_ICE_EXPR_OR:
			if (c->args == NIL)
				return false;
			foreach(lc, c->args)
				if (!row_condition_supported(scan, lfirst(lc)))
					return false;
			return true;
		default:
			return predicate_supported(scan, c);
	}
}

static int	compare_row_values(const void *a, const void *b, void *type);

/* A deep copy of a supported condition in the current context, an IN's values sorted for its lookups. */
static LakeRowCondition *
copy_row_condition(const LakeScan *scan, const LakeRowCondition *c)
{
	LakeRowCondition *copy = palloc(sizeof(LakeRowCondition));
	ListCell   *lc;

	*copy = *c;
	copy->args = NIL;
	foreach(lc, c->args)
		copy->args = lappend(copy->args, copy_row_condition(scan, lfirst(lc)));
	if (c->nvalues > 0)
	{
		tl_ice_type_id type = scan->columns[c->attno - 1].field->type.id;

		copy->values = palloc(sizeof(LakeRowValue) * c->nvalues);
		memcpy(copy->values, c->values, sizeof(LakeRowValue) * c->nvalues);
		if (c->op == TL_ICE_EXPR_IN || c->op == TL_ICE_EXPR_NOT_IN)
			qsort_arg(copy->values, c->nvalues, sizeof(LakeRowValue), compare_row_values, &type);
	}
	return copy;
}

bool
lake_scan_add_row_condition(LakeScan *scan, const LakeRowCondition *cond)
{
	MemoryContext old;

	if (!row_condition_supported(scan, cond))
		return false;
	old = MemoryContextSwitchTo(scan->cxt);
	scan->row_conditions = lappend(scan->row_conditions, copy_row_condition(scan, cond));
	MemoryContextSwitchTo(old);
	return true;
}

void
lake_scan_skip_conversion(LakeScan *scan, AttrNumber attno)
{
	if (attno < 1 || attno > scan->tupdesc->natts || scan->columns[attno - 1].batch_index < 0)
		return;
	scan->columns[attno - 1].unconverted = true;
	scan->nulls_set_in = NULL;
}

/* Two float8 values in Postgres' order (float8_cmp_internal): NaNs equal and above all, -0 = +0. */
static inline int
compare_real(double a, double b)
{
	if (isnan(a))
		return isnan(b) ? 0 : 1;
	if (isnan(b))
		return -1;
	return (a > b) - (a < b);
}

/* Byte strings as text under "C" orders them, and bytea and uuid always: memcmp, then length. */
static inline int
compare_bytes(const uint8 *a, size_t alen, const uint8 *b, size_t blen)
{
	int			cmp = memcmp(a, b, Min(alen, blen));

	return cmp != 0 ? cmp : (alen > blen) - (alen < blen);
}

/* Two values of a field of this type, in the order Postgres compares the column's values. */
static inline int
compare_values(tl_ice_type_id type, const LakeRowValue *a, const LakeRowValue *b)
{
	switch (type)
	{
		case TL_ICE_BOOLEAN:
			return (int) a->boolean - (int) b->boolean;
		case TL_ICE_FLOAT:
		case TL_ICE_DOUBLE:
			return compare_real(a->real, b->real);
		case TL_ICE_STRING:
		case TL_ICE_BINARY:
		case TL_ICE_UUID:
			return compare_bytes(a->bytes, a->len, b->bytes, b->len);
		default:
			return (a->integer > b->integer) - (a->integer < b->integer);
	}
}

/* qsort_arg's form of compare_values; arg points at the type. */
static int
compare_row_values(const void *a, const void *b, void *type)
{
	return compare_values(*(const tl_ice_type_id *) type, a, b);
}

/* Row `row` of a vector of a field of this type (not null) as a condition's value. */
static inline LakeRowValue
row_value(tl_ice_type_id type, const tl_vector *vec, int64 row)
{
	LakeRowValue v = {0};

	switch (type)
	{
		case TL_ICE_INT:
		case TL_ICE_DATE:
			v.integer = vec->v.i32[row];
			break;
		case TL_ICE_BOOLEAN:
			v.boolean = vec->v.b[row] != 0;
			break;
		case TL_ICE_FLOAT:
			v.real = vec->v.f32[row];
			break;
		case TL_ICE_DOUBLE:
			v.real = vec->v.f64[row];
			break;
		case TL_ICE_STRING:
		case TL_ICE_BINARY:
		case TL_ICE_UUID:
			v.bytes = vec->v.bytes[row].ptr;
			v.len = vec->v.bytes[row].len;
			break;
		default:
			v.integer = vec->v.i64[row];
			break;
	}
	return v;
}

/* The comparison of row `row` of vec with value v (its sign: negative, 0, positive). */
static inline int
compare_value(const LakeRowValue *v, tl_ice_type_id type, const tl_vector *vec, int64 row)
{
	LakeRowValue	at = row_value(type, vec, row);

	return compare_values(type, &at, v);
}

/* Whether row `row` of vec equals one of an IN's values (sorted by compare_values): a binary search. */
static inline bool
in_values(const LakeRowCondition *c, tl_ice_type_id type, const tl_vector *vec, int64 row)
{
	LakeRowValue at = row_value(type, vec, row);
	int			lo = 0;
	int			hi = c->nvalues - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			cmp = compare_values(type, &at, &c->values[mid]);

		if (cmp == 0)
			return true;
		if (cmp < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return false;
}

static void narrow_selection(LakeScan *scan, const LakeRowCondition *c);

/*
 * Narrows the selection of the batch's rows (scan->selected) to those
 * whose value passes predicate c (a null passes none). One predicate at a
 * time over the whole batch: a tight loop whose switches always go the
 * same way, where checking row by row paid for the executor's call per row.
 */
static void
narrow_by_values(LakeScan *scan, const LakeRowCondition *c)
{
	const LakeColumn *col = &scan->columns[c->attno - 1];
	const tl_vector *vec = &scan->batch->columns[col->batch_index];
	const uint8_t *valid = vec->valid;
	tl_ice_type_id type = col->field->type.id;
	const LakeRowValue v = c->values[0];	/* a comparison's; IN looks up all of them */
	int32	   *selected = scan->selected;
	int64		n = scan->nselected;
	int64		kept = 0;

/* The loop over the selection, for one way of comparing a row (COMPARE) and one operator (HOLDS). */
#define NARROW_ROWS(COMPARE, HOLDS) \
	for (int64 i = 0; i < n; i++) \
	{ \
		int32		row = selected[i]; \
		\
		selected[kept] = row; \
		kept += (valid == NULL || valid[row] != 0) && (COMPARE(row)) HOLDS; \
	}
/* ... once per operator, so that the comparison of the common types is inlined in a loop of its own */
#define NARROW(COMPARE) \
	switch (c->op) \
	{ \
		case TL_ICE_EXPR_EQ: NARROW_ROWS(COMPARE, == 0); break; \
		case TL_ICE_EXPR_LT: NARROW_ROWS(COMPARE, < 0); break; \
		case TL_ICE_EXPR_LE: NARROW_ROWS(COMPARE, <= 0); break; \
		case TL_ICE_EXPR_GT: NARROW_ROWS(COMPARE, > 0); break; \
		case TL_ICE_EXPR_GE: NARROW_ROWS(COMPARE, >= 0); break; \
		case TL_ICE_EXPR_IN: NARROW_ROWS(IN_VALUES, ); break; \
		case TL_ICE_EXPR_NOT_EQ: NARROW_ROWS(COMPARE, != 0); break; \
		case TL_ICE_EXPR_NOT_IN: NARROW_ROWS(!IN_VALUES, ); break; \
		default: elog(ERROR, "unexpected lake row condition operator %d", (int) c->op); \
	}
#define COMPARE_INT32(row) ((vec->v.i32[row] > v.integer) - (vec->v.i32[row] < v.integer))
#define COMPARE_INT64(row) ((vec->v.i64[row] > v.integer) - (vec->v.i64[row] < v.integer))
#define COMPARE_DOUBLE(row) compare_real(vec->v.f64[row], v.real)
#define COMPARE_ANY(row) compare_value(&v, type, vec, row)
#define IN_VALUES(row) in_values(c, type, vec, row)

	switch (type)
	{
		case TL_ICE_INT:
		case TL_ICE_DATE:
			NARROW(COMPARE_INT32);
			break;
		case TL_ICE_LONG:
		case TL_ICE_TIME:
		case TL_ICE_TIMESTAMP:
		case TL_ICE_TIMESTAMPTZ:
			NARROW(COMPARE_INT64);
			break;
		case TL_ICE_DOUBLE:
			NARROW(COMPARE_DOUBLE);
			break;
		default:
			NARROW(COMPARE_ANY);
			break;
	}
	scan->nselected = kept;
#undef NARROW_ROWS
#undef NARROW
#undef COMPARE_INT32
#undef COMPARE_INT64
#undef COMPARE_DOUBLE
#undef COMPARE_ANY
}

/* Narrows the selection to the rows whose string starts with c's value (STARTS_WITH), or does not. */
static void
narrow_by_prefix(LakeScan *scan, const LakeRowCondition *c)
{
	const tl_vector *vec = &scan->batch->columns[scan->columns[c->attno - 1].batch_index];
	const uint8 *prefix = c->values[0].bytes;
	size_t		len = c->values[0].len;
	bool		want = c->op == TL_ICE_EXPR_STARTS_WITH;
	int32	   *selected = scan->selected;
	int64		kept = 0;

	for (int64 i = 0; i < scan->nselected; i++)
	{
		int32		row = selected[i];
		const tl_bytes *at = &vec->v.bytes[row];

		selected[kept] = row;
		kept += (vec->valid == NULL || vec->valid[row] != 0) &&
			((at->len >= len && (len == 0 || memcmp(at->ptr, prefix, len) == 0)) == want);
	}
	scan->nselected = kept;
}

/* Narrows the selection to the rows whose value is null (IS NULL), or is not (IS NOT NULL). */
static void
narrow_by_nullness(LakeScan *scan, const LakeRowCondition *c)
{
	const tl_vector *vec = &scan->batch->columns[scan->columns[c->attno - 1].batch_index];
	bool		want_null = c->op == TL_ICE_EXPR_IS_NULL;
	int32	   *selected = scan->selected;
	int64		kept = 0;

	if (vec->valid == NULL)
	{
		/* no null in the batch */
		if (want_null)
			scan->nselected = 0;
		return;
	}
	for (int64 i = 0; i < scan->nselected; i++)
	{
		int32		row = selected[i];

		selected[kept] = row;
		kept += (vec->valid[row] == 0) == want_null;
	}
	scan->nselected = kept;
}

/*
 * Narrows the selection to the rows passing any of the OR's args: each
 * arg narrows the rows no earlier one passed, and the selection keeps, in
 * their order, the rows one did. The scratch arrays live for the batch.
 */
static void
narrow_to_any(LakeScan *scan, const LakeRowCondition *c)
{
	int64		n = scan->nselected;
	int32	   *input = MemoryContextAlloc(scan->batch_cxt, sizeof(int32) * Max(n, 1));
	bool	   *passed = MemoryContextAllocZero(scan->batch_cxt, sizeof(bool) * Max(scan->batch->nrows, 1));
	int64		kept = 0;
	ListCell   *lc;

	memcpy(input, scan->selected, sizeof(int32) * n);
	foreach(lc, c->args)
	{
		int64		undecided = 0;

		for (int64 i = 0; i < n; i++)
			if (!passed[input[i]])
				scan->selected[undecided++] = input[i];
		if (undecided == 0)
			break;
		scan->nselected = undecided;
		narrow_selection(scan, lfirst(lc));
		for (int64 i = 0; i < scan->nselected; i++)
			passed[scan->selected[i]] = true;
	}
	for (int64 i = 0; i < n; i++)
		if (passed[input[i]])
			scan->selected[kept++] = input[i];
	scan->nselected = kept;
}

/* Narrows the selection of the batch's rows (scan->selected) to those passing condition c. */
static void
narrow_selection(LakeScan *scan, const LakeRowCondition *c)
{
	ListCell   *lc;

	if (scan->nselected == 0)
		return;
	switch (c->op)
	{
		case TL_ICE_EXPR_FALSE:
			scan->nselected = 0;
			break;
		case TL_ICE_EXPR_AND:
			foreach(lc, c->args)
				narrow_selection(scan, lfirst(lc));
			break;
		case TL_ICE_EXPR_OR:
			narrow_to_any(scan, c);
			break;
		case TL_ICE_EXPR_IS_NULL:
		case TL_ICE_EXPR_NOT_NULL:
			narrow_by_nullness(scan, c);
			break;
		case TL_ICE_EXPR_STARTS_WITH:
		case TL_ICE_EXPR_NOT_STARTS_WITH:
			narrow_by_prefix(scan, c);
			break;
		default:
			narrow_by_values(scan, c);
			break;
	}
}

/* Selects the rows of the new batch that pass every row condition. */
static void
select_rows(LakeScan *scan)
{
	ListCell   *lc;

	if (scan->selected == NULL)
		scan->selected = MemoryContextAlloc(scan->cxt, sizeof(int32) * LAKE_SCAN_BATCH_ROWS);
	for (int64 row = 0; row < scan->batch->nrows; row++)
		scan->selected[row] = (int32) row;
	scan->nselected = scan->batch->nrows;
	foreach(lc, scan->row_conditions)
		narrow_selection(scan, lfirst(lc));
	scan->next_selected = 0;
	scan->stats.rows_skipped += scan->batch->nrows - scan->nselected;
}

/* ------------------------------------------------------------ planning and reading */

void
lake_scan_plan(LakeScan *scan)
{
	const tl_ice_scan_stats *ps;
	tl_error	err;

	if (scan->plan != NULL)
		return;
	tl_error_clear(&err);
	scan->plan = tl_ice_scan_plan(scan->table->metadata, scan->plan_snapshot, scan->filter, &err);
	scan->filter = NULL;		/* copied by the plan; the caller may free it */
	if (scan->plan == NULL)
		report_lake_error(scan, "planning a scan", &err);
	ps = tl_ice_scan_stats_get(scan->plan);
	scan->stats.manifests = ps->manifests;
	scan->stats.manifests_skipped = ps->manifests_skipped;
	scan->stats.data_files = ps->data_files;
	scan->stats.data_files_skipped = ps->data_files_skipped;
	scan->stats.delete_files = ps->delete_files;
	scan->stats.planned_records = ps->records;
}

static void
reserve_external_fds(LakeScan *scan)
{
	while (scan->external_fds < LAKE_SCAN_OPEN_FILES)
	{
		if (!AcquireExternalFD())
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					 errmsg("too many open files to read the lake table at %s", scan->location),
					 errhint("Close other scans in this session, or raise max_files_per_process.")));
		scan->external_fds++;
	}
}

/* Clears the flags in deferred (by batch column) of the columns condition c reads. */
static void
mark_condition_columns(const LakeScan *scan, const LakeRowCondition *c, bool *deferred)
{
	ListCell   *lc;

	foreach(lc, c->args)
		mark_condition_columns(scan, lfirst(lc), deferred);
	if (c->attno > 0)
		deferred[scan->columns[c->attno - 1].batch_index] = false;
}

/*
 * Late materialisation: with row conditions, the columns they do not read
 * are decoded only for batches where some row passes (fetch_batch). A
 * selective filter on a column the statistics cannot prune then decodes
 * that column and little else.
 */
static void
defer_unfiltered_columns(LakeScan *scan)
{
	bool	   *deferred;
	bool		any = false;
	ListCell   *lc;
	tl_error	err;

	if (scan->row_conditions == NIL || scan->nfields == 0)
		return;
	deferred = palloc(sizeof(bool) * scan->nfields);
	memset(deferred, true, sizeof(bool) * scan->nfields);
	foreach(lc, scan->row_conditions)
		mark_condition_columns(scan, lfirst(lc), deferred);
	for (int b = 0; b < scan->nfields; b++)
		any |= deferred[b];
	tl_error_clear(&err);
	if (any && tl_ice_reader_defer(scan->reader, deferred, &err) < 0)
		report_lake_error(scan, "starting to read", &err);
	scan->deferring = any;
	pfree(deferred);
}

void
lake_scan_share_tasks(LakeScan *scan, LakeTaskClaim claim, void *arg)
{
	scan->claim = claim;
	scan->claim_arg = arg;
}

/*
 * Opens the reader: of every task, or of the next task claimed when the
 * tasks are shared; false when none is left to claim.
 */
static bool
start_reader(LakeScan *scan)
{
	tl_error	err;
	uint32		task = 0;

	lake_scan_plan(scan);
	if (scan->claim != NULL && (task = scan->claim(scan->claim_arg)) >= (uint32) tl_ice_scan_ntasks(scan->plan))
		return false;
	reserve_external_fds(scan);
	tl_error_clear(&err);
	scan->reader = scan->claim != NULL
		? tl_ice_reader_open_task(scan->plan, (int) task, scan->field_ids, scan->nfields, &err)
		: tl_ice_reader_open(scan->plan, scan->field_ids, scan->nfields, &err);
	if (scan->reader == NULL)
		report_lake_error(scan, "starting to read", &err);
	defer_unfiltered_columns(scan);
	scan->batch = tl_ice_reader_batch_new(scan->reader, LAKE_SCAN_BATCH_ROWS);
	if (scan->batch == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory reading the lake table at %s",
																scan->location)));
	return true;
}

/* Empties the text caches: the views they are keyed by die with the batch. */
static void
forget_batch_values(LakeScan *scan)
{
	for (int b = 0; b < scan->nfields; b++)
	{
		LakeColumn *col = &scan->columns[scan->read_attrs[b]];

		if (col->text_cache != NULL)
			memset(col->text_cache, 0, sizeof(TextCacheSlot) * LAKE_TEXT_CACHE_SLOTS);
	}
	MemoryContextReset(scan->batch_cxt);
}

/* Row `row` of a text column, converted once per distinct view in the batch. */
static Datum
cached_text(LakeScan *scan, LakeColumn *col, const tl_vector *vec, int64 row, bool *isnull)
{
	const tl_bytes *bytes = &vec->v.bytes[row];
	TextCacheSlot *slot;
	MemoryContext old;

	*isnull = tl_vector_is_null(vec, row);
	if (*isnull)
		return (Datum) 0;
	slot = &col->text_cache[((uintptr_t) bytes->ptr >> 3) % LAKE_TEXT_CACHE_SLOTS];
	if (slot->ptr == bytes->ptr && slot->ptr != NULL && slot->len == bytes->len)
		return slot->datum;
	old = MemoryContextSwitchTo(scan->batch_cxt);
	slot->datum = lake_value_to_datum(&col->conv, vec, row, isnull);
	MemoryContextSwitchTo(old);
	slot->ptr = bytes->ptr;
	slot->len = bytes->len;
	return slot->datum;
}

/* Which added columns read their default in the current file's rows: those the file predates. */
static void
note_file_defaults(LakeScan *scan)
{
	int64		sequence = tl_ice_reader_current_file_sequence(scan->reader);

	for (int b = 0; b < scan->nfields; b++)
	{
		LakeColumn *col = &scan->columns[scan->read_attrs[b]];

		col->reads_default = col->has_default && sequence <= col->default_until;
	}
}

static void add_reader_stats(tl_ice_reader_stats *sum, const tl_ice_reader_stats *more);

/* Reads the next batch; false at the end of the scan. */
static bool
fetch_batch(LakeScan *scan)
{
	int64		n;
	tl_error	err;

	if (scan->done)
		return false;
	for (;;)
	{
		if (scan->reader == NULL && !start_reader(scan))
		{
			scan->done = true;
			return false;
		}
		/* The one place a long scan waits: let a cancel or a timeout in. */
		CHECK_FOR_INTERRUPTS();
		tl_error_clear(&err);
		n = tl_ice_reader_next(scan->reader, scan->batch, &err);
		if (n < 0)
			report_lake_error(scan, "reading the rows", &err);
		if (n > 0 || scan->claim == NULL)
			break;
		/* The claimed task is read: on to the next one. */
		add_reader_stats(&scan->read_before, tl_ice_reader_stats_get(scan->reader));
		release_reader(scan);
	}
	scan->next_row = 0;
	scan->current_file = tl_ice_reader_current_file(scan->reader);
	note_file_defaults(scan);
	forget_batch_values(scan);
	if (n == 0)
		scan->done = true;
	else if (scan->row_conditions != NIL)
	{
		select_rows(scan);
		if (scan->deferring && scan->nselected == 0)
			scan->stats.batches_skipped++;
		else if (scan->deferring && tl_ice_reader_load(scan->reader, scan->batch, &err) < 0)
			report_lake_error(scan, "reading the rows", &err);
	}
	return n > 0;
}

static void
conversion_error_context(void *arg)
{
	const LakeScan *scan = (const LakeScan *) arg;
	Form_pg_attribute att = TupleDescAttr(scan->tupdesc, scan->converting);

	errcontext("reading column \"%s\" from lake data file %s", NameStr(att->attname),
			   scan->current_file ? scan->current_file : "(none)");
}

/*
 * Converts row scan->next_row of the batch into the slot's arrays. Only the
 * read attributes are written: the others were set once for this slot
 * (set_unread_attrs: NULL, or an added column's default), and nothing
 * else writes the slot's arrays while lake rows flow through it.
 */
static void
fill_row(LakeScan *scan, Datum *values, bool *isnull)
{
	ErrorContextCallback errcallback;

	errcallback.callback = conversion_error_context;
	errcallback.arg = scan;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;
	for (int b = 0; b < scan->nfields; b++)
	{
		int			i = scan->read_attrs[b];
		LakeColumn *col = &scan->columns[i];

		if (col->unconverted)
			continue;
		scan->converting = i;
		if (col->reads_default)
		{
			values[i] = col->default_value;
			isnull[i] = false;
		}
		else if (col->text_cache != NULL)
			values[i] = cached_text(scan, col, &scan->batch->columns[b], scan->next_row, &isnull[i]);
		else
			values[i] = lake_value_to_datum(&col->conv, &scan->batch->columns[b], scan->next_row, &isnull[i]);
	}
	error_context_stack = errcallback.previous;
}

static void
set_unread_attrs(LakeScan *scan, TupleTableSlot *slot)
{
	for (int i = 0; i < scan->tupdesc->natts; i++)
	{
		const LakeColumn *col = &scan->columns[i];

		if (col->batch_index < 0 && col->has_default)
		{
			slot->tts_values[i] = col->default_value;
			slot->tts_isnull[i] = false;
		}
		else if (col->batch_index < 0 || col->unconverted)
		{
			slot->tts_values[i] = (Datum) 0;
			slot->tts_isnull[i] = true;
		}
	}
	scan->nulls_set_in = slot;
}

bool
lake_scan_next(LakeScan *scan, TupleTableSlot *slot)
{
	MemoryContext old;

	Assert(slot->tts_tupleDescriptor->natts == scan->tupdesc->natts);
	ExecClearTuple(slot);
	if (scan->row_conditions != NIL)
	{
		while (scan->batch == NULL || scan->next_selected >= scan->nselected)
			if (!fetch_batch(scan))
				return false;
		scan->next_row = scan->selected[scan->next_selected++];
	}
	else if ((scan->batch == NULL || scan->next_row >= scan->batch->nrows) && !fetch_batch(scan))
		return false;
	if (scan->nulls_set_in != slot)
		set_unread_attrs(scan, slot);
	if (scan->row_allocates)
	{
		MemoryContextReset(scan->row_cxt);
		old = MemoryContextSwitchTo(scan->row_cxt);
		fill_row(scan, slot->tts_values, slot->tts_isnull);
		MemoryContextSwitchTo(old);
	}
	else
		fill_row(scan, slot->tts_values, slot->tts_isnull);
	scan->next_row++;
	scan->stats.rows_returned++;
	ExecStoreVirtualTuple(slot);
	return true;
}

bool
lake_scan_next_batch(LakeScan *scan, LakeBatch *batch)
{
	do
	{
		if (!fetch_batch(scan))
			return false;
		if (scan->row_conditions == NIL)
			select_rows(scan);	/* every row */
	} while (scan->nselected == 0);
	batch->rows = scan->selected;
	batch->nrows = scan->nselected;
	scan->next_selected = scan->nselected;
	scan->stats.rows_returned += scan->nselected;
	return true;
}

const tl_vector *
lake_scan_batch_vector(const LakeScan *scan, AttrNumber attno, const LakeValueConverter **conv)
{
	const LakeColumn *col = &scan->columns[attno - 1];

	if (col->batch_index < 0 || col->reads_default)
		return NULL;
	*conv = &col->conv;
	return &scan->batch->columns[col->batch_index];
}

Datum
lake_scan_batch_value(LakeScan *scan, AttrNumber attno, int32 row, bool *isnull)
{
	LakeColumn *col = &scan->columns[attno - 1];
	const tl_vector *vec;
	ErrorContextCallback errcallback;
	MemoryContext old;
	Datum		value;

	if (col->batch_index < 0 || col->reads_default)
	{
		*isnull = !col->has_default;
		return col->has_default ? col->default_value : (Datum) 0;
	}
	vec = &scan->batch->columns[col->batch_index];
	errcallback.callback = conversion_error_context;
	errcallback.arg = scan;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;
	scan->converting = attno - 1;
	if (col->text_cache != NULL)
		value = cached_text(scan, col, vec, row, isnull);
	else
	{
		old = MemoryContextSwitchTo(scan->batch_cxt);
		value = lake_value_to_datum(&col->conv, vec, row, isnull);
		MemoryContextSwitchTo(old);
	}
	error_context_stack = errcallback.previous;
	return value;
}

static void
add_reader_stats(tl_ice_reader_stats *sum, const tl_ice_reader_stats *more)
{
	sum->files_read += more->files_read;
	sum->row_groups_read += more->row_groups_read;
	sum->row_groups_skipped += more->row_groups_skipped;
	sum->row_groups_skipped_by_bloom += more->row_groups_skipped_by_bloom;
	sum->pages_read += more->pages_read;
	sum->pages_skipped += more->pages_skipped;
	sum->rows_deleted += more->rows_deleted;
}

void
lake_scan_rescan(LakeScan *scan)
{
	if (scan->reader != NULL)
		add_reader_stats(&scan->read_before, tl_ice_reader_stats_get(scan->reader));
	release_reader(scan);
	MemoryContextReset(scan->row_cxt);
	scan->nulls_set_in = NULL;	/* the caller may have used the slot meanwhile */
	scan->next_row = 0;
	scan->done = false;
}

void
lake_scan_stats(const LakeScan *scan, LakeScanStats *stats)
{
	tl_ice_reader_stats read = scan->read_before;

	if (scan->reader != NULL)
		add_reader_stats(&read, tl_ice_reader_stats_get(scan->reader));
	*stats = scan->stats;
	stats->files_read = read.files_read;
	stats->row_groups_read = read.row_groups_read;
	stats->row_groups_skipped = read.row_groups_skipped;
	stats->row_groups_skipped_by_bloom = read.row_groups_skipped_by_bloom;
	stats->pages_read = read.pages_read;
	stats->pages_skipped = read.pages_skipped;
	stats->rows_deleted = read.rows_deleted;
}

void
lake_scan_close(LakeScan *scan)
{
	/* The context's callback frees the lake objects; the scan goes with it. */
	MemoryContextDelete(scan->cxt);
}

/* ------------------------------------------------------------ narrowing to extremes */

/* The count of field id in a manifest's map, when the file has one. */
static bool
file_count(const tl_ice_long_map *m, int32 id, int64 *count)
{
	for (uint32 i = 0; i < m->n; i++)
		if (m->keys[i] == id)
		{
			*count = m->values[i];
			return true;
		}
	return false;
}

/*
 * The file's lower or upper bound of field, when it has one that bounds
 * an ordinary value (neither null nor NaN) the file is known to hold.
 * Bounds are over such values; a file whose counts say it has none
 * (every value null or NaN) gives none, whatever its bounds say.
 */
static bool
file_bound(const tl_ice_data_file *file, const tl_ice_field *field, bool upper, tl_ice_value *bound)
{
	const tl_ice_bytes_map *m = upper ? &file->upper_bounds : &file->lower_bounds;
	int64		values,
				nulls,
				nans;

	if (file_count(&file->value_counts, field->id, &values) &&
		values - (file_count(&file->null_value_counts, field->id, &nulls) ? nulls : 0)
		- (file_count(&file->nan_value_counts, field->id, &nans) ? nans : 0) <= 0)
		return false;
	for (uint32 i = 0; i < m->n; i++)
	{
		if (m->keys[i] != field->id)
			continue;
		if (tl_ice_value_deserialize(&field->type, m->values[i].ptr, m->values[i].len, bound, NULL) != 0)
			return false;
		return !(field->type.id == TL_ICE_FLOAT && isnan(bound->v.f32)) &&
			!(field->type.id == TL_ICE_DOUBLE && isnan(bound->v.f64));
	}
	return false;
}

/* The types whose bounds are exact values of the column (not truncated, as strings' may be). */
static bool
bounds_are_values(const tl_ice_type *type)
{
	switch (type->id)
	{
		case TL_ICE_INT:
		case TL_ICE_LONG:
		case TL_ICE_FLOAT:
		case TL_ICE_DOUBLE:
		case TL_ICE_DATE:
		case TL_ICE_TIME:
		case TL_ICE_TIMESTAMP:
		case TL_ICE_TIMESTAMPTZ:
			return true;
		default:
			return false;
	}
}

/*
 * The condition that keeps the row holding one extreme: for min(x), x <=
 * the least upper bound over the files (that file holds a value at most
 * that, so the minimum is too); for max(x), x >= the greatest lower bound.
 * NULL when no file bounds the field.
 */
static const tl_ice_expr *
extreme_condition(const tl_ice_scan *plan, const tl_ice_field *field, bool max, tl_arena *arena)
{
	tl_ice_value best;
	bool		found = false;

	for (int t = 0; t < tl_ice_scan_ntasks(plan); t++)
	{
		tl_ice_value bound;

		if (!file_bound(&tl_ice_scan_task_at(plan, t)->file, field, !max, &bound))
			continue;
		if (!found || (max ? tl_ice_value_compare(&field->type, &bound, &best) > 0
					   : tl_ice_value_compare(&field->type, &bound, &best) < 0))
			best = bound;
		found = true;
	}
	/*
	 * Iceberg orders -0 below +0, Postgres holds them equal: at a zero bound
	 * pruning could keep only the zeros of one sign, and the answer's sign
	 * could differ from what reading everything gives.
	 */
	if (!found || (field->type.id == TL_ICE_FLOAT && best.v.f32 == 0) ||
		(field->type.id == TL_ICE_DOUBLE && best.v.f64 == 0))
		return NULL;
	/* (NULL out of memory too: the scan just reads every file) */
	return tl_ice_expr_predicate(arena, max ? TL_ICE_EXPR_GE : TL_ICE_EXPR_LE, field->id, &best, 1);
}

bool
lake_scan_narrow_to_extremes(LakeScan *scan, const LakeExtreme *extremes, int n, tl_arena *arena)
{
	tl_ice_scan *plan;
	tl_error	err;
	const tl_ice_expr *keep = NULL;
	bool		narrowed = true;

	if (scan->plan != NULL || scan->filter != NULL)
		elog(ERROR, "lake scan narrowed after it was filtered or planned");
	tl_error_clear(&err);
	plan = tl_ice_scan_plan(scan->table->metadata, scan->plan_snapshot, NULL, &err);
	if (plan == NULL)
		report_lake_error(scan, "planning a scan", &err);
	/* a delete may have removed the very row whose value a bound is */
	for (int t = 0; t < tl_ice_scan_ntasks(plan) && narrowed; t++)
		narrowed = tl_ice_scan_task_at(plan, t)->ndeletes == 0;
	for (int i = 0; i < n && narrowed; i++)
	{
		const tl_ice_field *field = lake_scan_attr_field(scan, extremes[i].attno);
		const tl_ice_expr *one = NULL;

		narrowed = field != NULL && bounds_are_values(&field->type) &&
			(one = extreme_condition(plan, field, extremes[i].max, arena)) != NULL;
		if (narrowed)
			keep = keep == NULL ? one : tl_ice_expr_or(arena, keep, one);
	}
	tl_ice_scan_free(plan);
	if (!narrowed)
		return false;
	scan->filter = keep;
	return true;
}

/* ------------------------------------------------------------ tierdb.lake_scan() */

void
lake_check_select(Oid relid, Oid check_as, Bitmapset *selected_cols)
{
	RangeTblEntry *rte = makeNode(RangeTblEntry);

	rte->rtekind = RTE_RELATION;
	rte->relid = relid;
	rte->relkind = get_rel_relkind(relid);
	rte->requiredPerms = ACL_SELECT;
	rte->checkAsUser = check_as;
	rte->selectedCols = selected_cols;
	ExecCheckRTPerms(list_make1(rte), true);
}

void
lake_check_direct_read(Oid relid, const char *function)
{
	/* A whole-row reference: SELECT on every column. */
	lake_check_select(relid, InvalidOid, bms_make_singleton(InvalidAttrNumber - FirstLowInvalidHeapAttributeNumber));
	/*
	 * A routed write looks up where a key's lake copy lives (30-routing.sql,
	 * lake_location): that lookup returns no row to the caller, and a cold
	 * write itself is refused under row-level security (routing.c).
	 */
	if (check_enable_rls(relid, InvalidOid, false) == RLS_ENABLED && !routing_window_open(relid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s cannot apply the row-level security policies of table %s",
						function, seam_table_name(relid)),
				 errdetail("Row-level security applies to the current user on this table, "
						   "and the function's rows would not be filtered by its policies."),
				 errhint("Read the table with a plain SELECT: its policies govern its lake rows too.")));
}

/*
 * The table whose row type `rowtype` is, checked to be a table the caller
 * may read directly (lake_check_direct_read); ERROR otherwise.
 */
static Oid
readable_table_of_rowtype(Oid rowtype)
{
	Oid			relid = OidIsValid(rowtype) ? get_typ_typrelid(rowtype) : InvalidOid;
	char		relkind = OidIsValid(relid) ? get_rel_relkind(relid) : '\0';

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("%s is not the row type of a table",
						OidIsValid(rowtype) ? format_type_be(rowtype) : "unknown"),
				 errhint("Pass a null of the registered table's row type, as in "
						 "tierdb.lake_scan(NULL::schema.table, snapshot_id).")));
	lake_check_direct_read(relid, "tierdb.lake_scan");
	return relid;
}

/*
 * tierdb.tables.lake_table_ref of the table, read directly rather than
 * through SQL: a reader with SELECT on its table needs no privilege on the
 * catalog, and the location can come from nowhere else (a caller-supplied
 * path would let anyone read any file the server can).
 */
static char *
registered_lake_location(Oid relid)
{
	Oid			nsp = get_namespace_oid("tierdb", false);
	Oid			catalog = get_relname_relid("tables", nsp);
	Relation	rel;
	TableScanDesc tscan;
	ScanKeyData key;
	HeapTuple	tuple;
	char	   *location = NULL;

	if (!OidIsValid(catalog))
		elog(ERROR, "the TierDB catalog table tierdb.tables is missing");
	rel = table_open(catalog, AccessShareLock);
	ScanKeyInit(&key, attnameAttNum(rel, "table_id", false), BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum((int64) relid));
	tscan = table_beginscan(rel, GetActiveSnapshot(), 1, &key);
	tuple = heap_getnext(tscan, ForwardScanDirection);
	if (tuple != NULL)
	{
		bool		isnull;
		Datum		ref = heap_getattr(tuple, attnameAttNum(rel, "lake_table_ref", false),
									   RelationGetDescr(rel), &isnull);

		if (!isnull)
			location = TextDatumGetCString(ref);
	}
	table_endscan(tscan);
	table_close(rel, AccessShareLock);
	if (location == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is not registered with TierDB", seam_table_name(relid)),
				 errhint("Register it with tierdb register --table %s.", seam_table_name(relid))));
	return location;
}

/* What the scan read and pruned, at DEBUG1 (until EXPLAIN shows it). */
static void
log_scan_stats(const LakeScan *scan)
{
	LakeScanStats st;

	lake_scan_stats(scan, &st);
	ereport(DEBUG1,
			(errmsg_internal("tierdb lake scan of %s at snapshot " INT64_FORMAT ": "
							 "manifests " INT64_FORMAT " (" INT64_FORMAT " skipped), "
							 "data files " INT64_FORMAT " (" INT64_FORMAT " skipped, " INT64_FORMAT " read), "
							 "delete files " INT64_FORMAT ", "
							 "row groups " INT64_FORMAT " read (" INT64_FORMAT " skipped), "
							 "rows " INT64_FORMAT " returned (" INT64_FORMAT " deleted)",
							 scan->location, st.snapshot_id, st.manifests, st.manifests_skipped,
							 st.data_files, st.data_files_skipped, st.files_read, st.delete_files,
							 st.row_groups_read, st.row_groups_skipped,
							 st.rows_returned, st.rows_deleted)));
}

PG_FUNCTION_INFO_V1(tierdb_lake_scan);

/*
 * tierdb.lake_scan(rowtype anyelement, snapshot_id bigint) RETURNS SETOF anyelement
 *
 * The lake rows of the registered table whose row type `rowtype` is, at
 * that snapshot, with Iceberg deletes applied.  A null snapshot (a table
 * that has none yet) gives no rows.
 */
Datum
tierdb_lake_scan(PG_FUNCTION_ARGS)
{
	Oid			relid = readable_table_of_rowtype(get_fn_expr_argtype(fcinfo->flinfo, 0));
	char	   *location = registered_lake_location(relid);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int64		snapshot_id;
	LakeScan   *scan;
	TupleTableSlot *slot;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(1))
		return (Datum) 0;
	snapshot_id = PG_GETARG_INT64(1);
	if (snapshot_id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snapshot id " INT64_FORMAT " is not valid", snapshot_id),
				 errhint("Pass a snapshot of the table's lake, such as tierdb.cutline.lake_snapshot_id, "
						 "or NULL for none.")));

	scan = lake_scan_open(location, snapshot_id, rsinfo->setDesc, NULL, true);
	slot = MakeSingleTupleTableSlot(rsinfo->setDesc, &TTSOpsVirtual);
	while (lake_scan_next(scan, slot))
		tuplestore_puttupleslot(rsinfo->setResult, slot);
	ExecDropSingleTupleTableSlot(slot);
	log_scan_stats(scan);
	lake_scan_close(scan);
	return (Datum) 0;
}
