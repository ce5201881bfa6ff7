/*-------------------------------------------------------------------------
 *
 * lake_scan.h
 *		Reading a registered table's Iceberg lake rows inside the backend,
 *		as tuples of the table's row type.
 *
 * The cold branch of every in-database read (SPEC §5 step 3, §7) is one
 * LakeScan: the lake table at a pinned snapshot, only the columns a query
 * needs, an optional filter that prunes manifests, data files and row
 * groups, and Iceberg's position and equality deletes applied (the
 * tierdb.delta merge is not: it is SQL the read protocol adds on top).
 * Rows come out one at a time as virtual tuples in the caller's slot.
 *
 * Usage (tierdb.lake_scan(), and later the planner's CustomScan):
 *
 *		scan = lake_scan_open(location, snapshot_id, tupdesc, attrs);
 *		field = lake_scan_attr_field(scan, attno);	-- to build a filter
 *		lake_scan_set_filter(scan, filter);			-- optional
 *		while (lake_scan_next(scan, slot))
 *			...
 *		lake_scan_stats(scan, &stats);				-- for EXPLAIN
 *		lake_scan_close(scan);
 *
 * Lifetimes: a scan lives in its own memory context, a child of the
 * context current at lake_scan_open.  The lake library's objects (table,
 * plan, reader, batch: malloc'd memory and open files) are released by a
 * callback on that context, so an ERROR or a query cancel anywhere, which
 * deletes the parent context while aborting, releases them too;
 * lake_scan_close is only the early, orderly way to do the same.  Lake
 * calls never throw: their errors become ereport(ERROR) after they return.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_LAKE_SCAN_H
#define TIERDB_LAKE_SCAN_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "nodes/bitmapset.h"
#include "nodes/pg_list.h"

#include "tierlake_pg.h"

/* What a scan read and what pruning spared it, for EXPLAIN. */
typedef struct LakeScanStats
{
	int64		snapshot_id;		/* the snapshot scanned */
	/* planning: manifests and data files the filter ruled out */
	int64		manifests;
	int64		manifests_skipped;
	int64		data_files;
	int64		data_files_skipped;
	int64		delete_files;
	int64		planned_records;	/* record counts of the files to read */
	/* reading (summed over rescans) */
	int64		files_read;
	int64		row_groups_read;
	int64		row_groups_skipped;
	int64		row_groups_skipped_by_bloom;	/* = and IN ruled out by bloom filters */
	int64		pages_read;
	int64		pages_skipped;		/* by page indexes, and pages of columns no passing row needed */
	int64		rows_deleted;		/* by Iceberg deletes */
	int64		rows_returned;
	int64		rows_skipped;		/* by the row conditions, before conversion */
	int64		batches_skipped;	/* no row passed: the columns they do not read stayed undecoded */
} LakeScanStats;

typedef struct LakeScan LakeScan;

/*
 * Opens the lake table at `location` (tierdb.tables.lake_table_ref) for a
 * scan at snapshot_id (TL_ICE_NO_SNAPSHOT: the current one) producing
 * tuples of tupdesc.  With all_attrs every attribute is read; otherwise
 * `attrs` holds the attribute numbers (1-based) the caller needs, possibly
 * none (a count(*) decodes no column at all).  Unread attributes, dropped
 * columns and columns the lake schema at that snapshot lacks read as NULL.  Attributes map to lake
 * fields by name.  An unknown snapshot is an ERROR naming the snapshots
 * the table has.  Nothing but the table metadata is read yet.
 */
extern LakeScan *lake_scan_open(const char *location, int64 snapshot_id,
								TupleDesc tupdesc, const Bitmapset *attrs, bool all_attrs);

/* The lake field attribute attno reads, or NULL when it reads as NULL. */
extern const tl_ice_field *lake_scan_attr_field(const LakeScan *scan, AttrNumber attno);

/*
 * Restricts the files and row groups read to those that may hold rows
 * matching filter (field ids of the snapshot's schema).  Rows are not
 * filtered: the caller still evaluates its quals.  Call before the first
 * lake_scan_next; the filter is copied, so the caller may free it after.
 */
extern void lake_scan_set_filter(LakeScan *scan, const tl_ice_expr *filter);

/*
 * A condition checked on the lake values of each row before the row is
 * converted into a tuple: rows failing one are skipped. Only for
 * conditions whose lake outcome is exactly Postgres'
 * (lake_scan_add_row_condition says which), so a caller need not check
 * an accepted condition again on the rows it gets.
 *
 * A tree shaped like the lake filter it usually comes with: predicates on
 * one attribute (a comparison with values[0] (<> too), [NOT] IN the
 * nvalues values, [NOT] STARTS WITH values[0], IS NULL, IS NOT NULL), AND
 * and OR of others, and FALSE, which no row passes.
 * A row passes a predicate only where it is true (a null passes none but
 * IS NULL), as a WHERE clause keeps rows; with no NOT in the tree, an OR
 * of conditions a row fails or that are null for it fails it too.
 */
typedef struct LakeRowValue
{
	/* The value, as the field's type stores it (not a tl_ice_value: palloc cannot align its int128). */
	int64		integer;		/* int, long, date, time, timestamp(tz) */
	double		real;			/* float, double */
	bool		boolean;
	const uint8 *bytes;			/* string, binary, uuid: owned by the caller */
	size_t		len;
} LakeRowValue;

typedef struct LakeRowCondition
{
	tl_ice_expr_op op;
	AttrNumber	attno;			/* predicates; 0 in the others */
	int			nvalues;		/* 1 for a comparison; IN: any number, duplicates allowed */
	LakeRowValue *values;
	List	   *args;			/* AND, OR: LakeRowCondition * */
} LakeRowCondition;

/*
 * Sets a row condition (copied; the value bytes must outlive the scan).
 * Accepted, and false returned for the others: comparisons and IN of
 * int, long, date, time, timestamp and timestamptz fields; of float and
 * double fields, as Postgres compares float8 (NaN equal to NaN and above
 * every other value, -0 equal to +0); of string, binary and uuid fields,
 * as bytes (the caller pushes a string comparison only under a collation
 * that compares bytes: equality under a deterministic one, order under
 * "C"); equality and IN of boolean fields; <> and NOT IN wherever
 * equality and IN are; STARTS WITH and NOT STARTS WITH of string fields,
 * as bytes; IS NULL and IS NOT NULL of
 * any primitive field; AND and OR of accepted conditions. A condition on
 * an attribute the scan does not read, or that reads an added column's
 * default, is not accepted, nor is a tree holding one.
 */
extern bool lake_scan_add_row_condition(LakeScan *scan, const LakeRowCondition *cond);

/*
 * Leaves attribute attno NULL in the rows: the lake still reads it for the
 * row conditions, but the caller needs no value of it (its only use was a
 * condition the lake checks). Call before the first lake_scan_next.
 */
extern void lake_scan_skip_conversion(LakeScan *scan, AttrNumber attno);

/*
 * Shares the scan's files with other processes reading the same plan (a
 * parallel query's workers): instead of reading every task of the plan in
 * order, the scan reads the task `claim` hands it, then the next one it
 * hands out, and ends once claim returns an index past the last task.
 * Each task is read by whoever claims it, so the processes together read
 * each file once. Call before the first lake_scan_next.
 */
typedef uint32 (*LakeTaskClaim) (void *arg);
extern void lake_scan_share_tasks(LakeScan *scan, LakeTaskClaim claim, void *arg);

/*
 * Narrows a scan of every row (no filter set) whose caller wants only the
 * least or greatest value of some attributes (min and max with nothing
 * else to read) to the files, row groups and pages that may hold those
 * rows, by the files' bounds: the least upper bound over the files bounds
 * the minimum, and whatever cannot hold a value at most that is skipped
 * (the greatest lower bound likewise for a maximum). Rows are not
 * filtered: the caller takes the extremes of what it reads, which are
 * those of every row. False, and the scan unchanged, when a delete file
 * applies at the snapshot (its row may be the one a bound came from), or
 * an attribute's field has no bounds that are its values (strings' are
 * truncated) or none at all. Plans the snapshot once more; call before
 * the scan is planned. The filter lives in arena, which must outlive the
 * planning.
 */
typedef struct LakeExtreme
{
	AttrNumber	attno;
	bool		max;			/* the greatest value, else the least */
} LakeExtreme;

extern bool lake_scan_narrow_to_extremes(LakeScan *scan, const LakeExtreme *extremes, int n,
										 tl_arena *arena);

/*
 * Plans the scan (manifests read, files chosen) if not done yet; the first
 * lake_scan_next does it too.  For callers that need the plan's figures,
 * such as an EXPLAIN without ANALYZE.
 */
extern void lake_scan_plan(LakeScan *scan);

/*
 * Stores the next row in slot as a virtual tuple and returns true, or
 * clears slot and returns false at the end.  The values stay valid until
 * the next call.  Checks for interrupts between batches.
 */
extern bool lake_scan_next(LakeScan *scan, TupleTableSlot *slot);

/*
 * Batch access, for a consumer that works on the lake's column vectors
 * (the cold aggregate) instead of one tuple at a time. A LakeBatch is the
 * rows of the reader's current batch that passed the row conditions and
 * the deletes, in order; the consumer may narrow `rows` in place. Do not
 * mix with lake_scan_next within a scan.
 */
typedef struct LakeBatch
{
	int32	   *rows;			/* indexes into the batch's vectors, ascending */
	int64		nrows;
} LakeBatch;

/* The next batch with at least one row; false at the end of the scan. */
extern bool lake_scan_next_batch(LakeScan *scan, LakeBatch *batch);

/*
 * The current batch's vector of attribute attno and the converter that
 * makes its values Datums, or NULL where the batch's rows do not read the
 * attribute from the lake (an added column's default, an unread column):
 * lake_scan_batch_value gives those.
 */
struct LakeValueConverter;
extern const tl_vector *lake_scan_batch_vector(const LakeScan *scan, AttrNumber attno,
											   const struct LakeValueConverter **conv);

/*
 * Attribute attno of row `row` of the current batch as lake_scan_next
 * would convert it. The value lives until the next batch.
 */
extern Datum lake_scan_batch_value(LakeScan *scan, AttrNumber attno, int32 row, bool *isnull);

/* Starts over from the first row of the same plan. */
extern void lake_scan_rescan(LakeScan *scan);

extern void lake_scan_stats(const LakeScan *scan, LakeScanStats *stats);

/* Releases everything the scan holds, and the scan itself. */
extern void lake_scan_close(LakeScan *scan);

/*
 * Checks SELECT on table relid as the executor checks a relation's range
 * table entry: as check_as (a view's owner; InvalidOid: the current user),
 * on the table or on exactly the columns in selected_cols (selectedCols'
 * numbering), with Postgres' own error.
 */
extern void lake_check_select(Oid relid, Oid check_as, Bitmapset *selected_cols);

/*
 * The checks a direct call of a function returning a table's lake rows
 * (tierdb.lake_scan, tierdb.cold_rows: not the transparent read, which
 * the table's own reference governs) makes before it reads: SELECT on
 * every column of the table for the current user, as a whole-row
 * reference to it needs (Postgres' own check and error); and no
 * row-level security applying to the user there, as the rows would come
 * out without the table's policies: that is refused with a hint to read
 * the table with a plain SELECT, whose policies govern its lake rows too.
 * `function` names the function in the error.
 */
extern void lake_check_direct_read(Oid relid, const char *function);

#endif							/* TIERDB_LAKE_SCAN_H */
