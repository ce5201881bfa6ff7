/*-------------------------------------------------------------------------
 *
 * cold_scan.h
 *		The cold branch of an in-database read: lake@S ⊕ delta (SPEC §5
 *		steps 3 and 4) for a registered tiered table, as the custom scan
 *		"TierDB Cold Scan" and as the function tierdb.cold_rows().
 *
 * A transparent read (transparent.c) turns a table reference into
 *
 *		SELECT ... FROM table WHERE tier_key >= (SELECT tierdb.seam_t_...(table))
 *		UNION ALL
 *		SELECT ... FROM tierdb.cold_rows(NULL::table)
 *
 * and the planner hook here replaces the function scan of cold_rows with
 * a custom scan: the lake read through the lake library at the statement's
 * pinned snapshot (lake_scan.c), pruned by the query's conditions on the
 * table's columns, with the delta merged newest-wins, and not opened at all
 * when the conditions keep the query at or above T.  Called any other way
 * (without shared_preload_libraries), cold_rows returns the same rows as a
 * plain set-returning function.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_COLD_SCAN_H
#define TIERDB_COLD_SCAN_H

#include "access/htup.h"
#include "executor/tuptable.h"
#include "nodes/execnodes.h"
#include "nodes/parsenodes.h"
#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"

#include "lake_scan.h"
#include "seam.h"

/* A cold scan's quals (they are kept among its custom_exprs: cold_scan.c says why). */
extern List *cold_scan_quals(CustomScan *cscan);

/*
 * Marks the function reference of tierdb.cold_rows in a seam union as the
 * cold arm of `reference`, the table reference the union replaces: it
 * takes over its checkAsUser and the columns it reads, and the cold scan
 * checks exactly the privileges the reference needs (as a view's owner,
 * column privileges) and leaves row-level security to the reference's
 * security quals, which filter both arms. A cold_rows reference not so
 * marked is a direct call: SELECT on the whole table for the current
 * user, and refused where row-level security applies.
 */
extern void cold_scan_read_for(RangeTblEntry *cold_rows, const RangeTblEntry *reference);

/*
 * The cold rows of a table for code other than the custom scan
 * (cold_dml.c): lake@S merged with the delta at the statement's pin, as
 * tuples of the table's row type (tupdesc), pruned by conditions "column
 * op value" that the caller found with cold_scan_match_condition.  The
 * conditions only prune: the caller checks its own quals on every row.
 */
typedef struct ColdRowsReader ColdRowsReader;

typedef struct ColdRowsCondition
{
	AttrNumber	attno;			/* in the table's numbering */
	Oid			typid;			/* the value's type */
	int			op;				/* a tl_ice_expr_op */
	Datum		value;
	bool		isnull;			/* a comparison with null holds for no row */
} ColdRowsCondition;

/*
 * Recognises "column op value" among the quals of relation `self`: a Var of
 * self compared with a value free of volatile functions, subplans and Vars
 * of self (Vars of other relations become the parameters of a
 * parameterized scan).
 */
extern bool cold_scan_match_condition(Expr *clause, Index self, AttrNumber *attno, Oid *typid, int *op,
									  Expr **value);

/* The record count of the table's published lake snapshot (for estimates), or -1 when unknown. */
extern double cold_scan_lake_records(const SeamTable *table);

/* A delta payload (jsonb) as a tuple of the table's row type, as the cold scan reads it. */
extern HeapTuple cold_scan_row_image(Oid rowtype, Datum payload);

/*
 * What the processes of a parallel plan reading the cold rows share, in
 * the plan node's DSM chunk: the leader's pin, and claims on the lake's
 * files (each read by one process) and on the delta's row images
 * (returned by one process).
 */
typedef struct ColdRowsShared ColdRowsShared;

/* Its size for the leader's pin (seam_pin), and its set-up by the leader. */
extern Size cold_rows_shared_size(const SeamPin *pin);
extern void cold_rows_shared_init(ColdRowsShared *shared, const SeamPin *pin);

/*
 * What a process read, for EXPLAIN: each worker adds its figures to the
 * shared ones as it finishes (ShutdownCustomScan), and the leader collects
 * them (adds them to *sum, and clears them) before the DSM goes away or is
 * reset, and shows them with its own.
 */
typedef struct ColdReadFigures
{
	LakeScanStats lake;			/* the reading figures (the planning ones are the leader's) */
	int64		rows_replaced;	/* lake rows a delta row replaced or removed */
	int64		rows;			/* the consumer's own count (the cold aggregate's rows aggregated) */
	int64		rows_from_vectors;	/* ... of them, those aggregated from the lake's vectors */
} ColdReadFigures;

extern void cold_rows_shared_add(ColdRowsShared *shared, const ColdReadFigures *mine);
extern void cold_rows_shared_collect(ColdRowsShared *shared, ColdReadFigures *sum);

/* Before a rescan: the workers' figures collected into *collected, and no task or row image claimed. */
extern void cold_rows_shared_reset(ColdRowsShared *shared, ColdReadFigures *collected);

/*
 * Nothing is read until the first cold_rows_reader_next. The caller has
 * checked its privileges. With `shared`, the reader is one process's part
 * of a parallel read: at the leader's pin, the lake files and the delta's
 * row images it claims.
 */
extern ColdRowsReader *cold_rows_reader_open(SeamTable *table, TupleDesc tupdesc,
											 const ColdRowsCondition *conditions, int nconditions,
											 ColdRowsShared *shared);
/*
 * cold_rows_reader_open for a plan node whose quals (Vars INDEX_VAR, in the
 * table's numbering) are `quals`: every condition the lake can push among
 * them (comparisons, IN lists, null tests, ORs of them), their values
 * computed in parent's expression context. A condition's index, for
 * cold_rows_reader_lake_checked, is its qual's position in quals.
 */
extern ColdRowsReader *cold_rows_reader_open_quals(SeamTable *table, TupleDesc tupdesc, List *quals,
												   PlanState *parent, ColdRowsShared *shared);
/*
 * Reads only the attributes in attnos (1-based; the rest read as NULL)
 * instead of every one. Call before the first cold_rows_reader_next.
 */
extern void cold_rows_reader_read_only(ColdRowsReader *reader, const Bitmapset *attnos);
/*
 * The number of cold rows, from the lake's metadata alone, when that is
 * exact: the reader has no conditions, the delta names no key below T,
 * no delete file applies at S, and the lake holds no row at or above T
 * (a mirror's, or a table keeping a heap window); false otherwise, and
 * the caller reads the rows. Reads the delta and plans the lake scan,
 * instead of the first cold_rows_reader_next.
 */
extern bool cold_rows_reader_count(ColdRowsReader *reader, int64 *count);
/*
 * Tells the reader that its caller wants only the least or greatest
 * values of these attributes over every cold row (min and max, no
 * condition): where the lake's rows are the cold rows (the delta names no
 * key below T, and the lake holds no row at or above T), the lake reads
 * only the files, row groups and pages that may hold them
 * (lake_scan_narrow_to_extremes). Call before the first read.
 */
extern void cold_rows_reader_seek_extremes(ColdRowsReader *reader, const LakeExtreme *extremes, int n);
/* Whether the reader was narrowed so, once it has started reading. */
extern bool cold_rows_reader_narrowed(ColdRowsReader *reader);
/* The next cold row into slot (a virtual slot of tupdesc), or false at the end. */
extern bool cold_rows_reader_next(ColdRowsReader *reader, TupleTableSlot *slot);
/*
 * The next batch of lake rows, for a consumer of column vectors, and the
 * lake scan whose vectors hold them (lake_scan_batch_vector): the rows
 * cold_rows_reader_next would return from the lake, those a delta row
 * replaces left out. False once the lake's rows are done; the delta's row
 * images, which the lake's checks never saw, then come from
 * cold_rows_reader_next.
 */
extern bool cold_rows_reader_next_batch(ColdRowsReader *reader, LakeScan **lake, LakeBatch *batch);
/*
 * The conditions (indexes into those given to cold_rows_reader_open) the
 * lake checks exactly on its rows: a caller need not check them again on
 * the lake's rows, only on the delta's row images. Opens the reader.
 */
extern const Bitmapset *cold_rows_reader_lake_checked(ColdRowsReader *reader);
/* Whether the row cold_rows_reader_next returned last came from the lake (not a delta row image). */
extern bool cold_rows_reader_from_lake(ColdRowsReader *reader);
extern void cold_rows_reader_close(ColdRowsReader *reader);
/*
 * EXPLAIN's lines for a reader (before it is closed): the table, the pin,
 * the lake's pruning, and with ANALYZE what it read. A reader not read
 * yet is opened (the delta read, the lake scan planned).
 */
struct ExplainState;
extern void cold_rows_reader_explain(ColdRowsReader *reader, const ColdReadFigures *workers,
									 struct ExplainState *es);
/* This process's reading figures (rows and rows_from_vectors left 0 for the caller). */
extern void cold_rows_reader_figures(ColdRowsReader *reader, ColdReadFigures *out);

/*
 * The tiered table whose cold rows a range table entry asks for: a function
 * reference to tierdb.cold_rows(NULL::table), or InvalidOid.
 */
extern Oid	cold_scan_target(RangeTblEntry *rte);

/* The cost of reading the lake rows a cold rows relation's conditions leave (cold_scan.c says how it is estimated). */
extern Cost cold_scan_read_cost(PlannerInfo *root, RelOptInfo *rel);

/* The share of a parallel path's work each of its processes does, as Postgres reckons it. */
extern double cold_scan_parallel_divisor(int workers);

/* Whether the planner gave a relation the cold scan (not a function scan for a whole-row reference). */
extern bool cold_scan_planned(RelOptInfo *rel);

/* Installs the planner hook and registers the custom scan; from _PG_init while preloading. */
extern void cold_scan_init(void);

#endif							/* TIERDB_COLD_SCAN_H */
