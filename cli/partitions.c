/*
 * partitions.c: a registered table's heap as the daemon sees it: its range
 * partitions (catalog.c's tdb_heap_partitions, the listing registration
 * uses), max(tier_key) and tier-key literals, all converted by the server
 * with the canonical codec (SPEC §2), so the client never parses dates or
 * time zones and every component agrees on the numbers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"
#include "tiering.h"

const char *tdb_buf_cstr(tl_buf *b)
{
	if (tl_buf_reserve(b, 1) < 0) {
		/* The CLI's own buffers: nothing to hand back, so stop as before (abort()). */
		fputs("tierdb: out of memory\n", stderr);
		exit(70);
	}
	b->data[b->len] = '\0';
	return (const char *)b->data;
}

const char *tdb_table_label(const tdb_catalog_table *t)
{
	static _Thread_local char label[300]; /* per thread: Stream Load's ingests run on its threads */
	snprintf(label, sizeof(label), "%s.%s", t->schema_name, t->table_name);
	return label;
}

void tdb_abort_transaction(PGconn *c)
{
	if (PQtransactionStatus(c) == PQTRANS_INTRANS || PQtransactionStatus(c) == PQTRANS_INERROR)
		PQclear(PQexec(c, "ROLLBACK"));
}

int tdb_range_partitions(PGconn *c, const tdb_catalog_table *t, tdb_heap_partition **out, int *n, tl_error *err)
{
	if (tdb_heap_partitions(c, (uint32_t)t->table_id, t->tier_key_type, out, n, err) < 0) {
		tl_error_prefix(err, "%s.%s", t->schema_name, t->table_name);
		return -1;
	}
	/* DEFAULT sorts last: dropping it from the count drops it from the array. */
	while (*n > 0 && (*out)[*n - 1].is_default) {
		tdb_heap_partition *d = &(*out)[--(*n)];
		free(d->partition_id);
		free(d->schema);
		free(d->name);
		free(d->bound);
	}
	for (int i = 0; i < *n; i++) {
		if (!(*out)[i].has_lo)
			(*out)[i].lo = INT64_MIN;
		if (!(*out)[i].has_hi)
			(*out)[i].hi = INT64_MAX;
	}
	return 0;
}

/* max(tier_key) of one relation (FROM ONLY): 1 found, 0 empty, -1 error. */
static int relation_max_key(PGconn *c, const tdb_catalog_table *t, const char *schema, const char *name,
                            int64_t *out, tl_error *err)
{
	tl_buf col, sql;
	tl_buf_init(&col);
	tl_buf_init(&sql);
	tl_buf_append_str(&col, "max(");
	tdb_pg_quote_ident(t->tier_key_col, &col);
	tl_buf_append_str(&col, ")::text");
	tl_buf_append_str(&sql, "SELECT ");
	tdb_key_canonical_sql(t->tier_key_type, tdb_buf_cstr(&col), &sql);
	tl_buf_append_str(&sql, " FROM ONLY ");
	tdb_pg_quote_qualified(schema, name, &sql);
	PGresult *res = tdb_pg_query(c, "reading max(tier_key)", tdb_buf_cstr(&sql), 0, NULL, err);
	tl_buf_free(&col);
	tl_buf_free(&sql);
	if (res == NULL) {
		tl_error_prefix(err, "%s.%s", schema, name);
		return -1;
	}
	int found = !PQgetisnull(res, 0, 0);
	if (found)
		*out = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return found;
}

/*
 * Partition by partition from the newest down, stopping at the first that
 * holds rows: the maximum is there (ranges do not overlap), so a cycle
 * reads the few newest partitions instead of the whole table. The DEFAULT
 * partition holds rows of any range, so it is always read.
 */
int tdb_heap_max_key(PGconn *c, const tdb_catalog_table *t, bool *has, int64_t *out, tl_error *err)
{
	tdb_heap_partition *parts;
	int n;
	*has = false;
	if (tdb_heap_partitions(c, (uint32_t)t->table_id, t->tier_key_type, &parts, &n, err) < 0)
		return -1;
	int rc = 0;
	bool range_found = false;
	for (int i = n - 1; i >= 0 && rc == 0 && !range_found; i--) {
		int64_t v = 0;
		/* A sub-partitioned partition has no rows of its own: read it with its children. */
		int found = parts[i].is_partitioned
		                ? tl_error_set(err, TL_ERR_UNSUPPORTED, "partition %s of %s.%s is itself partitioned",
		                               parts[i].partition_id, t->schema_name, t->table_name)
		                : relation_max_key(c, t, parts[i].schema, parts[i].name, &v, err);
		if (found < 0)
			rc = -1;
		else if (found > 0) {
			if (!*has || v > *out)
				*out = v;
			*has = true;
			range_found = !parts[i].is_default;
		}
	}
	tdb_heap_partitions_free(parts, n);
	return rc;
}

int tdb_key_literal(PGconn *c, tdb_key_type type, int64_t v, tl_buf *out, tl_error *err)
{
	/*
	 * Whole seconds and the microsecond remainder are added separately:
	 * interval * number goes through float8, exact only for small factors.
	 */
	const char *sql = NULL;
	switch (type) {
	case TDB_KEY_BIGINT:
		sql = "SELECT quote_literal($1::bigint)";
		break;
	case TDB_KEY_TIMESTAMPTZ:
		sql = "SELECT quote_literal(timestamptz 'epoch' + ($1::bigint / 1000000) * interval '1 second'"
		      " + ($1::bigint % 1000000) * interval '1 microsecond')";
		break;
	case TDB_KEY_TIMESTAMP:
		sql = "SELECT quote_literal(timestamp 'epoch' + ($1::bigint / 1000000) * interval '1 second'"
		      " + ($1::bigint % 1000000) * interval '1 microsecond')";
		break;
	case TDB_KEY_DATE:
		sql = "SELECT quote_literal(date 'epoch' + $1::bigint::int)";
		break;
	}
	char value[24];
	snprintf(value, sizeof(value), "%lld", (long long)v);
	const char *params[] = {value};
	PGresult *res = tdb_pg_query(c, "rendering a partition bound", sql, 1, params, err);
	if (res == NULL)
		return -1;
	tl_buf_append_str(out, PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}
