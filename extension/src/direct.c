/*-------------------------------------------------------------------------
 *
 * direct.c
 *		Cold writes of direct tables (SPEC §3, docs/direct.md): the rows a
 *		transaction wrote below the cut-line are committed to the lake as
 *		one Iceberg snapshot at the transaction's pre-commit point, and
 *		published in the same Postgres transaction.
 *
 * Every write path of a tiered table (transparent writes through the spill
 * partition, tierdb_upsert and tierdb_delete, tierdb-spark's routed writes)
 * writes delta rows; a direct table's go through the same paths, so they
 * are checked, routed and merged by the same code, and the transaction
 * reads its own writes (lake@S merged with the delta it sees).  The
 * trigger tierdb_direct_pending on tierdb.delta notes which direct tables
 * got delta rows; before the transaction commits, this file folds them
 * into the lake as the daemon folds a tiered table's delta (cli/fold.c),
 * in the committing backend:
 *
 *	 1. take the table's lake lock, pg_advisory_xact_lock(hashtextextended(
 *		'tierdb_lake_' || table_id, 0)), held until the transaction ends,
 *		so no other lake commit of the table lands before this one is
 *		published or undone;
 *	 2. bring the lake back to the published S if a transaction that
 *		committed to it then rolled back (or died) left a snapshot no
 *		committed cut-line names and no journal knows (reconcile_lake);
 *	 3. write the delta rows as equality-delete files (every captured key,
 *		at the partition of the row it replaces) and data files (the
 *		upserted rows), through the daemon's own type mapping and binary
 *		COPY decoder (cli/pgmap.c, cli/pgcopy.c), and commit them as one
 *		row-delta snapshot stamped with an op id;
 *	 4. in the same Postgres transaction: journal the op (op_log, kind
 *		'ingest', details.kind 'direct'), advance S, and delete the delta
 *		rows folded.
 *
 * So other transactions never see a direct table's delta rows: they are
 * gone before the transaction that wrote them commits.  If the transaction
 * aborts after step 3 (an error later in pre-commit, a crash, a kill), the
 * lake holds a snapshot no committed S names: Postgres and tierdb-spark,
 * which read at S, never show it, and the next writer of the table (the
 * next direct commit, the daemon's next step) rolls it back first.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "libpq/pqformat.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "utils/rls.h"
#include "utils/array.h"
#include "storage/lock.h"

#include "tierlake_pg.h"
#include "tierlake/iceberg_writer.h"
#include "../../cli/pgcopy.h"

#include "direct.h"
#include "lake_env.h"
#include "seam.h"
#include "storage_profiles.h"

/* Rows per batch handed to a writer (corrections are few; this bounds memory). */
#define DIRECT_BATCH_ROWS 8192

/* The settings under which column values become the lake's text forms (cli/pgtypes.h, TDB_PG_SESSION_OPTIONS). */
static const char *const text_settings[][2] = {
	{"DateStyle", "ISO"}, {"IntervalStyle", "postgres"}, {"TimeZone", "UTC"}, {"extra_float_digits", "3"},
	{"bytea_output", "hex"},
};

/* The direct tables this transaction wrote delta rows of (Oids, in TopTransactionContext). */
static List *pending = NIL;

/* The other tables it wrote delta rows of, so each is looked up once a transaction. */
static List *not_direct = NIL;

/*
 * tierdb.test_fault: for tests of the crash windows, a point of the commit
 * ("direct-after-lake-commit") at which to fail: "<point>" raises an ERROR
 * there, "<point>:fatal" ends the session (FATAL).  Superusers only.
 */
static char *test_fault = NULL;

static void
direct_fault(const char *point)
{
	size_t		len = strlen(point);

	if (test_fault == NULL || strncmp(test_fault, point, len) != 0 ||
		(test_fault[len] != '\0' && strcmp(test_fault + len, ":fatal") != 0))
		return;
	ereport(test_fault[len] == '\0' ? ERROR : FATAL,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg("tierdb.test_fault: failing at %s", point)));
}

/* ------------------------------------------------------------ noting writes */

PG_FUNCTION_INFO_V1(tierdb_direct_note);

/*
 * tierdb.direct_note(): the AFTER INSERT OR UPDATE row trigger
 * tierdb_direct_pending on tierdb.delta.  A row of a direct table puts the
 * table on the list the pre-commit callback folds.
 */
Datum
tierdb_direct_note(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	bool		isnull;
	Oid			relid;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_AFTER(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("tierdb.direct_note() must run as an AFTER ... FOR EACH ROW trigger on tierdb.delta")));
	relid = (Oid) DatumGetInt64(heap_getattr(TRIGGER_FIRED_BY_UPDATE(td->tg_event) ? td->tg_newtuple
											 : td->tg_trigtuple, 1, RelationGetDescr(td->tg_relation), &isnull));
	if (!isnull && !list_member_oid(pending, relid) && !list_member_oid(not_direct, relid))
	{
		MemoryContext caller = MemoryContextSwitchTo(TopTransactionContext);

		if (seam_is_direct(relid))
			pending = lappend_oid(pending, relid);
		else
			not_direct = lappend_oid(not_direct, relid);
		MemoryContextSwitchTo(caller);
	}
	return PointerGetDatum(NULL);
}

/* ------------------------------------------------------------ the lake's columns */

/* The table's columns (attnum order, dropped ones left out) as the lake maps them (cli/pgmap.h). */
static tdb_pg_column *
lake_columns(Relation rel, int *ncols)
{
	TupleDesc	desc = RelationGetDescr(rel);
	tdb_pg_column *cols = palloc0(sizeof(tdb_pg_column) * Max(desc->natts, 1));
	int			n = 0;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		int32		typmod = att->atttypmod;
		Oid			base = getBaseTypeAndTypmod(att->atttypid, &typmod);

		if (att->attisdropped)
			continue;
		cols[n].name = NameStr(att->attname);
		cols[n].type_oid = base;
		cols[n].typmod = att->atttypmod != -1 ? att->atttypmod : typmod;
		cols[n].not_null = att->attnotnull;
		tdb_pg_map_type(base, cols[n].typmod, type_is_enum(base), &cols[n].ice_type, &cols[n].copy_as_text);
		n++;
	}
	*ncols = n;
	return cols;
}

/* ------------------------------------------------------------ rows into batches */

/*
 * Rows in the binary COPY form the decoder reads (cli/pgcopy.h), made from
 * Datums: the types' send functions, except that text goes as UTF-8 text
 * (send functions would convert it to the client's encoding) and the types
 * the lake keeps as text go as their output under the pinned settings.
 */
typedef struct RowEncoder
{
	int			ncols;
	const tdb_pg_column *cols;
	AttrNumber *attnos;			/* per column, its attribute in the rows encoded */
	FmgrInfo   *out;			/* per column: the send or output function */
	bool	   *as_text;
	tdb_copy_decoder *decoder;
	tl_pq_batch *batch;
	tl_ice_writer *writer;
	StringInfoData msg;
} RowEncoder;

static bool
sent_as_text(const tdb_pg_column *col)
{
	if (col->copy_as_text)
		return true;
	switch (col->type_oid)
	{
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case NAMEOID:
		case JSONOID:
		case JSONBOID:
			return true;
		default:
			return col->ice_type.id == TL_ICE_STRING;	/* an enum's label */
	}
}

static void
raise_lake_error(const tl_error *err, const char *what, const char *table)
{
	tierdb_lake_error_precheck(err);
	ereport(ERROR,
			(errcode(tierdb_lake_errcode(err->code)),
			 errmsg("could not commit the cold writes of direct table %s to the lake: %s", table, err->message),
			 errdetail("TierDB was %s (%s); nothing was committed.", what, tl_error_code_name(err->code))));
}

static void
encoder_init(RowEncoder *e, const tdb_pg_column *cols, int ncols, TupleDesc desc, tl_ice_writer *writer,
			 const char *table)
{
	tl_error	err;

	tl_error_clear(&err);
	e->ncols = ncols;
	e->cols = cols;
	e->attnos = palloc(sizeof(AttrNumber) * ncols);
	e->out = palloc0(sizeof(FmgrInfo) * ncols);
	e->as_text = palloc(sizeof(bool) * ncols);
	e->writer = writer;
	for (int i = 0; i < ncols; i++)
	{
		Oid			func;
		bool		varlena;

		e->attnos[i] = InvalidAttrNumber;
		for (int a = 0; a < desc->natts; a++)
			if (!TupleDescAttr(desc, a)->attisdropped && strcmp(NameStr(TupleDescAttr(desc, a)->attname),
																cols[i].name) == 0)
				e->attnos[i] = a + 1;
		if (e->attnos[i] == InvalidAttrNumber)
			elog(ERROR, "column \"%s\" of %s is missing from the rows to commit", cols[i].name, table);
		e->as_text[i] = sent_as_text(&cols[i]);
		if (e->as_text[i])
			getTypeOutputInfo(cols[i].type_oid, &func, &varlena);
		else
			getTypeBinaryOutputInfo(cols[i].type_oid, &func, &varlena);
		fmgr_info(func, &e->out[i]);
	}
	e->decoder = tdb_copy_decoder_new(cols, ncols, &err);
	e->batch = e->decoder != NULL ? tl_pq_batch_new(tl_ice_writer_schema(writer), DIRECT_BATCH_ROWS) : NULL;
	if (e->batch == NULL)
		raise_lake_error(&err, "preparing the rows' conversion", table);
	initStringInfo(&e->msg);
	/* the stream's header: signature, flags, header extension length */
	appendBinaryStringInfo(&e->msg, "PGCOPY\n\377\r\n\0", 11);
	pq_sendint32(&e->msg, 0);
	pq_sendint32(&e->msg, 0);
}

static void
flush_batch(RowEncoder *e, const char *table)
{
	tl_error	err;

	tl_error_clear(&err);
	if (e->batch->nrows == 0)
		return;
	if (tl_ice_writer_write(e->writer, e->batch, &err) < 0)
		raise_lake_error(&err, "writing the rows' files", table);
	e->batch->nrows = 0;
	tl_arena_reset(&e->batch->arena);
}

static void
feed(RowEncoder *e, const char *table)
{
	tl_error	err;

	tl_error_clear(&err);
	if (tdb_copy_decoder_feed(e->decoder, e->msg.data, e->msg.len, e->batch, &err) < 0)
		raise_lake_error(&err, "converting the rows to the lake's types", table);
	resetStringInfo(&e->msg);
	if (e->batch->nrows >= e->batch->capacity)
		flush_batch(e, table);
}

/* Encodes one row (a composite Datum of the table's type) and hands it to the decoder. */
static void
encode_row(RowEncoder *e, HeapTupleHeader row, TupleDesc desc, const char *table)
{
	HeapTupleData tuple;

	tuple.t_len = HeapTupleHeaderGetDatumLength(row);
	tuple.t_data = row;
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	pq_sendint16(&e->msg, e->ncols);
	for (int i = 0; i < e->ncols; i++)
	{
		bool		isnull;
		Datum		value = heap_getattr(&tuple, e->attnos[i], desc, &isnull);

		if (isnull)
		{
			pq_sendint32(&e->msg, -1);
			continue;
		}
		if (e->as_text[i])
		{
			char	   *text = OutputFunctionCall(&e->out[i], value);
			char	   *utf8 = pg_server_to_any(text, strlen(text), PG_UTF8);
			int			len = strlen(utf8);
			bool		jsonb = e->cols[i].type_oid == JSONBOID && !e->cols[i].copy_as_text;

			pq_sendint32(&e->msg, len + (jsonb ? 1 : 0));
			if (jsonb)
				pq_sendbyte(&e->msg, 1);	/* jsonb's binary form: a version byte, then the text */
			appendBinaryStringInfo(&e->msg, utf8, len);
		}
		else
		{
			bytea	   *bytes = SendFunctionCall(&e->out[i], value);

			pq_sendint32(&e->msg, VARSIZE(bytes) - VARHDRSZ);
			appendBinaryStringInfo(&e->msg, VARDATA(bytes), VARSIZE(bytes) - VARHDRSZ);
		}
	}
	feed(e, table);
}

/* The trailer, the last batch, and the writer's files closed. */
static void
encoder_finish(RowEncoder *e, const char *table)
{
	tl_error	err;

	tl_error_clear(&err);
	pq_sendint16(&e->msg, -1);
	feed(e, table);
	if (tdb_copy_decoder_finish(e->decoder, &err) < 0)
		raise_lake_error(&err, "converting the rows to the lake's types", table);
	flush_batch(e, table);
	if (tl_ice_writer_close(e->writer, &err) < 0)
		raise_lake_error(&err, "closing the rows' files", table);
}

static void
encoder_free(RowEncoder *e)
{
	if (e->decoder != NULL)
		tdb_copy_decoder_free(e->decoder);
	if (e->batch != NULL)
		tl_pq_batch_free(e->batch);
	e->decoder = NULL;
	e->batch = NULL;
}

/* ------------------------------------------------------------ one commit */

/* What one table's commit holds; freed whatever happens (lake objects are malloc'd). */
typedef struct DirectCommit
{
	SeamTable  *table;
	const char *name;
	tl_ice_table *lake;
	tl_ice_writer *deletes;
	tl_ice_writer *data;
	RowEncoder	delete_rows;
	RowEncoder	data_rows;
	char		op_id[37];
} DirectCommit;

static void
commit_free(DirectCommit *c)
{
	encoder_free(&c->delete_rows);
	encoder_free(&c->data_rows);
	/* a writer freed before its close deletes its files; closed ones stay for the commit or the sweep */
	if (c->deletes != NULL)
		tl_ice_writer_free(c->deletes);
	if (c->data != NULL)
		tl_ice_writer_free(c->data);
	if (c->lake != NULL)
		tl_ice_table_free(c->lake);
	c->deletes = c->data = NULL;
	c->lake = NULL;
}

/* Runs sql as the extension's catalog owner would see it: SPI_execute_with_args, ERROR unless `expected`. */
static void
run_sql(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls, Snapshot snapshot, int expected)
{
	int			rc;

	if (snapshot != InvalidSnapshot)
	{
		SPIPlanPtr	plan = SPI_prepare(sql, nargs, types);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for: %s", sql);
		rc = SPI_execute_snapshot(plan, values, nulls, snapshot, InvalidSnapshot, false, false, 0);
	}
	else
		rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);
	if (rc != expected)
		elog(ERROR, "%s returned %d, expected %d", sql, rc, expected);
}

/* S as `snapshot` sees it (TL_ICE_NO_SNAPSHOT for none). */
static int64
published_s(const SeamTable *t, Snapshot snapshot)
{
	Oid			types[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(t->table_id)};
	bool		isnull;
	Datum		s;

	run_sql("SELECT lake_snapshot_id FROM tierdb.cutline WHERE table_id = $1", 1, types, values, NULL, snapshot,
			SPI_OK_SELECT);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s has no cut-line", seam_table_name(t->relid))));
	s = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? TL_ICE_NO_SNAPSHOT : DatumGetInt64(s);
}

/* Commits through a REST catalog are the daemon's alone so far: refused before anything is written. */
static void
refuse_rest_catalog(const DirectCommit *c)
{
	Oid			types[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(c->table->table_id)};

	run_sql("SELECT FROM tierdb.cutline WHERE table_id = $1 AND lake_props ? 'rest_catalog'", 1, types, values, NULL,
			InvalidSnapshot, SPI_OK_SELECT);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot commit the cold writes of direct table %s: its lake table is kept in an Iceberg "
						"REST catalog, which direct commits from Postgres do not support yet", c->name),
				 errhint("Write rows at or above the cut-line only, or register the table without "
						 "TIERDB_CATALOG_URI.")));
}

/*
 * Rows below the retention line R as last committed: lake retention may
 * have moved R since the writes checked it, and the lake expired that
 * range on purpose.
 */
static void
refuse_below_retention(const DirectCommit *c)
{
	Oid			types[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(c->table->table_id)};

	run_sql("SELECT FROM tierdb.delta d JOIN tierdb.cutline l USING (table_id)"
			" WHERE d.table_id = $1 AND d.op = 0 AND d.tier_key < l.retention_line",
			1, types, values, NULL, GetLatestSnapshot(), SPI_OK_SELECT);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("%lld row(s) written to direct table %s are below its retention line", (long long) SPI_processed,
						c->name),
				 errdetail("Lake retention expired rows below the line on purpose while the transaction ran; "
						   "nothing was written."),
				 errhint("Only rows at or above the retention line can be written.")));
}

/* Whether tierdb.op_log, as last committed (and as this transaction wrote it), knows the op. */
static bool
known_op(const char *op_id)
{
	Oid			types[] = {TEXTOID};
	Datum		values[] = {CStringGetTextDatum(op_id)};

	run_sql("SELECT FROM tierdb.op_log WHERE op_id::text = $1", 1, types, values, NULL, GetLatestSnapshot(),
			SPI_OK_SELECT);
	return SPI_processed > 0;
}

/*
 * The lake must be at S before this commit builds on it.  Snapshots past S
 * that no journal knows were committed by transactions that then rolled
 * back (or died): rolled back, here, under the lake lock.  A snapshot past S
 * that the journal knows is an operation of the daemon's that a crash
 * interrupted: the daemon settles it, and this transaction must wait for
 * that (it fails, to be retried).
 */
static void
reconcile_lake(DirectCommit *c, int64 s)
{
	tl_error	err;
	int64		id = c->lake->metadata->current_snapshot_id;
	int			steps = 0;

	tl_error_clear(&err);
	while (id != s)
	{
		const tl_ice_snapshot *snap = id != TL_ICE_NO_SNAPSHOT ? tl_ice_metadata_snapshot(c->lake->metadata, id) : NULL;
		const char *op = snap != NULL ? tl_ice_snapshot_summary(snap, "tierdb.op-id") : NULL;

		if (snap == NULL || steps++ > c->lake->metadata->nsnapshots)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the lake table of direct table %s does not descend from its published snapshot "
							"%lld", c->name, (long long) s),
					 errdetail("Its current snapshot is %lld.", (long long) c->lake->metadata->current_snapshot_id),
					 errhint("Run tierdb verify --table %s.", c->name)));
		if (op != NULL && known_op(op))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("the lake of direct table %s holds an operation the daemon has not settled yet", c->name),
					 errdetail("Operation %s committed snapshot %lld and was interrupted before it was published.",
							   op, (long long) id),
					 errhint("Retry the transaction once the daemon's next cycle has settled it.")));
		id = snap->parent_id;
	}
	if (c->lake->metadata->current_snapshot_id != s)
	{
		ereport(LOG,
				(errmsg("rolling the lake of direct table %s back from snapshot %lld to its published snapshot %lld",
						c->name, (long long) c->lake->metadata->current_snapshot_id, (long long) s),
				 errdetail("The newer snapshots were committed by transactions that did not commit.")));
		if (tl_ice_table_rollback(c->lake, s, &err) < 0)
			raise_lake_error(&err, "rolling back a lake commit whose transaction did not commit", c->name);
	}
}

/*
 * The delta rows to fold, oldest version first: pk, version, whether the
 * row is an upsert, the key row (the pk columns and the tier key at the
 * place of the row it replaces, the rest NULL) and the upserted row.
 */
static void
capture_rows(const SeamTable *t, const char *qualified)
{
	const char *tier = get_attname(t->relid, t->tier_key_attno, false);
	bool		tier_in_pk = false;
	StringInfoData sql;
	Oid			types[] = {INT8OID, TEXTARRAYOID};
	Datum		values[2];
	Datum	   *cols = palloc(sizeof(Datum) * t->npk);
	const char *key_type;

	for (int i = 0; i < t->npk; i++)
	{
		cols[i] = CStringGetTextDatum(get_attname(t->relid, t->pk_attnos[i], false));
		tier_in_pk = tier_in_pk || t->pk_attnos[i] == t->tier_key_attno;
	}
	switch (t->key_kind)
	{
		case SEAM_KEY_TIMESTAMPTZ:
			key_type = "timestamptz";
			break;
		case SEAM_KEY_TIMESTAMP:
			key_type = "timestamp";
			break;
		case SEAM_KEY_DATE:
			key_type = "date";
			break;
		default:
			key_type = "bigint";
	}
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT d.pk, d.version, d.op = 0,"
					 " jsonb_populate_record(NULL::%s, jsonb_object($2, tierdb.pk_parts(d.pk, %d))",
					 qualified, t->npk);
	if (!tier_in_pk)
		appendStringInfo(&sql, " || jsonb_build_object(%s, tierdb.tier_key_text(coalesce(d.old_tier_key, d.tier_key), %s))",
						 quote_literal_cstr(tier), quote_literal_cstr(key_type));
	appendStringInfo(&sql,
					 "), CASE WHEN d.op = 0 THEN jsonb_populate_record(NULL::%s, d.payload) END"
					 " FROM tierdb.delta d WHERE d.table_id = $1 ORDER BY d.version",
					 qualified);
	values[0] = Int64GetDatum(t->table_id);
	values[1] = PointerGetDatum(construct_array(cols, t->npk, TEXTOID, -1, false, TYPALIGN_INT));
	run_sql(sql.data, 2, types, values, NULL, InvalidSnapshot, SPI_OK_SELECT);
}

/* The delete files' columns (the pk columns, then the tier key unless it is one) and their lake field ids. */
static tdb_pg_column *
key_columns(const DirectCommit *c, const tdb_pg_column *cols, int ncols, int32 **ids, int *nkey)
{
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(c->lake->metadata);
	SeamTable  *t = c->table;
	tdb_pg_column *keys = palloc0(sizeof(tdb_pg_column) * (t->npk + 1));
	int			n = 0;

	*ids = palloc(sizeof(int32) * (t->npk + 1));
	for (int i = 0; i <= t->npk; i++)
	{
		AttrNumber	attno = i < t->npk ? t->pk_attnos[i] : t->tier_key_attno;
		const char *name = get_attname(t->relid, attno, false);
		const tl_ice_field *field = NULL;
		bool		repeated = false;

		for (int k = 0; k < n; k++)
			repeated = repeated || strcmp(keys[k].name, name) == 0;
		if (repeated)
			continue;
		for (int k = 0; k < schema->nfields && field == NULL; k++)
			if (strcmp(schema->fields[k].name, name) == 0)
				field = &schema->fields[k];
		for (int k = 0; k < ncols; k++)
			if (strcmp(cols[k].name, name) == 0)
				keys[n] = cols[k];
		if (field == NULL || keys[n].name == NULL || field->type.id != keys[n].ice_type.id)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("column \"%s\" of direct table %s does not match a field of its lake table %s", name,
							c->name, c->lake->location)));
		(*ids)[n++] = field->id;
	}
	*nkey = n;
	return keys;
}

/*
 * The bloom filters the daemon's writers put in a table's data files
 * (cli/lakestep.c, tdb_lake_writer_options): on the primary key, and on the
 * columns the table's policy names (bloom_columns, checked when `tierdb
 * policy` set it) at its bloom_fpp; a name the lake's schema lacks is left
 * out, as the daemon leaves it out. The daemon's environment defaults
 * (TIERDB_MAINTENANCE_BLOOM_FPP) do not reach the backend: without a
 * value in the table's policy the writer's own default holds.
 */
static void
policy_bloom_filters(DirectCommit *c, tl_ice_writer_options *opts)
{
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(c->lake->metadata);
	Oid			types[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(c->table->table_id)};
	int32	   *ids;
	int			n = 0;

	opts->bloom_identifier_fields = true;
	run_sql("SELECT (maintenance_policy->>'bloom_fpp')::float8 FROM tierdb.tables"
			" WHERE table_id = $1 AND maintenance_policy ? 'bloom_fpp'", 1, types, values, NULL, InvalidSnapshot,
			SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		bool		isnull;

		opts->parquet.bloom_fpp = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
															   &isnull));
	}
	/* (split as cli/maintenance_policy.c splits it: at commas, spaces around a name trimmed, "none" for none) */
	run_sql("SELECT btrim(name) FROM tierdb.tables t,"
			" regexp_split_to_table(t.maintenance_policy->>'bloom_columns', ',') name"
			" WHERE t.table_id = $1 AND lower(btrim(name)) NOT IN ('', 'none')", 1, types, values, NULL,
			InvalidSnapshot, SPI_OK_SELECT);
	ids = palloc(sizeof(int32) * Max(SPI_processed, 1));
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		char	   *name = SPI_getvalue(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1);

		for (int k = 0; k < schema->nfields; k++)
			if (strcmp(schema->fields[k].name, name) == 0)
				ids[n++] = schema->fields[k].id;
	}
	opts->bloom_field_ids = ids;
	opts->nbloom_field_ids = n;
}

/* Writes the captured rows into the delete and data writers. */
static void
write_rows(DirectCommit *c, Relation rel, SPITupleTable *captured, uint64 rows)
{
	tl_error	err;
	tl_ice_writer_options opts;
	int			ncols,
				nkey;
	tdb_pg_column *cols = lake_columns(rel, &ncols);
	int32	   *key_ids;
	tdb_pg_column *keys = key_columns(c, cols, ncols, &key_ids, &nkey);
	TupleDesc	desc = RelationGetDescr(rel);
	int			gucs = NewGUCNestLevel();

	tl_error_clear(&err);
	tl_ice_writer_options_init(&opts);
	opts.file_prefix = c->op_id;
	policy_bloom_filters(c, &opts);
	/* the pk columns match; the tier key only places the delete in its partition */
	c->deletes = tl_ice_writer_open_deletes(c->lake, key_ids, nkey, key_ids, c->table->npk, &opts, &err);
	if (c->deletes != NULL)
		c->data = tl_ice_writer_open_data(c->lake, &opts, &err);
	if (c->data == NULL)
		raise_lake_error(&err, "opening the files to write", c->name);
	encoder_init(&c->delete_rows, keys, nkey, desc, c->deletes, c->name);
	encoder_init(&c->data_rows, cols, ncols, desc, c->data, c->name);
	for (int i = 0; i < lengthof(text_settings); i++)
		(void) set_config_option(text_settings[i][0], text_settings[i][1], PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	for (uint64 r = 0; r < rows; r++)
	{
		HeapTuple	tuple = captured->vals[r];
		bool		isnull;
		Datum		key = SPI_getbinval(tuple, captured->tupdesc, 4, &isnull);

		CHECK_FOR_INTERRUPTS();
		encode_row(&c->delete_rows, DatumGetHeapTupleHeader(key), desc, c->name);
		if (DatumGetBool(SPI_getbinval(tuple, captured->tupdesc, 3, &isnull)))
			encode_row(&c->data_rows, DatumGetHeapTupleHeader(SPI_getbinval(tuple, captured->tupdesc, 5, &isnull)),
					   desc, c->name);
	}
	AtEOXact_GUC(true, gucs);
	encoder_finish(&c->delete_rows, c->name);
	encoder_finish(&c->data_rows, c->name);
}

static void
add_files(DirectCommit *c, tl_ice_commit *commit, const tl_ice_writer *w, tl_error *err, int *rc)
{
	for (int i = 0; i < tl_ice_writer_nfiles(w) && *rc == 0; i++)
		*rc = tl_ice_commit_add_file(commit, tl_ice_writer_file(w, i), err);
}

/* Commits the files as one row-delta snapshot stamped with the op id; its id. */
static int64
commit_files(DirectCommit *c)
{
	tl_error	err;
	tl_ice_commit *commit;
	int64_t		snapshot_id = TL_ICE_NO_SNAPSHOT;
	int			rc = 0;

	tl_error_clear(&err);
	commit = tl_ice_commit_begin(c->lake, TL_ICE_OP_ROW_DELTA, &err);
	if (commit == NULL)
		raise_lake_error(&err, "starting the lake commit", c->name);
	add_files(c, commit, c->deletes, &err, &rc);
	add_files(c, commit, c->data, &err, &rc);
	if (rc == 0)
		rc = tl_ice_commit_set_summary(commit, "tierdb.op-id", c->op_id) < 0
			? tl_error_nomem(&err, "stamping the commit") : 0;
	if (rc == 0)
		rc = tl_ice_commit_finish(commit, &snapshot_id, &err);
	tl_ice_commit_free(commit);
	if (rc < 0)
		raise_lake_error(&err, "committing the files", c->name);
	return snapshot_id;
}

/* Journals the op, advances S from base to snapshot_id, and deletes the folded delta rows: one transaction. */
static void
publish(DirectCommit *c, int64 base, int64 snapshot_id, Datum pks, Datum versions, int64 rows)
{
	Oid			types[] = {INT8OID, TEXTOID, INT8OID, INT8OID, TEXTOID, TEXTARRAYOID, INT8ARRAYOID, INT8OID};
	char	   *location = psprintf("%s/metadata/%s", c->lake->location,
									strrchr(c->lake->metadata_file, '/') != NULL
									? strrchr(c->lake->metadata_file, '/') + 1 : c->lake->metadata_file);
	Datum		values[] = {Int64GetDatum(c->table->table_id), CStringGetTextDatum(c->op_id),
		Int64GetDatum(snapshot_id), Int64GetDatum(base), CStringGetTextDatum(location), pks, versions,
	Int64GetDatum(rows)};
	char		nulls[] = "        ";

	nulls[3] = base == TL_ICE_NO_SNAPSHOT ? 'n' : ' ';
	run_sql("INSERT INTO tierdb.op_log (op_id, table_id, op_kind, phase, lake_snapshot_id, details)"
			" VALUES ($2::uuid, $1, 'ingest', 'done', $3,"
			" jsonb_build_object('kind', 'direct', 'rows', $8, 'base_snapshot_id', $4))",
			8, types, values, nulls, InvalidSnapshot, SPI_OK_INSERT);
	run_sql("UPDATE tierdb.cutline SET lake_snapshot_id = $3,"
			" lake_props = lake_props || jsonb_build_object('metadata_location', $5, 'snapshot_id', $3),"
			" updated_at = now()"
			" WHERE table_id = $1 AND lake_snapshot_id IS NOT DISTINCT FROM $4",
			8, types, values, nulls, InvalidSnapshot, SPI_OK_UPDATE);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("the cut-line of direct table %s moved while its cold writes were committed", c->name),
				 errhint("Retry the transaction.")));
	run_sql("DELETE FROM tierdb.delta WHERE table_id = $1 AND (pk, version) IN (SELECT * FROM unnest($6, $7))",
			8, types, values, nulls, InvalidSnapshot, SPI_OK_DELETE);
}

/* A random (version 4) UUID as text, the op id. */
static void
new_op_id(char out[37])
{
	uint8		b[16];

	if (!pg_strong_random(b, sizeof(b)))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate a random operation id")));
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* The owner of the catalog (its table tierdb.delta), whose rights the commit runs with. */
static Oid
catalog_owner(void)
{
	Relation	delta = table_open(get_relname_relid("delta", seam_namespace()), AccessShareLock);
	Oid			owner = delta->rd_rel->relowner;

	table_close(delta, AccessShareLock);
	return owner;
}

/* The table's lake lock, pg_advisory_xact_lock(hashtextextended('tierdb_lake_' || table_id, 0)). */
static void
take_lake_lock(const SeamTable *t)
{
	char	   *lock_name = psprintf("tierdb_lake_%lld", (long long) t->table_id);
	Datum		key = DirectFunctionCall2Coll(hashtextextended, DEFAULT_COLLATION_OID, CStringGetTextDatum(lock_name),
											  Int64GetDatum(0));

	DirectFunctionCall1(pg_advisory_xact_lock_int8, key);
}

/* Folds table relid's delta rows into the lake (steps 1-4 of the file comment), in this transaction. */
static void
direct_commit(Oid relid)
{
	/* in memory, not on the stack: the error path frees what the commit made */
	DirectCommit *c = palloc0(sizeof(DirectCommit));
	Relation	rel;
	Oid			owner;
	Oid			user;
	int			security;
	mode_t		mask;

	c->table = seam_lookup_table(relid);
	if (c->table == NULL || !c->table->direct)
		return;					/* unregistered meanwhile: nothing to commit to */
	c->name = seam_table_name(relid);
	rel = table_open(relid, AccessShareLock);
	/* the catalog is the extension owner's, as its SECURITY DEFINER functions read it */
	owner = catalog_owner();
	GetUserIdAndSecContext(&user, &security);
	SetUserIdAndSecContext(owner, security | SECURITY_LOCAL_USERID_CHANGE);
	SPI_connect();
	/* pre-commit runs outside any statement: the queries below need a snapshot of their own */
	PushActiveSnapshot(GetTransactionSnapshot());
	/*
	 * Files and directories the server makes in a local lake get the modes
	 * the daemon's get (0644, 0755), not the server's private ones: other
	 * engines and the daemon read the lake as other users.
	 */
	mask = umask(S_IWGRP | S_IWOTH);
	PG_TRY();
	{
		int64		s;
		Datum		pks;
		Datum		versions;
		int64		rows;
		int64		snapshot_id;

		take_lake_lock(c->table);
		s = published_s(c->table, GetLatestSnapshot());
		refuse_rest_catalog(c);
		if (IsolationUsesXactSnapshot() && published_s(c->table, GetTransactionSnapshot()) != s)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize access due to a concurrent lake commit of direct table %s", c->name),
					 errhint("Retry the transaction.")));
		refuse_below_retention(c);
		capture_rows(c->table, quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
														 RelationGetRelationName(rel)));
		rows = SPI_processed;
		if (rows > 0)
		{
			SPITupleTable *captured = SPI_tuptable;
			Datum	   *pk_values = palloc(sizeof(Datum) * rows);
			Datum	   *version_values = palloc(sizeof(Datum) * rows);
			tl_error	err;

			for (int64 i = 0; i < rows; i++)
			{
				bool		isnull;

				pk_values[i] = SPI_getbinval(captured->vals[i], captured->tupdesc, 1, &isnull);
				version_values[i] = SPI_getbinval(captured->vals[i], captured->tupdesc, 2, &isnull);
			}
			pks = PointerGetDatum(construct_array(pk_values, rows, TEXTOID, -1, false, TYPALIGN_INT));
			versions = PointerGetDatum(construct_array(version_values, rows, INT8OID, 8, FLOAT8PASSBYVAL,
													   TYPALIGN_DOUBLE));
			new_op_id(c->op_id);
			storage_profiles_prepare();
			tl_error_clear(&err);
			c->lake = tl_ice_table_open(c->table->lake_location, &err);
			if (c->lake == NULL)
				raise_lake_error(&err, "opening the lake table", c->name);
			reconcile_lake(c, s);
			write_rows(c, rel, captured, rows);
			snapshot_id = commit_files(c);
			direct_fault("direct-after-lake-commit");
			publish(c, s, snapshot_id, pks, versions, rows);
		}
	}
	PG_FINALLY();
	{
		umask(mask);
		commit_free(c);
		SetUserIdAndSecContext(user, security);
	}
	PG_END_TRY();
	PopActiveSnapshot();
	SPI_finish();
	table_close(rel, AccessShareLock);
}

/* ------------------------------------------------------------ commits made by tierdb-spark */

/*
 * tierdb-spark's parallel writes of a direct table (docs/direct.md, "From
 * Spark"): its executors write the data and equality-delete files, and its
 * driver commits them to the lake itself as one snapshot stamped with an op
 * id, inside a Postgres transaction that brackets that commit:
 *
 *	 tierdb.direct_lake_begin(tbl, privileges) checks the caller's
 *	 privileges, takes the lake lock (to the transaction's end, so T, S and R
 *	 stay as returned), brings the lake back to S (reconcile_lake), and
 *	 returns {S, T, R, metadata_location};
 *
 *	 tierdb.direct_lake_publish(tbl, privileges, op_id, base, snapshot, rows), under
 *	 that lock, checks that the lake's current snapshot is `snapshot`, made
 *	 from S = `base` and stamped `op_id`, then journals and publishes it as
 *	 a backend's own commit is (publish()).
 *
 * A driver that dies between its lake commit and its Postgres commit leaves
 * a snapshot no journal knows, which the next writer rolls back.
 */

/* The commit of direct table relid by a caller holding `privileges` (text[]) on it; row security must not apply. */
static DirectCommit *
external_commit(Oid relid, ArrayType *privileges)
{
	DirectCommit *c = palloc0(sizeof(DirectCommit));
	Datum	   *names;
	int			n;

	c->table = seam_lookup_table(relid);
	if (c->table == NULL || !c->table->direct)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is not registered in direct mode", seam_table_name(relid))));
	c->name = seam_table_name(relid);
	deconstruct_array(privileges, TEXTOID, -1, false, TYPALIGN_INT, &names, NULL, &n);
	for (int i = 0; i < n; i++)
		if (!DatumGetBool(DirectFunctionCall2(has_table_privilege_id, ObjectIdGetDatum(relid), names[i])))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for table %s", get_rel_name(relid)),
					 errdetail("This write needs %s on the table; role %s lacks %s.",
							   text_to_cstring(DatumGetTextPP(DirectFunctionCall2(array_to_text,
																				  PointerGetDatum(privileges),
																				  CStringGetTextDatum(", ")))),
							   GetUserNameFromId(GetUserId(), false), TextDatumGetCString(names[i]))));
	/* the files carry rows no policy has seen: only a writer that policies do not apply to may commit them */
	if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("row-level security applies to role %s on table %s, so its rows cannot be committed to "
						"the lake as files", GetUserNameFromId(GetUserId(), false), c->name),
				 errhint("Write them through Postgres (tierdb-spark does so by itself for such tables).")));
	return c;
}

/* Runs fn(c, arg) with the catalog owner's rights and SPI, as direct_commit does; frees c's lake objects. */
static void
as_catalog_owner(DirectCommit *c, void (*fn) (DirectCommit *c, void *arg), void *arg)
{
	Oid			owner = catalog_owner();
	Oid			user;
	int			security;
	mode_t		mask = umask(S_IWGRP | S_IWOTH);

	GetUserIdAndSecContext(&user, &security);
	SetUserIdAndSecContext(owner, security | SECURITY_LOCAL_USERID_CHANGE);
	SPI_connect();
	PG_TRY();
	{
		fn(c, arg);
	}
	PG_FINALLY();
	{
		umask(mask);
		commit_free(c);
		SetUserIdAndSecContext(user, security);
	}
	PG_END_TRY();
	SPI_finish();
}

/* The lake table of c, opened (its current metadata). */
static void
open_lake(DirectCommit *c)
{
	tl_error	err;

	storage_profiles_prepare();
	tl_error_clear(&err);
	c->lake = tl_ice_table_open(c->table->lake_location, &err);
	if (c->lake == NULL)
		raise_lake_error(&err, "opening the lake table", c->name);
}

/* direct_lake_begin's work; *(char **) arg receives the jsonb text, in the caller's memory context. */
static void
begin_external(DirectCommit *c, void *arg)
{
	char	  **result = arg;
	MemoryContext caller = GetMemoryChunkContext(arg);
	Oid			types[] = {INT8OID};
	Datum		values[] = {Int64GetDatum(c->table->table_id)};
	int64		s;

	take_lake_lock(c->table);
	s = published_s(c->table, GetLatestSnapshot());
	refuse_rest_catalog(c);
	open_lake(c);
	reconcile_lake(c, s);
	run_sql("SELECT jsonb_build_object('S', lake_snapshot_id, 'T', tier_key_hi, 'R', retention_line,"
			" 'metadata_location', lake_props ->> 'metadata_location', 'location', t.lake_table_ref)::text"
			" FROM tierdb.cutline JOIN tierdb.tables t USING (table_id) WHERE table_id = $1",
			1, types, values, NULL, GetLatestSnapshot(), SPI_OK_SELECT);
	*result = MemoryContextStrdup(caller, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
}

PG_FUNCTION_INFO_V1(tierdb_direct_lake_begin);

/* tierdb.direct_lake_begin(tbl regclass, privileges text[]) RETURNS jsonb: see above. */
Datum
tierdb_direct_lake_begin(PG_FUNCTION_ARGS)
{
	DirectCommit *c = external_commit(PG_GETARG_OID(0), PG_GETARG_ARRAYTYPE_P(1));
	char	  **result = palloc0(sizeof(char *));

	as_catalog_owner(c, begin_external, result);
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(*result)));
}

/* What direct_lake_publish was asked to publish. */
typedef struct ExternalSnapshot
{
	bool		has_base;
	int64		base;
	int64		snapshot_id;
	int64		rows;
} ExternalSnapshot;

/* Whether this transaction holds the table's lake lock (take_lake_lock's advisory lock). */
static bool
holds_lake_lock(const SeamTable *t)
{
	char	   *lock_name = psprintf("tierdb_lake_%lld", (long long) t->table_id);
	uint64		key = (uint64) DatumGetInt64(DirectFunctionCall2Coll(hashtextextended, DEFAULT_COLLATION_OID,
																	 CStringGetTextDatum(lock_name),
																	 Int64GetDatum(0)));
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (key >> 32), (uint32) key, 1);
	return LockHeldByMe(&tag, ExclusiveLock);
}

static void
publish_external(DirectCommit *c, void *arg)
{
	ExternalSnapshot *e = arg;
	int64		base = e->has_base ? e->base : TL_ICE_NO_SNAPSHOT;
	const tl_ice_snapshot *snap;
	const char *op;

	if (!holds_lake_lock(c->table))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot publish a lake commit of direct table %s without its lake lock", c->name),
				 errhint("Call tierdb.direct_lake_begin in the same transaction before committing to the lake.")));
	if (published_s(c->table, GetLatestSnapshot()) != base)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("the cut-line of direct table %s moved while its cold writes were committed", c->name),
				 errhint("Retry the write.")));
	open_lake(c);
	snap = tl_ice_metadata_snapshot(c->lake->metadata, e->snapshot_id);
	op = snap != NULL ? tl_ice_snapshot_summary(snap, "tierdb.op-id") : NULL;
	if (snap == NULL || c->lake->metadata->current_snapshot_id != e->snapshot_id || snap->parent_id != base || op == NULL
		|| strcmp(op, c->op_id) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snapshot %lld is not the lake commit of operation %s on direct table %s",
						(long long) e->snapshot_id, c->op_id, c->name),
				 errdetail("Publishing needs the lake's current snapshot, made from the published snapshot %lld "
						   "and stamped tierdb.op-id = %s; the current snapshot is %lld.",
						   (long long) base, c->op_id, (long long) c->lake->metadata->current_snapshot_id)));
	publish(c, base, e->snapshot_id, PointerGetDatum(construct_empty_array(TEXTOID)),
			PointerGetDatum(construct_empty_array(INT8OID)), e->rows);
}

PG_FUNCTION_INFO_V1(tierdb_direct_lake_publish);

/* tierdb.direct_lake_publish(tbl regclass, privileges text[], op_id uuid, base bigint, snapshot bigint, rows bigint). */
Datum
tierdb_direct_lake_publish(PG_FUNCTION_ARGS)
{
	DirectCommit *c = external_commit(PG_GETARG_OID(0), PG_GETARG_ARRAYTYPE_P(1));
	ExternalSnapshot e = {!PG_ARGISNULL(3), PG_ARGISNULL(3) ? 0 : PG_GETARG_INT64(3), PG_GETARG_INT64(4),
	PG_GETARG_INT64(5)};

	strlcpy(c->op_id, DatumGetCString(DirectFunctionCall1(uuid_out, PG_GETARG_DATUM(2))), sizeof(c->op_id));
	as_catalog_owner(c, publish_external, &e);
	PG_RETURN_VOID();
}

/* ------------------------------------------------------------ the transaction */

static void
direct_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			while (pending != NIL)
			{
				Oid			relid = linitial_oid(pending);

				pending = list_delete_first(pending);
				direct_commit(relid);
			}
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (pending != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that wrote rows below the cut-line of direct table %s",
								seam_table_name(linitial_oid(pending))),
						 errdetail("Those rows are committed to the lake when the transaction commits, which a "
								   "prepared transaction cannot do.")));
			break;
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			break;
		default:
			pending = not_direct = NIL; /* TopTransactionContext, where they lived, is gone */
			break;
	}
}

void
direct_init(void)
{
	DefineCustomStringVariable("tierdb.test_fault",
							   "For tests: the point of a direct table's lake commit at which to fail.",
							   NULL,
							   &test_fault,
							   "",
							   PGC_SUSET,
							   GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL,
							   NULL, NULL, NULL);
	RegisterXactCallback(direct_xact_callback, NULL);
}
