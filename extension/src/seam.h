/*-------------------------------------------------------------------------
 *
 * seam.h
 *		A registered table's seam as an in-database read sees it: what
 *		tierdb.tables says about the table, and the pinned cut-line
 *		(T, S) a statement reads with (SPEC §5, ARCHITECTURE decision 6).
 *
 * An in-database read pins without writing: it takes the table's reader
 * lock shared (coordination.h; no SQL session can take it), and only then
 * reads the cut-line, with a snapshot newer than the lock.  The daemon
 * publishes a new cut-line before it drops heap partitions, and drops only
 * after taking that lock exclusively (tierdb.wait_for_readers), so every
 * partition at or above the T a reader pinned stays until the reader's
 * transaction ends.  Nothing is written, so read-only transactions and
 * standbys can pin.
 *
 * Why the cut-line is read with the newest snapshot rather than the
 * statement's: a statement snapshot taken before the lock could show a T
 * whose partitions the daemon dropped in between.  Reading it newer is
 * safe for the delta, which the statement reads with its own (older)
 * snapshot: delta rows a fold already put into S are merged over S again,
 * and the merge is idempotent (the same row image replaces itself, a
 * tombstone removes a row that is gone).
 *
 * A pin holds for one statement under READ COMMITTED (the next statement
 * pins afresh, as its snapshot is new too) and for the whole transaction
 * under REPEATABLE READ and SERIALIZABLE; both branches of a statement,
 * the heap bound and the cold scan, use the same pin.
 *
 * Parallel plans: only the leader pins, while it runs the plan in parallel
 * mode (so the cut-line is read with a fresh catalog snapshot, which that
 * mode allows, not GetLatestSnapshot). The heap bound is an initplan the
 * leader computes and passes to the workers, and the cold scan is not
 * parallel safe: the workers read heap partitions only, at the leader's
 * T, and the lake is read once.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_SEAM_H
#define TIERDB_SEAM_H

#include "postgres.h"

#include "access/attnum.h"
#include "access/stratnum.h"
#include "utils/snapshot.h"
#include "utils/uuid.h"

/* The tier key's canonical family (tables.tier_key_type, SPEC §2). */
typedef enum SeamKeyKind
{
	SEAM_KEY_BIGINT,			/* int2, int4, int8: the value itself */
	SEAM_KEY_TIMESTAMPTZ,		/* microseconds since 1970-01-01 00:00:00+00 */
	SEAM_KEY_TIMESTAMP,			/* microseconds since 1970-01-01 00:00:00 */
	SEAM_KEY_DATE				/* days since 1970-01-01 */
} SeamKeyKind;

/* A table registered in tiered or direct mode, or a mirrored one (for hybrid reads, hybrid.h). */
typedef struct SeamTable
{
	Oid			relid;
	int64		table_id;
	char	   *lake_location;	/* tierdb.tables.lake_table_ref */
	AttrNumber	tier_key_attno;
	Oid			tier_key_ops[BTMaxStrategyNumber];	/* its type's btree <, <=, =, >=, > (InvalidOid: none) */
	Oid			tier_key_opfamily;	/* their btree family (InvalidOid: none) */
	SeamKeyKind key_kind;
	int			npk;
	AttrNumber *pk_attnos;		/* the merge key's columns (tables.primary_key_cols) */
	bool		keep_heap;		/* --keep-heap: the heap keeps every row; plain DML is never routed */
	bool		direct;			/* --mode direct: no delta; the lake at S is every row below T (docs/direct.md) */
	bool		mirrored;		/* --mode mirrored: the heap has every row; the lake trails it (hybrid.h) */
	/*
	 * --mode mirrored --heap-retention: read and written as a tiered table
	 * (mirrored is false), but the mirror's lake also holds the rows at or
	 * above T, which reads below T leave out.
	 */
	bool		lake_beyond_t;
} SeamTable;

/* The pinned cut-line. */
typedef struct SeamPin
{
	int64		tier_key_hi;	/* T, canonical */
	bool		has_snapshot;	/* S is NULL until the first lake commit */
	int64		snapshot_id;	/* S */
	/*
	 * lake_props' metadata_location: the metadata file that holds S,
	 * published with it, so reads open it directly instead of finding the
	 * table's newest one (a lookup per query on object storage, and a REST
	 * catalog's file names cannot be ordered). NULL when not known (a pin
	 * given by a caller): then the table's current metadata.
	 */
	const char *metadata_location;
	bool		has_retention_line;	/* R is NULL until lake retention first expires rows */
	int64		retention_line; /* R: lake rows below it were expired on purpose */

	/*
	 * A mirrored table's hybrid read (hybrid.h): T is the split, S the
	 * newest mirror snapshot holding only transactions the reader sees, and
	 * the keys the batches after it changed (tierdb.mirror_keys, by their
	 * op ids) are read from the heap below T instead of the lake.
	 */
	bool		hybrid;
	int			ncorrections;
	pg_uuid_t  *corrections;
} SeamPin;

/*
 * The tiered registration of relid, palloc'd in the current memory
 * context, or NULL: not registered, registered in another mode, or the
 * extension not installed in this database.  Reads tierdb.tables with the
 * current catalog snapshot, bypassing its privileges: whether a table is
 * tiered is not a secret, and its rows stay guarded by its own ACL.
 */
extern SeamTable *seam_lookup_table(Oid relid);

/* The mirrored registration of relid, as seam_lookup_table's, or NULL. */
extern SeamTable *seam_lookup_mirrored(Oid relid);

/* The registration of a table whose reads split at a seam: seam_lookup_table's, else seam_lookup_mirrored's. */
extern SeamTable *seam_lookup_read_table(Oid relid);

/* The tierdb schema, or InvalidOid where the extension is not installed. */
extern Oid	seam_namespace(void);

/*
 * Whether relid is registered in direct mode, from its tierdb.tables row
 * alone (a registration whose columns no longer resolve is no error here).
 */
extern bool seam_is_direct(Oid relid);

/* Whether relid is registered in mode `mode` ("tiered", "direct", "mirrored"), from its tierdb.tables row. */
extern bool seam_has_mode(Oid relid, const char *mode);

/*
 * The registered mirrored table that relid is a partition of (at any
 * level), or InvalidOid: Postgres publishes a partition's TRUNCATE, DETACH
 * and DROP through no table, so they would leave the lake behind.
 */
extern Oid	seam_mirrored_root(Oid relid);

/* Whether relid is registered in tiered mode: seam_lookup_table without the copy. */
extern bool seam_is_tiered(Oid relid);

/* The statement's pin of the table, taken on first use (see above). */
extern SeamPin seam_pin(const SeamTable *table);

/*
 * The cut-line as last committed, without pinning it or taking the
 * readers' lock: for estimates at planning, never for reading rows.
 */
extern SeamPin seam_latest_cutline(const SeamTable *table);

/*
 * T as the planner should assume it: the transaction's pin under
 * REPEATABLE READ and SERIALIZABLE; otherwise the cut-line as last read,
 * cached until it advances (the trigger on tierdb.cutline invalidates it),
 * without pinning: a plan that depends on it, one reading the heap only,
 * checks it when it starts (heap_only.c); the seam union reads with the
 * statement's pin whatever was assumed.
 */
extern int64 seam_planning_t(const SeamTable *table);

/*
 * The cut-line `snapshot` sees, for a statement that reads heap rows only
 * (heap_only.c): its pin if it has one, else read without pinning; the
 * catalog is read only after tierdb.cutline was written
 * (cutline_changes.h).
 */
extern int64 seam_statement_t(Oid relid, Snapshot snapshot);

/* Forgets pins: at transaction end, and at each statement under READ COMMITTED. */
extern void seam_init(void);

/* A canonical tier-key value as a Datum of the key column's type family. */
extern Datum seam_key_datum(SeamKeyKind kind, int64 canonical);

/* A table's schema-qualified, quoted name, for messages and EXPLAIN; "with OID n" once it is gone. */
extern char *seam_table_name(Oid relid);

/* A canonical tier-key value in the key column's own type, as text. */
extern char *seam_key_text(const SeamTable *table, int64 canonical);

/*
 * The canonical value of a Datum of the tier key's type (typid: the
 * column's).  Order-preserving, never overflowing: timestamps after
 * 294247-01-10 04:00:54.775807 and 'infinity', which have no canonical
 * value, give INT64_MAX, above every T; that is exact for what the callers
 * ask, whether a lower bound keeps rows at or above T.  Lake values need
 * exactness instead (cold_scan.c).
 */
extern int64 seam_key_canonical(SeamKeyKind kind, Oid typid, Datum value);

#endif							/* TIERDB_SEAM_H */
