/*-------------------------------------------------------------------------
 *
 * ddl.c
 *		Schema changes of a registered table (SPEC §6,
 *		docs/schema-changes.md): tierdb.ddl_guard(), an event trigger on
 *		ddl_command_start, and tierdb.ddl_follow(), one on ddl_command_end
 *		(sql/0.1/60-ddl.sql).
 *
 * The rows of a registered table below the cut-line live in its Iceberg
 * lake, written with the columns the table had when they moved.  A column
 * change that the lake does not follow turns those rows' values wrong
 * without an error.  The changes Iceberg's schema evolution expresses are
 * carried: the guard records them before they happen (columns.c) and the
 * daemon evolves the lake's schema (cli/schema_evolution.c):
 *
 *	- RENAME COLUMN, DROP COLUMN of a column that is no key;
 *	- ADD COLUMN with no default or a non-volatile one, whose value
 *	  ddl_follow() evaluates once, as Postgres does for the heap's rows, and
 *	  records for the lake's (a volatile one is refused, rolling the ALTER
 *	  back);
 *	- ALTER COLUMN ... TYPE of a column that is no key, when the new type
 *	  widens the old as Iceberg promotes (int to long, float to double,
 *	  decimal precision) or keeps the lake's type (smallint to int, longer
 *	  varchar).
 *
 * Every other change is refused before it happens:
 *
 *	- ALTER TABLE ... ADD COLUMN NOT NULL without a default, an identity or
 *	  generated column, or one with a key constraint; any change of the tier
 *	  key or a primary key column; other type changes, USING, COLLATE;
 *	- renaming the table or moving it to another schema (tierdb.tables
 *	  names them by schema and name);
 *	- ALTER TYPE ... RENAME VALUE of an enum, and adding, dropping or
 *	  changing the type of an attribute of a composite type, that a
 *	  registered table's column holds (the lake stores their text forms);
 *	- a DEFAULT partition, by ALTER TABLE ... ATTACH PARTITION ... DEFAULT or
 *	  CREATE TABLE ... PARTITION OF ... DEFAULT: it would take rows below the
 *	  cut-line, which TierDB reads from the lake only, so they would vanish.
 *
 * Everything else (defaults, constraints, indexes, storage, owners, ...)
 * passes.  Why an event trigger rather than a ProcessUtility hook: the
 * extension's objects install it in every database that has the extension,
 * whether or not the library is preloaded (CREATE EXTENSION alone loads
 * tierdb.so only in the backend that ran it), and ddl_command_start sees the
 * parse tree before anything is changed, so nothing is half-applied.  It
 * fires for every such statement, also one run from a function or a DO
 * block; the subcommands Postgres generates for a statement do not reach
 * it, and they change nothing the statement itself did not ask for.  Both
 * are enabled ALWAYS, so a session replaying DDL with session_replication_role
 * = replica is guarded too; the only escape is a superuser's deliberate
 * ALTER EVENT TRIGGER tierdb_ddl_guard DISABLE (which the tests use to
 * build a lake that disagrees with its table).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "catalog/namespace.h"
#include "access/skey.h"
#include "commands/event_trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/parsenodes.h"
#include "optimizer/optimizer.h"
#include "parser/parse_relation.h"
#include "parser/parse_type.h"
#include "rewrite/rewriteHandler.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "columns.h"
#include "seam.h"
#include "spill.h"

/* A refused change: what the message says is refused, and why. */
typedef struct Refusal
{
	const char *action;			/* "add column \"x\" to", "rename column \"x\" of", ... */
	const char *reason;			/* the detail's second sentence */
} Refusal;

static const char *const ADD_NOT_CARRIED =
"TierDB carries an added column into the lake when the rows already there can read its "
"value: a column without a default, or with a default that is not volatile (the same value "
"for every row), nullable or NOT NULL with a default; not identity or generated columns, or "
"primary key, unique, foreign key or exclusion constraints, which need each row's own value "
"or the rows below the cut-line, which are not in the heap.";

static const char *const TYPE_NOT_CARRIED =
"TierDB carries only the type changes the lake can follow without rewriting its files "
"(SPEC §6): smallint or integer to a wider integer, real to double precision, numeric(p,s) "
"to numeric(p',s) with p' >= p, varchar(n) to a longer varchar or text; without USING or "
"COLLATE.";

static const char *const KEY_COLUMN =
"The column is the table's tier key or part of its primary key, which the catalog "
"(tierdb.tables) and the lake's partitioning and delete files name.";

static const char *const TABLE_NAMED =
"The catalog (tierdb.tables) and the lake's location name the table by its schema and name.";

/*
 * The oids of the tables in tierdb.tables (any mode).  Read directly, as
 * the readers do: the table's owner may alter it without any privilege on
 * the catalog.  NIL where the extension's catalog is missing.
 */
static List *
registered_tables(void)
{
	Oid			nsp = get_namespace_oid("tierdb", true);
	Oid			catalog = OidIsValid(nsp) ? get_relname_relid("tables", nsp) : InvalidOid;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	AttrNumber	table_id;
	List	   *oids = NIL;

	if (!OidIsValid(catalog))
		return NIL;
	rel = table_open(catalog, AccessShareLock);
	table_id = attnameAttNum(rel, "table_id", false);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		id = heap_getattr(tuple, table_id, RelationGetDescr(rel), &isnull);

		if (!isnull)
			oids = lappend_oid(oids, (Oid) DatumGetInt64(id));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return oids;
}

static bool
is_registered(Oid relid)
{
	return OidIsValid(relid) && list_member_oid(registered_tables(), relid);
}

/* Whether relation relid (a partition, or a partitioned table's tree) holds no row, as this snapshot sees it. */
static bool
relation_is_empty(Oid relid)
{
	bool		empty;
	char	   *sql = psprintf("SELECT NOT EXISTS (SELECT FROM %s)",
							   quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
														  get_rel_name(relid)));

	SPI_connect();
	if (SPI_execute(sql, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not tell whether %s is empty", get_rel_name(relid));
	empty = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &(bool) {false}));
	SPI_finish();
	return empty;
}

/* The registered table a statement names, or InvalidOid. */
static Oid
registered_relation(RangeVar *rv)
{
	Oid			relid = rv != NULL ? RangeVarGetRelid(rv, NoLock, true) : InvalidOid;

	return is_registered(relid) ? relid : InvalidOid;
}

static char *
qualified_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid));
}

static void
refuse(Oid relid, const Refusal *r)
{
	char	   *name = qualified_name(relid);

	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot %s table %s: it is registered with TierDB", r->action, name),
			 errdetail("Its rows below the cut-line live in the table's Iceberg lake. %s", r->reason),
			 errhint("See docs/schema-changes.md for the changes a registered table accepts "
					 "and how to make the others.")));
}

static void
refuse_default_partition(Oid parent)
{
	char	   *name = qualified_name(parent);

	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
			 errmsg("cannot add a DEFAULT partition to table %s: it is registered with TierDB", name),
			 errdetail("A DEFAULT partition would take rows below the cut-line, which TierDB reads "
					   "from the lake only: they would vanish from reads."),
			 errhint("Create range partitions for the values instead; rows below the cut-line "
					 "are written with tierdb_upsert(); see docs/schema-changes.md.")));
}

/* Whether an ALTER TABLE subcommand adds, drops or retypes a column. */
static bool
changes_columns(const AlterTableCmd *cmd)
{
	switch (cmd->subtype)
	{
		case AT_AddColumn:
		case AT_AddColumnRecurse:
		case AT_DropColumn:
		case AT_DropColumnRecurse:
		case AT_AlterColumnType:
			return true;
		default:
			return false;
	}
}

/*
 * Whether values of type typid hold values of type target: it is target,
 * or a domain over, an array of, or a composite with a field of such a
 * type.
 */
static bool
type_holds(Oid typid, Oid target)
{
	Oid			elem;
	Oid			relid;

	check_stack_depth();
	typid = getBaseType(typid);
	if (typid == target)
		return true;
	elem = get_element_type(typid);
	if (OidIsValid(elem))
		return type_holds(elem, target);
	relid = get_typ_typrelid(typid);
	if (OidIsValid(relid))
	{
		TupleDesc	desc = lookup_rowtype_tupdesc(typid, -1);
		bool		holds = false;

		for (int i = 0; i < desc->natts && !holds; i++)
			holds = !TupleDescAttr(desc, i)->attisdropped &&
				type_holds(TupleDescAttr(desc, i)->atttypid, target);
		ReleaseTupleDesc(desc);
		return holds;
	}
	return false;
}

/* A registered table with a column whose values hold type target, or InvalidOid. */
static Oid
registered_table_holding(Oid target)
{
	ListCell   *lc;

	foreach(lc, registered_tables())
	{
		Relation	rel = try_relation_open(lfirst_oid(lc), AccessShareLock);
		bool		holds = false;

		if (rel == NULL)
			continue;
		for (int i = 0; i < RelationGetDescr(rel)->natts && !holds; i++)
		{
			Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), i);

			holds = !att->attisdropped && type_holds(att->atttypid, target);
		}
		relation_close(rel, AccessShareLock);
		if (holds)
			return lfirst_oid(lc);
	}
	return InvalidOid;
}

/* Refuses a change of type typid, which registered table holder holds. */
static void
refuse_type_change(Oid typid, Oid holder, const char *change, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot %s of type %s: registered table %s uses the type",
					change, format_type_be(typid), qualified_name(holder)),
			 errdetail("The table's rows below the cut-line live in its Iceberg lake, which %s.", why),
			 errhint("See docs/schema-changes.md for the changes a registered table accepts "
					 "and how to make the others.")));
}

/*
 * ALTER TYPE e RENAME VALUE 'a' TO 'b' of an enum a registered table uses:
 * the lake holds enum values as their labels (SPEC §6), so the rows there
 * with 'a' would no longer read.  (Adding a value changes no label.)
 */
static void
check_alter_enum(AlterEnumStmt *stmt)
{
	Oid			enum_type;
	Oid			holder;

	if (stmt->oldVal == NULL)
		return;
	enum_type = LookupTypeNameOid(NULL, makeTypeNameFromNameList(stmt->typeName), true);
	holder = OidIsValid(enum_type) ? registered_table_holding(enum_type) : InvalidOid;
	if (OidIsValid(holder))
		refuse_type_change(enum_type, holder, psprintf("rename value \"%s\"", stmt->oldVal),
						   psprintf("holds enum values as their labels: rows with \"%s\" would "
									"no longer read", stmt->oldVal));
}

/*
 * ALTER TYPE c ADD/DROP ATTRIBUTE or ALTER ATTRIBUTE ... TYPE of a
 * composite a registered table uses: the lake holds composite values in
 * their text form, which then no longer reads.  (Renaming an attribute
 * changes no text form.)
 */
static void
check_alter_composite(AlterTableStmt *stmt)
{
	Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	Oid			typid = OidIsValid(relid) ? get_rel_type_id(relid) : InvalidOid;
	ListCell   *lc;

	foreach(lc, stmt->cmds)
	{
		Oid			holder;

		if (!OidIsValid(typid) || !changes_columns(lfirst_node(AlterTableCmd, lc)))
			continue;
		holder = registered_table_holding(typid);
		if (OidIsValid(holder))
			refuse_type_change(typid, holder, "change the attributes",
							   "holds composite values in their text form: the rows there would "
							   "no longer read");
		return;
	}
}

/* What tierdb.tables says of a registered table: its key columns and lake. */
typedef struct Registration
{
	char	   *tier_key_col;
	List	   *pk_cols;		/* char * */
	char	   *location;
} Registration;

static Registration
registration_of(Oid relid)
{
	Oid			catalog = get_relname_relid("tables", get_namespace_oid("tierdb", false));
	Relation	rel = table_open(catalog, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	HeapTuple	tuple;
	Registration reg = {0};

	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		Datum	   *pk;
		int			npk;

		if ((Oid) DatumGetInt64(heap_getattr(tuple, attnameAttNum(rel, "table_id", false), desc, &isnull)) != relid)
			continue;
		reg.tier_key_col = TextDatumGetCString(heap_getattr(tuple, attnameAttNum(rel, "tier_key_col", false),
															desc, &isnull));
		reg.location = TextDatumGetCString(heap_getattr(tuple, attnameAttNum(rel, "lake_table_ref", false),
														desc, &isnull));
		deconstruct_array(DatumGetArrayTypeP(heap_getattr(tuple, attnameAttNum(rel, "primary_key_cols", false),
														  desc, &isnull)),
						  TEXTOID, -1, false, TYPALIGN_INT, &pk, NULL, &npk);
		for (int i = 0; i < npk; i++)
			reg.pk_cols = lappend(reg.pk_cols, TextDatumGetCString(pk[i]));
		break;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return reg;
}

/* Refuses a change of the tier key or a primary key column, which the catalog and the lake name. */
static void
refuse_key_column(Oid relid, const Registration *reg, const char *column, const char *action)
{
	ListCell   *lc;
	bool		key = strcmp(reg->tier_key_col, column) == 0;

	foreach(lc, reg->pk_cols)
		key |= strcmp(lfirst(lc), column) == 0;
	if (key)
		refuse(relid, &(Refusal) {psprintf("%s column \"%s\" of", action, column), KEY_COLUMN});
}

/*
 * ADD COLUMN that the lake follows (cli/schema_evolution.c): the rows
 * already in the lake read NULL, or the default, which ddl_follow() checks
 * is the same for every row and records (columns.c).  NOT NULL needs a
 * default; CHECK constraints pass (Postgres checks them on the heap's
 * rows, which read the same default).
 */
static bool
carried_add_column(const ColumnDef *def)
{
	bool		not_null = def->is_not_null;
	bool		has_default = def->raw_default != NULL || def->cooked_default != NULL;
	ListCell   *lc;

	if (def->identity != '\0' || def->generated != '\0')
		return false;
	foreach(lc, def->constraints)
	{
		ConstrType	type = lfirst_node(Constraint, lc)->contype;

		if (type == CONSTR_NOTNULL)
			not_null = true;
		else if (type == CONSTR_DEFAULT)
			has_default = true;
		else if (type != CONSTR_NULL && type != CONSTR_CHECK)
			return false;
	}
	return !not_null || has_default;
}

/* numeric(p,s)'s precision and scale, false for a numeric without them. */
static bool
numeric_precision(int32 typmod, int *precision, int *scale)
{
	if (typmod < (int32) VARHDRSZ)
		return false;
	*precision = ((typmod - VARHDRSZ) >> 16) & 0xffff;
	*scale = (((typmod - VARHDRSZ) & 0x7ff) ^ 1024) - 1024;
	return true;
}

/*
 * Whether a column of type from can become type to with the lake
 * following by promotion (Iceberg: int to long, float to double, decimal
 * precision up at the same scale) or with its lake type unchanged (smallint
 * and integer are both Iceberg int; varchar of any length and text are
 * string), every value of from being the same value of to.  Domains are
 * not: their constraints are not the lake's.
 */
static bool
lake_follows_type_change(Oid from, int32 from_mod, Oid to, int32 to_mod)
{
	int			p1,
				s1,
				p2,
				s2;

	if (from == to && from_mod == to_mod)
		return true;
	switch (from)
	{
		case INT2OID:
			return to == INT4OID || to == INT8OID;
		case INT4OID:
			return to == INT8OID;
		case FLOAT4OID:
			return to == FLOAT8OID;
		case NUMERICOID:
			/* numeric(p,s) is an Iceberg decimal for p <= 38 and 0 <= s <= p (SPEC §6) */
			return to == NUMERICOID && numeric_precision(from_mod, &p1, &s1) &&
				numeric_precision(to_mod, &p2, &s2) && s1 == s2 && s1 >= 0 && p2 >= p1 && p2 <= 38;
		case VARCHAROID:
			return to == TEXTOID || (to == VARCHAROID && (to_mod < 0 || (from_mod >= 0 && to_mod >= from_mod)));
		case TEXTOID:
			return to == VARCHAROID && to_mod < 0;
		default:
			return false;
	}
}

/* ALTER TABLE t ALTER COLUMN c TYPE: carried when the lake can follow (columns.c rewrites the delta). */
static void
check_column_type(Oid relid, const Registration *reg, const AlterTableCmd *cmd)
{
	const ColumnDef *def = castNode(ColumnDef, cmd->def);
	AttrNumber	attnum = get_attnum(relid, cmd->name);
	Oid			old_type;
	int32		old_typmod;
	Oid			new_type;
	int32		new_typmod;

	refuse_key_column(relid, reg, cmd->name, "change the type of");
	if (attnum == InvalidAttrNumber)
		return;					/* Postgres' own error */
	get_atttypetypmodcoll(relid, attnum, &old_type, &old_typmod, &(Oid) {0});
	typenameTypeIdAndMod(NULL, def->typeName, &new_type, &new_typmod);
	if (def->raw_default != NULL || def->collClause != NULL ||
		getBaseType(old_type) != old_type || getBaseType(new_type) != new_type ||
		!lake_follows_type_change(old_type, old_typmod, new_type, new_typmod))
		refuse(relid, &(Refusal) {psprintf("change the type of column \"%s\" of", cmd->name), TYPE_NOT_CARRIED});
	record_column_retype(relid, cmd->name, old_type, old_typmod, new_type, new_typmod);
}

/* ALTER TABLE t DROP COLUMN c: carried, but of a key column (columns.c records it). */
static void
check_drop_column(Oid relid, const Registration *reg, const AlterTableCmd *cmd)
{
	refuse_key_column(relid, reg, cmd->name, "drop");
	if (get_attnum(relid, cmd->name) != InvalidAttrNumber)
		record_column_drop(relid, reg->location, cmd->name);
}

static bool
attaches_default_partition(const AlterTableCmd *cmd)
{
	const PartitionCmd *pc;

	if (cmd->subtype != AT_AttachPartition)
		return false;
	pc = castNode(PartitionCmd, cmd->def);
	return pc->bound != NULL && pc->bound->is_default;
}

/*
 * A partition of a mirrored table leaving it (DETACH PARTITION, DROP TABLE)
 * takes its rows out of the heap without a change the replication stream
 * would carry (Postgres publishes none for it), so the lake copy would keep
 * them: refused.  `table` is the table detached from (the mirrored table or
 * a partition of it), InvalidOid for a DROP.
 */
/*
 * Whether the daemon retired `partition` of mirrored table `root` under
 * --heap-retention: tierdb.partitions has it as tiered, which it records
 * only once T covers the partition and the lake holds its rows (the seal
 * kept every later write out).  Read without the catalog's privileges:
 * the daemon's role drops it.
 */
static bool
partition_retired(Oid root, Oid partition)
{
	Oid			catalog = get_relname_relid("partitions", seam_namespace());
	Oid			index = get_relname_relid("partitions_pkey", seam_namespace());
	char	   *id = quote_qualified_identifier(get_namespace_name(get_rel_namespace(partition)),
												get_rel_name(partition));
	ScanKeyData keys[2];
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		retired = false;

	if (!OidIsValid(catalog) || !OidIsValid(index))
		return false;
	rel = table_open(catalog, AccessShareLock);
	ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum((int64) root));
	ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(id));
	scan = systable_beginscan(rel, index, true, NULL, 2, keys);
	if ((tuple = systable_getnext(scan)) != NULL)
	{
		bool		isnull;
		Datum		state = heap_getattr(tuple, attnameAttNum(rel, "state", false), RelationGetDescr(rel), &isnull);

		retired = !isnull && strcmp(TextDatumGetCString(state), "tiered") == 0;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return retired;
}

static void
refuse_mirrored_partition_loss(Oid partition, Oid table, const char *what)
{
	Oid			mirrored = !OidIsValid(table) ? seam_mirrored_root(partition)
		: seam_has_mode(table, "mirrored") ? table : seam_mirrored_root(table);

	/* an empty partition loses nothing, nor one the lake holds below T */
	if (!OidIsValid(mirrored) || relation_is_empty(partition) || partition_retired(mirrored, partition))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot %s partition \"%s\" of mirrored table \"%s\"", what, get_rel_name(partition),
					get_rel_name(mirrored)),
			 errdetail("Its rows would leave the heap without a change the replication stream carries, and the "
					   "table's lake copy would keep them."),
			 errhint("DELETE the partition's rows first (the mirror follows), then %s it.", what)));
}

static void
check_alter_table(AlterTableStmt *stmt)
{
	Oid			relid;
	Registration reg;
	ListCell   *lc;

	if (stmt->objtype == OBJECT_TYPE)
		check_alter_composite(stmt);
	if (stmt->objtype != OBJECT_TABLE)
		return;
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);
		Oid			target;
		Oid			partition;

		if (cmd->subtype != AT_DetachPartition)
			continue;
		target = RangeVarGetRelid(stmt->relation, NoLock, true);
		partition = RangeVarGetRelid(castNode(PartitionCmd, cmd->def)->name, NoLock, true);
		if (OidIsValid(target) && OidIsValid(partition))
			refuse_mirrored_partition_loss(partition, target, "detach");
	}
	relid = registered_relation(stmt->relation);
	if (!OidIsValid(relid))
		return;
	reg = registration_of(relid);
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

		if (attaches_default_partition(cmd))
			refuse_default_partition(relid);
		switch (cmd->subtype)
		{
			case AT_AddColumn:
			case AT_AddColumnRecurse:
				if (!carried_add_column(castNode(ColumnDef, cmd->def)))
					refuse(relid, &(Refusal) {psprintf("add column \"%s\" to",
													   castNode(ColumnDef, cmd->def)->colname), ADD_NOT_CARRIED});
				break;
			case AT_DropColumn:
			case AT_DropColumnRecurse:
				check_drop_column(relid, &reg, cmd);
				break;
			case AT_AlterColumnType:
				check_column_type(relid, &reg, cmd);
				break;
			default:
				break;
		}
	}
}

/*
 * ALTER TABLE t RENAME COLUMN a TO b: carried (columns.c) unless a is the
 * tier key or a primary key column.  A column the table lacks is left to
 * Postgres' own error.
 */
static void
check_rename_column(Oid relid, RenameStmt *stmt)
{
	Registration reg = registration_of(relid);

	refuse_key_column(relid, &reg, stmt->subname, "rename");
	if (get_attnum(relid, stmt->subname) == InvalidAttrNumber)
		return;
	record_column_rename(relid, reg.location, stmt->subname, stmt->newname);
}

static void
check_rename(RenameStmt *stmt)
{
	Oid			relid;

	if (stmt->renameType == OBJECT_COLUMN && stmt->relationType == OBJECT_TABLE)
	{
		relid = registered_relation(stmt->relation);
		if (OidIsValid(relid))
			check_rename_column(relid, stmt);
	}
	else if (stmt->renameType == OBJECT_TABLE)
	{
		relid = registered_relation(stmt->relation);
		if (OidIsValid(relid))
			refuse(relid, &(Refusal) {"rename", TABLE_NAMED});
	}
}

static void
check_set_schema(AlterObjectSchemaStmt *stmt)
{
	Oid			relid = stmt->objectType == OBJECT_TABLE ? registered_relation(stmt->relation) : InvalidOid;

	if (OidIsValid(relid))
		refuse(relid, &(Refusal) {"change the schema of", TABLE_NAMED});
}

/* CREATE TABLE x PARTITION OF registered DEFAULT. */
static void
check_create(CreateStmt *stmt)
{
	Oid			parent;

	if (stmt->partbound == NULL || !stmt->partbound->is_default || list_length(stmt->inhRelations) != 1)
		return;
	parent = registered_relation(linitial_node(RangeVar, stmt->inhRelations));
	/* the spill partition of transparent writes (spill.h) is the one DEFAULT partition a registered table takes */
	if (OidIsValid(parent) && !spill_creating())
		refuse_default_partition(parent);
}

/*
 * A value's text form that reads back the same in any session: dates in
 * ISO order, intervals in the postgres style, floats exact (a session's
 * DateStyle could make 01/02/2024 read as another day).
 */
static char *
output_in_fixed_style(Oid output, Datum value)
{
	int			nest = NewGUCNestLevel();
	char	   *text;

	(void) set_config_option("DateStyle", "ISO, YMD", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("IntervalStyle", "postgres", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
							 false);
	(void) set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
							 false);
	text = OidOutputFunctionCall(output, value);
	AtEOXact_GUC(true, nest);
	return text;
}

/*
 * The value the rows already in the lake read for column `name` just added
 * to registered table relid: its default (or its domain's), evaluated once
 * as Postgres does for the heap's rows; NULL for none.  A volatile default
 * (random(), clock_timestamp(), a serial's nextval) would give each heap
 * row its own value, which the lake's rows cannot have: refused, which
 * rolls the ALTER back.
 */
static char *
added_column_default(Relation rel, const char *name, Oid *type, int32 *typmod)
{
	AttrNumber	attnum = attnameAttNum(rel, name, false);
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
	Node	   *expr = build_column_default(rel, attnum);
	EState	   *estate;
	ExprState  *state;
	Datum		value;
	bool		isnull;
	Oid			output;
	bool		varlena;

	*type = att->atttypid;
	*typmod = att->atttypmod;
	if (expr == NULL)
		return NULL;
	expr = (Node *) expression_planner((Expr *) expr);
	if (contain_volatile_functions(expr))
		refuse(RelationGetRelid(rel), &(Refusal) {
			psprintf("add column \"%s\" with a volatile default to", name),
				"Postgres gives each row already in the heap its own value of a volatile default; "
				"the rows already in the lake cannot have one. Add the column without the default, "
				"then SET DEFAULT: rows added from then on get it."});
	estate = CreateExecutorState();
	state = ExecPrepareExpr((Expr *) expr, estate);
	value = ExecEvalExprSwitchContext(state, GetPerTupleExprContext(estate), &isnull);
	if (isnull)
	{
		FreeExecutorState(estate);
		return NULL;
	}
	getTypeOutputInfo(att->atttypid, &output, &varlena);
	value = PointerGetDatum(output_in_fixed_style(output, value));
	FreeExecutorState(estate);
	return DatumGetCString(value);
}

/* After ALTER TABLE ... ADD COLUMN of a registered table: records the added columns' defaults. */
static void
follow_alter_table(AlterTableStmt *stmt)
{
	Oid			relid = stmt->objtype == OBJECT_TABLE ? registered_relation(stmt->relation) : InvalidOid;
	Relation	rel;
	ListCell   *lc;

	if (!OidIsValid(relid))
		return;
	rel = relation_open(relid, AccessShareLock);
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);
		const char *name;
		char	   *value;
		Oid			type;
		int32		typmod;

		if (cmd->subtype != AT_AddColumn && cmd->subtype != AT_AddColumnRecurse)
			continue;
		name = castNode(ColumnDef, cmd->def)->colname;
		/* ADD COLUMN IF NOT EXISTS of a column that was there changed nothing */
		if (get_attnum(relid, name) == InvalidAttrNumber)
			continue;
		value = added_column_default(rel, name, &type, &typmod);
		if (value != NULL)
			record_column_default(relid, name, type, typmod, value);
		else if (TupleDescAttr(RelationGetDescr(rel), get_attnum(relid, name) - 1)->attnotnull)
			refuse(relid, &(Refusal) {
				psprintf("add NOT NULL column \"%s\" without a default to", name),
					"The rows already in the lake would read NULL in it."});
	}
	relation_close(rel, AccessShareLock);
}

/* DROP TABLE of a non-empty partition of a mirrored table (refuse_mirrored_partition_loss). */
static void
check_drop(DropStmt *stmt)
{
	ListCell   *lc;

	if (stmt->removeType != OBJECT_TABLE)
		return;
	foreach(lc, stmt->objects)
	{
		Oid			relid = RangeVarGetRelid(makeRangeVarFromNameList(lfirst(lc)), NoLock, true);

		if (OidIsValid(relid))
			refuse_mirrored_partition_loss(relid, InvalidOid, "drop");
	}
}

PG_FUNCTION_INFO_V1(tierdb_ddl_follow);

/* The statement an event trigger function fires for. */
static Node *
event_parsetree(FunctionCallInfo fcinfo, const char *function)
{
	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s() must be called as an event trigger", function)));
	return ((EventTriggerData *) fcinfo->context)->parsetree;
}

/*
 * A partition that joins a mirrored table (CREATE TABLE ... PARTITION OF,
 * ATTACH PARTITION) gets REPLICA IDENTITY FULL at once, so its first UPDATE
 * or DELETE already carries the whole old row the pump needs
 * (docs/mirrored.md).
 */
static void
follow_new_partition(Oid partition)
{
	if (!OidIsValid(partition) || !OidIsValid(seam_mirrored_root(partition)) ||
		get_rel_relkind(partition) != RELKIND_RELATION)
		return;
	SPI_connect();
	if (SPI_execute(psprintf("ALTER TABLE %s REPLICA IDENTITY FULL",
							 quote_qualified_identifier(get_namespace_name(get_rel_namespace(partition)),
														get_rel_name(partition))), false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not set REPLICA IDENTITY FULL on %s", get_rel_name(partition));
	SPI_finish();
}

/* The ddl_command_end event trigger function. */
Datum
tierdb_ddl_follow(PG_FUNCTION_ARGS)
{
	Node	   *parsetree = event_parsetree(fcinfo, "tierdb.ddl_follow");

	if (IsA(parsetree, AlterTableStmt))
	{
		AlterTableStmt *stmt = (AlterTableStmt *) parsetree;
		ListCell   *lc;

		follow_alter_table(stmt);
		foreach(lc, stmt->cmds)
			if (lfirst_node(AlterTableCmd, lc)->subtype == AT_AttachPartition)
				follow_new_partition(RangeVarGetRelid(castNode(PartitionCmd, lfirst_node(AlterTableCmd, lc)->def)->name,
													  NoLock, true));
	}
	else if (IsA(parsetree, CreateStmt) && ((CreateStmt *) parsetree)->partbound != NULL)
		follow_new_partition(RangeVarGetRelid(((CreateStmt *) parsetree)->relation, NoLock, true));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(tierdb_ddl_guard);

/* The ddl_command_start event trigger function. */
Datum
tierdb_ddl_guard(PG_FUNCTION_ARGS)
{
	Node	   *parsetree = event_parsetree(fcinfo, "tierdb.ddl_guard");

	switch (nodeTag(parsetree))
	{
		case T_AlterTableStmt:
			check_alter_table((AlterTableStmt *) parsetree);
			break;
		case T_RenameStmt:
			check_rename((RenameStmt *) parsetree);
			break;
		case T_AlterObjectSchemaStmt:
			check_set_schema((AlterObjectSchemaStmt *) parsetree);
			break;
		case T_CreateStmt:
			check_create((CreateStmt *) parsetree);
			break;
		case T_AlterEnumStmt:
			check_alter_enum((AlterEnumStmt *) parsetree);
			break;
		case T_DropStmt:
			check_drop((DropStmt *) parsetree);
			break;
		default:
			break;
	}
	PG_RETURN_VOID();
}
