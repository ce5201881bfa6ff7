/*
 * load.c: Stream Load's labels, staging and routing (see load.h; the HTTP
 * side is load_http.c, the staging and the lake commit are ingest.c's).
 *
 * The order of the label's first steps matters. The lock on (table,
 * label) is taken *before* the label row is inserted: had the row come
 * first, a duplicate arriving between another request's INSERT and its
 * lock would find the row 'staged' and the lock free, take it for the
 * orphan of a crash and fail a live load. With the lock first, a 'staged'
 * row whose lock is free can only belong to a session that is gone
 * (advisory locks die with their session, and the daemon's sessions die
 * with it).
 *
 * Where rows go is decided once the body has ended and every row is
 * staged and typed (pg_temp.tierdb_ingest): rows at or above T are hot;
 * when the cold ones are few (TIERDB_LOAD_DELTA_ROWS) the whole load is
 * routed row by row with tierdb_upsert, the extension's own routed write,
 * in one transaction that also marks the label committed; otherwise the
 * cold rows go to the lake in one snapshot (tdb_ingest_commit) and the hot
 * rows are routed in its publishing transaction, through publish_hook.
 * Direct tables have no delta: their cold rows always take the lake path.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <jansson.h>

#include "catalog.h"
#include "fault.h"
#include "ingest.h"
#include "load.h"
#include "pg.h"

/* ------------------------------------------------------------ settings */

int tdb_load_config_from_env(tdb_load_config *cfg, tl_error *err)
{
	memset(cfg, 0, sizeof(*cfg));
	const char *token = getenv("TIERDB_LOAD_TOKEN");
	cfg->token = (token != NULL && *token != '\0') ? token : NULL;
	const char *address = getenv("TIERDB_LOAD_ADDRESS");
	cfg->address = (address != NULL && *address != '\0') ? address : "127.0.0.1";
	if (tdb_env_int("TIERDB_LOAD_PORT", TDB_LOAD_DEFAULT_PORT, 1, 65535, &cfg->port, err) < 0 ||
	    tdb_env_int("TIERDB_LOAD_THREADS", 4, 1, 1024, &cfg->threads, err) < 0 ||
	    tdb_env_int("TIERDB_LOAD_MAX_BYTES", INT64_C(1) << 30, 1, INT64_MAX, &cfg->max_bytes, err) < 0 ||
	    tdb_env_int("TIERDB_LOAD_DELTA_ROWS", 1000, 0, 100000000, &cfg->delta_rows, err) < 0)
		return -1;
	/* A short token is guessable by anyone who can reach the port. */
	if (cfg->token != NULL && strlen(cfg->token) < 16)
		return tl_error_set(err, TL_ERR_INVALID,
		                    "TIERDB_LOAD_TOKEN is %zu characters long; use at least 16 random ones "
		                    "(e.g. `openssl rand -hex 32`)",
		                    strlen(cfg->token));
	return 0;
}

/* ------------------------------------------------------------ responses */

void tdb_load_response_clear(tdb_load_response *r)
{
	free(r->body);
	free(r->label);
	free(r->table);
	memset(r, 0, sizeof(*r));
}

/* Sets the body to `body` (taking the reference) and the status. */
static void respond_json(tdb_load_response *r, unsigned status, json_t *body)
{
	free(r->body);
	r->status = status;
	r->body = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (r->body == NULL) {
		r->status = 500;
		r->body = strdup("{\"status\":\"failed\",\"error\":\"out of memory writing the answer\"}");
	}
}

static json_t *error_object(const char *label, const char *table, const char *message)
{
	json_t *o = json_object();
	json_object_set_new(o, "status", json_string("failed"));
	if (label != NULL)
		json_object_set_new(o, "label", json_string(label));
	if (table != NULL)
		json_object_set_new(o, "table", json_string(table));
	/* json_string refuses invalid UTF-8: a Postgres message quoting bad input could carry some. */
	json_t *text = json_string(message);
	json_object_set_new(o, "error", text != NULL ? text : json_stringn_nocheck(message, strlen(message)));
	return o;
}

void tdb_load_respond_error(tdb_load_response *r, unsigned status, const char *message)
{
	respond_json(r, status, error_object(r->label, r->table, message));
}

/* An error answer whose message is formatted (any length). */
static void __attribute__((format(printf, 5, 6)))
respond_errorf(tdb_load_response *r, unsigned status, const char *label, const char *table, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = NULL;
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	respond_json(r, status, error_object(label, table, text != NULL ? text : "out of memory"));
	free(text);
}

/* ------------------------------------------------------------ the load */

struct tdb_load {
	const tdb_load_config *cfg;
	PGconn *c;
	tdb_catalog_table t;
	char *table; /* schema.table */
	char *label;
	char table_id[24];
	tdb_ingest *in;
	tl_buf partial; /* the body's last line, until its newline comes */
	int64_t bytes;
	bool failed;     /* a failure is recorded below; the rest of the body is discarded */
	unsigned fail_status;
	char *fail_message;
	bool done; /* the label reached its final state (or its outcome cannot be known here) */
	/* filled by the commit */
	json_t *result;
};

/* A new random (version 4) UUID as text. */
static void new_uuid(char out[37])
{
	unsigned char b[16];
	size_t got = 0;
	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
		if (n > 0)
			got += (size_t)n;
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
	         b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* NULL when the label is one we keep, else why not (labels are printable text of modest length). */
static const char *label_problem(const char *label)
{
	size_t n = strlen(label);
	if (n == 0)
		return "X-TierDB-Label is empty: send a label (any text of 1 to 128 characters), or none to get a new one";
	if (n > 128)
		return "X-TierDB-Label is longer than 128 bytes: use a shorter label (a UUID, or a batch name)";
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)label[i] < 0x20 || label[i] == 0x7f)
			return "X-TierDB-Label holds a control character: use printable text";
	json_t *utf8 = json_string(label); /* NULL unless valid UTF-8, which the catalog's text needs */
	if (utf8 == NULL)
		return "X-TierDB-Label is not UTF-8 text: use printable UTF-8 (or ASCII)";
	json_decref(utf8);
	return NULL;
}

/* The SQLSTATE of a failed result, or "". */
static const char *sqlstate_of(const PGresult *res)
{
	const char *s = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	return s != NULL ? s : "";
}

/*
 * The HTTP status of a statement that failed while applying rows: the
 * row's fault (its values, a constraint, the retention line) is the
 * client's, 400; a busy or lost database is 503 (send again later under a
 * new label); anything else is ours, 500.
 */
static unsigned status_of_sqlstate(const char *state)
{
	if (strcmp(state, "42501") == 0)
		return 500; /* the daemon's role lacks a privilege on the table: the operator's to fix */
	if (strncmp(state, "22", 2) == 0 || strncmp(state, "23", 2) == 0 || strncmp(state, "42", 2) == 0 ||
	    strncmp(state, "P0", 2) == 0 || strncmp(state, "0A", 2) == 0)
		return 400;
	if (strncmp(state, "40", 2) == 0 || strncmp(state, "53", 2) == 0 || strncmp(state, "55", 2) == 0 ||
	    strncmp(state, "08", 2) == 0 || strncmp(state, "57", 2) == 0)
		return 503;
	return 500;
}

/* The HTTP status of an ingest error: bad input is the client's, a lost race or a lock wait is retryable. */
static unsigned status_of_error(const tl_error *err)
{
	switch (err->code) {
	case TL_ERR_INVALID:
	case TL_ERR_CORRUPT:
	case TL_ERR_NOT_FOUND: return 400;
	case TL_ERR_CONFLICT:
	case TL_ERR_INTERRUPTED: return 503;
	default: return 500;
	}
}

/* Runs sql with params in autocommit; the result (PQclear it) or NULL with err set and the SQLSTATE in *state. */
static PGresult *query(tdb_load *l, const char *what, const char *sql, int n, const char *const *params,
                       tl_error *err, char state[6])
{
	PGresult *res = PQexecParams(l->c, sql, n, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);
	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
		return res;
	if (state != NULL)
		snprintf(state, 6, "%s", sqlstate_of(res));
	const char *msg = res != NULL ? PQresultErrorMessage(res) : PQerrorMessage(l->c);
	size_t len = strlen(msg);
	while (len > 0 && msg[len - 1] == '\n')
		len--;
	tl_error_set(err, TL_ERR_IO, "%s: %.*s", what, (int)len, msg);
	PQclear(res);
	return NULL;
}

static void rollback(tdb_load *l)
{
	if (PQstatus(l->c) == CONNECTION_OK && PQtransactionStatus(l->c) != PQTRANS_IDLE)
		PQclear(PQexec(l->c, "ROLLBACK"));
}

/* ------------------------------------------------------------ labels */

/* The label's state ("" when it has no row) and result (a JSON object, or NULL). -1 on error. */
static int read_label(tdb_load *l, char state[16], json_t **result, tl_error *err)
{
	const char *params[] = {l->table_id, l->label};
	PGresult *res = query(l, "reading the Stream Load label",
	                      "SELECT state, result::text FROM tierdb.load_labels WHERE table_id = $1 AND label = $2", 2,
	                      params, err, NULL);
	if (res == NULL)
		return -1;
	state[0] = '\0';
	*result = NULL;
	if (PQntuples(res) == 1) {
		snprintf(state, 16, "%s", PQgetvalue(res, 0, 0));
		if (!PQgetisnull(res, 0, 1))
			*result = json_loads(PQgetvalue(res, 0, 1), 0, NULL);
	}
	PQclear(res);
	return 0;
}

/*
 * The answer a label that reached its final state gives again: its stored
 * result, with "replayed": true, under the status it was first given
 * ("http_status" in the result; a failure recorded by crash recovery,
 * which stores none, is 500).
 */
static void answer_stored(tdb_load *l, const char *state, json_t *result, tdb_load_response *resp)
{
	bool committed = strcmp(state, "committed") == 0;
	json_t *body = json_is_object(result) ? json_deep_copy(result) : json_object();
	json_t *status = json_object_get(body, "http_status");
	unsigned code = json_is_integer(status) ? (unsigned)json_integer_value(status) : committed ? 200 : 500;
	json_object_del(body, "http_status");
	json_object_set_new(body, "status", json_string(committed ? "committed" : "failed"));
	json_object_set_new(body, "label", json_string(l->label));
	json_object_set_new(body, "table", json_string(l->table));
	if (!committed && json_object_get(body, "error") == NULL) {
		json_t *why = json_is_object(result) ? json_deep_copy(result) : json_null();
		json_object_set_new(body, "error",
		                    json_string("this load was interrupted before it committed (the daemon stopped or lost "
		                                "its database), and nothing of it was applied: send the rows again under a "
		                                "new label"));
		json_object_set_new(body, "recovery", why);
	}
	json_object_set_new(body, "replayed", json_true());
	resp->replayed = true;
	respond_json(resp, code, body);
}

/*
 * Marks the label failed with this answer, if it is still 'staged' (never
 * over a 'committed'): then 1; 0 when it had already reached a final
 * state (resp is then that state's answer); -1 when the database could
 * not be told (the outcome is then unknown here; a retry of the label
 * settles it).
 */
static int mark_failed(tdb_load *l, unsigned status, json_t *body, tdb_load_response *resp)
{
	rollback(l);
	json_t *stored = json_deep_copy(body);
	json_object_set_new(stored, "http_status", json_integer(status));
	char *text = json_dumps(stored, JSON_COMPACT);
	json_decref(stored);
	const char *params[] = {l->table_id, l->label, text};
	tl_error err;
	tl_error_clear(&err);
	PGresult *res = text == NULL ? NULL
	                             : query(l, "recording the Stream Load label's failure",
	                                     "UPDATE tierdb.load_labels SET state = 'failed', result = $3::jsonb,"
	                                     " updated_at = now() WHERE table_id = $1 AND label = $2 AND state = 'staged'",
	                                     3, params, &err, NULL);
	free(text);
	if (res == NULL) {
		tdb_log(l->table, "Stream Load label %s: %s", l->label, err.message);
		return -1;
	}
	bool updated = strcmp(PQcmdTuples(res), "1") == 0;
	PQclear(res);
	if (updated)
		return 1;
	char state[16];
	json_t *result = NULL;
	if (read_label(l, state, &result, &err) < 0 || (strcmp(state, "committed") != 0 && strcmp(state, "failed") != 0)) {
		json_decref(result);
		return -1;
	}
	answer_stored(l, state, result, resp);
	json_decref(result);
	return 0;
}

/*
 * Fails the load with `status` and `message`: the label becomes 'failed'
 * (nothing of the load was applied) and resp says so. If the label cannot
 * be marked, the answer says the outcome is unknown and how to learn it.
 */
static void fail(tdb_load *l, unsigned status, const char *message, tdb_load_response *resp)
{
	json_t *body = error_object(l->label, l->table, message);
	int rc = mark_failed(l, status, body, resp);
	l->done = true;
	if (rc > 0) {
		respond_json(resp, status, body);
		return;
	}
	json_decref(body);
	if (rc < 0) {
		char text[TL_ERROR_MESSAGE_MAX + 400];
		snprintf(text, sizeof(text),
		         "%s; then the label could not be marked failed (the database connection broke), so this "
		         "daemon cannot tell whether the load applied: send the same request with the same label "
		         "again to learn its outcome",
		         message);
		respond_json(resp, 503, error_object(l->label, l->table, text));
	}
}

/*
 * A 'staged' label whose lock was free: the request that staged it is gone
 * (its session, and so its lock, died with a daemon or a connection).
 * Interrupted lake loads of the table are settled (tdb_recover_ingests
 * rolls a load back and fails its label); a label still 'staged' after
 * that never reached the lake, and its trickle transaction, if any, died
 * uncommitted: it is failed here.
 */
static void settle_orphan(tdb_load *l, tdb_load_response *resp)
{
	tl_error err;
	tl_error_clear(&err);
	tdb_log(l->table, "Stream Load label %s was left staged by a load that is gone; settling it", l->label);
	if (tdb_recover_ingests(l->c, &l->t, &err) < 0) {
		rollback(l);
		char text[TL_ERROR_MESSAGE_MAX + 200];
		snprintf(text, sizeof(text), "settling an interrupted load of this label failed: %s; send it again later",
		         err.message);
		respond_json(resp, 503, error_object(l->label, l->table, text));
		l->done = true;
		return;
	}
	char state[16];
	json_t *result = NULL;
	if (read_label(l, state, &result, &err) < 0) {
		respond_json(resp, 503, error_object(l->label, l->table, err.message));
	} else if (strcmp(state, "staged") == 0) {
		json_t *body = error_object(l->label, l->table,
		                            "this load was interrupted before it committed (the daemon stopped or lost its "
		                            "database), and nothing of it was applied: send the rows again under a new label");
		if (mark_failed(l, 500, body, resp) > 0) {
			json_object_set_new(body, "replayed", json_true());
			resp->replayed = true;
			respond_json(resp, 500, body);
		} else {
			json_decref(body);
			if (resp->body == NULL)
				respond_json(resp, 503, error_object(l->label, l->table, "the label could not be settled; send it again later"));
		}
	} else {
		answer_stored(l, state, result, resp);
	}
	json_decref(result);
	l->done = true;
}

/*
 * Takes the label: 1 when this request owns it and its row is 'staged'
 * (go on with the body), 0 when resp holds the answer already.
 */
static int take_label(tdb_load *l, tdb_load_response *resp)
{
	tl_error err;
	tl_error_clear(&err);
	const char *params[] = {l->table_id, l->label};
	PGresult *res = query(l, "locking the Stream Load label",
	                      "SELECT pg_try_advisory_lock(hashtextextended('tierdb_load_' || $1 || ':' || $2, 0))", 2,
	                      params, &err, NULL);
	if (res == NULL)
		goto failed;
	bool locked = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	char state[16];
	json_t *result = NULL;
	if (!locked) {
		/* Someone holds the label: a concurrent duplicate, or a replay of a settled label being answered. */
		if (read_label(l, state, &result, &err) < 0)
			goto failed;
		if (strcmp(state, "committed") == 0 || strcmp(state, "failed") == 0)
			answer_stored(l, state, result, resp);
		else
			respond_json(resp, 409,
			             error_object(l->label, l->table,
			                          "a load with this label is in progress: wait for it to end, then send this "
			                          "request again to get its result"));
		json_decref(result);
		l->done = true;
		return 0;
	}
	res = query(l, "recording the Stream Load label",
	            "INSERT INTO tierdb.load_labels (table_id, label) VALUES ($1, $2)"
	            " ON CONFLICT (table_id, label) DO NOTHING RETURNING 1",
	            2, params, &err, NULL);
	if (res == NULL)
		goto failed;
	bool inserted = PQntuples(res) == 1;
	PQclear(res);
	if (inserted)
		return 1;
	if (read_label(l, state, &result, &err) < 0)
		goto failed;
	if (strcmp(state, "staged") == 0)
		settle_orphan(l, resp);
	else
		answer_stored(l, state, result, resp);
	json_decref(result);
	l->done = true;
	return 0;
failed:
	respond_json(resp, 503, error_object(l->label, l->table, err.message));
	l->done = true;
	return 0;
}

/* ------------------------------------------------------------ start */

static void load_free_fields(tdb_load *l)
{
	if (l->in != NULL)
		tdb_ingest_free(l->in);
	if (l->c != NULL)
		PQfinish(l->c);
	tdb_catalog_table_free(&l->t);
	free(l->table);
	free(l->label);
	free(l->fail_message);
	tl_buf_free(&l->partial);
	json_decref(l->result);
	free(l);
}

/* Resolves the table; 1 when it takes Stream Load, 0 with resp filled otherwise. */
static int resolve_table(tdb_load *l, const char *table_text, tdb_load_response *resp)
{
	tl_error err;
	tl_error_clear(&err);
	tdb_table_name name;
	if (tdb_table_name_parse(table_text, &name, &err) < 0) {
		char text[TL_ERROR_MESSAGE_MAX + 100];
		snprintf(text, sizeof(text), "the URL names no table: %s (POST /api/load/<schema>.<table>)", err.message);
		respond_json(resp, 404, error_object(l->label, NULL, text));
		return 0;
	}
	int found = tdb_catalog_load_table(l->c, name.schema, name.table, &l->t, &err);
	char label[512];
	snprintf(label, sizeof(label), "%s.%s", name.schema, name.table);
	tdb_table_name_free(&name);
	if (found < 0) {
		respond_json(resp, 503, error_object(l->label, label, err.message));
		return 0;
	}
	if (found == 0) {
		respond_errorf(resp, 404, l->label, label,
		               "table %s is not registered with TierDB: register it (tierdb register --table %s ...) or "
		               "check the name in the URL",
		               label, label);
		return 0;
	}
	l->table = strdup(label);
	resp->table = strdup(label);
	snprintf(l->table_id, sizeof(l->table_id), "%" PRId64, l->t.table_id);
	if (strcmp(l->t.mode, "mirrored") == 0 || l->t.keep_heap) {
		respond_errorf(resp, 400, l->label, label,
		               "table %s is %s: Stream Load serves tiered tables (without --keep-heap) and direct tables; "
		               "write this table's rows with plain INSERT or COPY, which %s",
		               label, l->t.keep_heap ? "tiered with --keep-heap" : "mirrored",
		               l->t.keep_heap ? "keep every row in the heap" : "the mirror carries into the lake");
		return 0;
	}
	return 1;
}

tdb_load *tdb_load_start(const tdb_load_config *cfg, const char *table_text, const char *label,
                         tdb_load_response *resp)
{
	memset(resp, 0, sizeof(*resp));
	tdb_load *l = calloc(1, sizeof(*l));
	if (l == NULL) {
		tdb_load_respond_error(resp, 500, "out of memory starting the load");
		return NULL;
	}
	l->cfg = cfg;
	tl_buf_init(&l->partial);
	char uuid[37];
	if (label == NULL) {
		new_uuid(uuid);
		label = uuid;
	} else if (label_problem(label) != NULL) {
		tdb_load_respond_error(resp, 400, label_problem(label));
		load_free_fields(l);
		return NULL;
	}
	l->label = strdup(label);
	resp->label = strdup(label);

	tl_error err;
	tl_error_clear(&err);
	l->c = tdb_pg_connect(cfg->dsn, &err);
	if (l->c == NULL || (cfg->daemon != NULL && tdb_daemon_session_setup(l->c, cfg->daemon, &err) < 0)) {
		tdb_log(NULL, "Stream Load: %s", err.message);
		char text[TL_ERROR_MESSAGE_MAX + 100];
		snprintf(text, sizeof(text), "the daemon cannot reach its database: %s; send the load again later",
		         err.message);
		respond_json(resp, 503, error_object(l->label, NULL, text));
		load_free_fields(l);
		return NULL;
	}
	if (resolve_table(l, table_text, resp) == 0 || take_label(l, resp) == 0) {
		load_free_fields(l);
		return NULL;
	}
	tdb_ingest_options opts = {.op_kind = "load", .allow_hot = true, .label = l->label};
	l->in = tdb_ingest_begin(l->c, &l->t, &opts, &err);
	if (l->in == NULL || tdb_ingest_begin_jsonl(l->in, "request body", &err) < 0) {
		rollback(l);
		fail(l, status_of_error(&err), err.message, resp);
		load_free_fields(l);
		return NULL;
	}
	return l;
}

/* ------------------------------------------------------------ the body */

static void record_failure(tdb_load *l, unsigned status, const char *message)
{
	if (l->failed)
		return;
	l->failed = true;
	l->fail_status = status;
	l->fail_message = strdup(message);
	tl_buf_free(&l->partial);
	tl_buf_init(&l->partial);
}

static void add_line(tdb_load *l, const char *line, size_t len)
{
	if (len > 0 && line[len - 1] == '\r')
		len--;
	tl_error err;
	tl_error_clear(&err);
	if (tdb_ingest_add_jsonl_line(l->in, line, len, &err) < 0)
		record_failure(l, status_of_error(&err), err.message);
}

void tdb_load_feed(tdb_load *l, const char *data, size_t len)
{
	l->bytes += (int64_t)len;
	while (len > 0 && !l->failed) {
		const char *nl = memchr(data, '\n', len);
		if (nl == NULL) {
			/* only a partial line is kept: the staging table holds the rest */
			tl_buf_append(&l->partial, data, len);
			if (tl_buf_failed(&l->partial))
				record_failure(l, 500, "out of memory holding a line of the body");
			return;
		}
		size_t n = (size_t)(nl - data);
		if (l->partial.len > 0) {
			tl_buf_append(&l->partial, data, n);
			if (tl_buf_failed(&l->partial)) {
				record_failure(l, 500, "out of memory holding a line of the body");
				return;
			}
			add_line(l, (const char *)l->partial.data, l->partial.len);
			tl_buf_reset(&l->partial);
		} else {
			add_line(l, data, n);
		}
		data += n + 1;
		len -= n + 1;
	}
}

int64_t tdb_load_bytes(const tdb_load *l)
{
	return l->bytes;
}

void tdb_load_reject(tdb_load *l, unsigned status, const char *message)
{
	record_failure(l, status, message);
}

/* ------------------------------------------------------------ routing */

/* Appends "s"."col" for each pk column, separated by commas. */
static void append_pk(const tdb_catalog_table *t, const char *alias, tl_buf *sql)
{
	for (int i = 0; i < t->npk; i++) {
		tl_buf_printf(sql, "%s%s.", i > 0 ? ", " : "", alias);
		tdb_pg_quote_ident(t->pk_cols[i], sql);
	}
}

/* Appends the staged row's canonical tier key. */
static void append_tier_key(const tdb_catalog_table *t, tl_buf *sql)
{
	tl_buf col;
	tl_buf_init(&col);
	tl_buf_append_str(&col, "s.");
	tdb_pg_quote_ident(t->tier_key_col, &col);
	tl_buf_append_byte(&col, '\0');
	tdb_key_canonical_sql(t->tier_key_type, (const char *)col.data, sql);
	tl_buf_free(&col);
}

static const char *cstr(tl_buf *b)
{
	tl_buf_append_byte(b, '\0');
	b->len--;
	return (const char *)b->data;
}

/*
 * A key given twice in this load: -1 with err naming both lines, 0 when
 * every key is once. Checked before anything is routed, so a load with a
 * repeat applies nothing, whichever path it takes.
 */
static int check_repeated_keys(tdb_load *l, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "SELECT min(s.tierdb_row), (array_agg(s.tierdb_row ORDER BY s.tierdb_row))[2], row(");
	append_pk(&l->t, "s", &sql);
	tl_buf_append_str(&sql, ")::text FROM pg_temp.tierdb_ingest s GROUP BY ");
	append_pk(&l->t, "s", &sql);
	tl_buf_append_str(&sql, " HAVING count(*) > 1 ORDER BY 2 LIMIT 1");
	PGresult *res = query(l, "checking the load for repeated keys", cstr(&sql), 0, NULL, err, NULL);
	tl_buf_free(&sql);
	if (res == NULL)
		return -1;
	int rc = 0;
	if (PQntuples(res) == 1) {
		tl_error_clear(err);
		rc = tl_error_set(err, TL_ERR_INVALID,
		                  "request body: row %s: the key %s was already given on row %s; one load may give each key "
		                  "once: keep one of the two rows",
		                  PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 0));
	}
	PQclear(res);
	return rc;
}

/*
 * Counts the staged rows below T (*cold) and all of them (*rows), T as the
 * catalog says now. Routing re-reads T (tierdb_upsert per row, ingest.c
 * under the lake lock), so a T that moves meanwhile changes only which
 * path a borderline load takes, never where a row goes.
 */
static int count_rows(tdb_load *l, int64_t *cold, int64_t *rows, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "SELECT count(*) FILTER (WHERE ");
	append_tier_key(&l->t, &sql);
	tl_buf_append_str(&sql, " < (SELECT tier_key_hi FROM tierdb.cutline WHERE table_id = $1)), count(*)"
	                        " FROM pg_temp.tierdb_ingest s");
	const char *params[] = {l->table_id};
	PGresult *res = query(l, "counting the load's cold rows", cstr(&sql), 1, params, err, NULL);
	tl_buf_free(&sql);
	if (res == NULL)
		return -1;
	*cold = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	*rows = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
	PQclear(res);
	return 0;
}

/* Sets the label 'committed' with `result` inside the open transaction; -1 unless it was ours and 'staged'. */
static int mark_committed(tdb_load *l, json_t *result, tl_error *err)
{
	json_t *stored = json_deep_copy(result);
	json_object_set_new(stored, "http_status", json_integer(200));
	char *text = json_dumps(stored, JSON_COMPACT);
	json_decref(stored);
	if (text == NULL)
		return tl_error_set(err, TL_ERR_NOMEM, "out of memory recording the load's result");
	const char *params[] = {l->table_id, l->label, text};
	PGresult *res = query(l, "marking the Stream Load label committed",
	                      "UPDATE tierdb.load_labels SET state = 'committed', result = $3::jsonb, updated_at = now()"
	                      " WHERE table_id = $1 AND label = $2 AND state = 'staged'",
	                      3, params, err, NULL);
	free(text);
	if (res == NULL)
		return -1;
	bool updated = strcmp(PQcmdTuples(res), "1") == 0;
	PQclear(res);
	if (!updated)
		return tl_error_set(err, TL_ERR_CONFLICT,
		                    "the label is no longer staged (another process settled it): nothing was applied");
	return 0;
}

static json_t *result_object(tdb_load *l, const tdb_ingest_result *res)
{
	json_t *o = json_object();
	json_object_set_new(o, "status", json_string("committed"));
	json_object_set_new(o, "label", json_string(l->label));
	json_object_set_new(o, "table", json_string(l->table));
	json_object_set_new(o, "rows", json_integer(res->heap_rows + res->delta_rows + res->rows));
	json_object_set_new(o, "heap_rows", json_integer(res->heap_rows));
	json_object_set_new(o, "delta_rows", json_integer(res->delta_rows));
	json_object_set_new(o, "lake_rows", json_integer(res->rows));
	json_object_set_new(o, "replaced", json_integer(res->replaced));
	json_object_set_new(o, "snapshot_id", res->committed ? json_integer(res->snapshot_id) : json_null());
	json_object_set_new(o, "op_id", res->op_id[0] != '\0' ? json_string(res->op_id) : json_null());
	return o;
}

/* What the publish hook needs and leaves. */
typedef struct publish_state {
	tdb_load *l;
	int64_t rows;
	bool trickle;
	json_t *result;
} publish_state;

/*
 * Runs last in the transaction that applies the rows (ingest.h): after
 * the hot rows went to the heap, the trickle to the delta and, for a
 * volume, with the lake snapshot being published: the label is marked
 * committed there, so the rows and the label commit together or not at
 * all.
 */
static int publish_hook(void *arg, PGconn *c, const tdb_ingest_result *res, tl_error *err)
{
	publish_state *p = arg;
	(void)c; /* the load's own connection, which ingest.c was given */
	if (res->heap_rows + res->delta_rows + res->rows != p->rows)
		return tl_error_set(err, TL_ERR_CONFLICT,
		                    "%" PRId64 " of the load's %" PRId64 " rows were applied (the cut-line moved?): nothing "
		                    "was applied; send the load again",
		                    res->heap_rows + res->delta_rows + res->rows, p->rows);
	json_t *result = result_object(p->l, res);
	if (mark_committed(p->l, result, err) < 0) {
		json_decref(result);
		return -1;
	}
	p->result = result;
	if (p->trickle)
		tdb_fault("load-trickle-before-commit");
	return 0;
}

/*
 * Applies the staged rows: a trickle (tdb_ingest_route: the cold rows into
 * the delta) or a volume (tdb_ingest_commit: the cold rows into the lake in
 * one snapshot); either way the hot rows go to the heap and the label is
 * marked committed in the same transaction.
 */
static void apply(tdb_load *l, int64_t rows, bool trickle, tdb_load_response *resp)
{
	tl_error err;
	tl_error_clear(&err);
	publish_state p = {.l = l, .rows = rows, .trickle = trickle};
	tdb_ingest_result res;
	memset(&res, 0, sizeof(res));
	int rc = trickle ? tdb_ingest_route(l->in, publish_hook, &p, &res, &err)
	                 : tdb_ingest_commit(l->in, publish_hook, &p, &res, &err);
	if (rc < 0) {
		json_decref(p.result);
		if (p.result != NULL && PQstatus(l->c) != CONNECTION_OK) {
			/* The COMMIT's outcome is unknown on a broken connection: never claim either. */
			l->done = true;
			respond_json(resp, 503,
			             error_object(l->label, l->table,
			                          "the database connection broke while the load committed, so this daemon "
			                          "cannot tell whether it applied: send the same request with the same label "
			                          "again to learn its outcome"));
			return;
		}
		/* A statement's failure says by its SQLSTATE whose fault it was (a row's values: the client's). */
		const char *state = res.sqlstate;
		unsigned status = err.code == TL_ERR_IO && state[0] != '\0' ? status_of_sqlstate(state) : status_of_error(&err);
		if (strcmp(state, "53200") == 0) {
			/* tierdb_upsert holds a transaction lock per key it routes */
			status = 413;
			tl_error_prefix(&err, "the load routes its trickle one row at a time and holds a lock per row until it "
			                      "commits, more than the server's lock table holds now (max_locks_per_transaction "
			                      "x max_connections): send fewer cold rows per load, lower TIERDB_LOAD_DELTA_ROWS, "
			                      "or raise max_locks_per_transaction; ");
		}
		fail(l, status, err.message, resp);
		return;
	}
	l->done = true;
	if (trickle)
		tdb_fault("load-trickle-after-commit");
	respond_json(resp, 200, p.result);
}

void tdb_load_finish(tdb_load *l, tdb_load_response *resp)
{
	if (l->failed) {
		rollback(l);
		fail(l, l->fail_status, l->fail_message, resp);
		return;
	}
	if (l->partial.len > 0) { /* a last line without its newline */
		add_line(l, (const char *)l->partial.data, l->partial.len);
		tl_buf_reset(&l->partial);
	}
	tl_error err;
	tl_error_clear(&err);
	int64_t cold = 0, rows = 0;
	if (l->failed || tdb_ingest_end_jsonl(l->in, &err) < 0 || check_repeated_keys(l, &err) < 0 ||
	    count_rows(l, &cold, &rows, &err) < 0) {
		if (!l->failed)
			record_failure(l, status_of_error(&err), err.message);
		rollback(l);
		fail(l, l->fail_status, l->fail_message, resp);
		return;
	}
	if (rows == 0) {
		fail(l, 400, "the body holds no rows: send one JSON object per line", resp);
		return;
	}
	bool trickle = strcmp(l->t.mode, "direct") != 0 && cold <= l->cfg->delta_rows;
	apply(l, rows, trickle, resp);
	tdb_log(l->table, "Stream Load label %s: %u, %" PRId64 " rows (%" PRId64 " below T, %s)", l->label, resp->status,
	        rows, cold, trickle ? "routed" : "into the lake");
}

void tdb_load_free(tdb_load *l, const char *why)
{
	if (l == NULL)
		return;
	if (!l->done && l->c != NULL) {
		tdb_load_response ignored;
		memset(&ignored, 0, sizeof(ignored));
		fail(l, 400, why != NULL ? why : "the request ended before its body did: nothing was applied", &ignored);
		tdb_load_response_clear(&ignored);
	}
	load_free_fields(l);
}
