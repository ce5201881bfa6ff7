/*
 * premake.c: keeps empty heap partitions ahead of max(tier_key), so inserts
 * of new rows never find no partition to land in.
 *
 * The reference point is the partition holding max(tier_key); for an empty
 * table it is the oldest partition at or above the cut-line (so an empty
 * table gets its partitions once, not a new pair every cycle). New
 * partitions continue the newest one: the same width (whole calendar months
 * or years when the newest partition is one, since those vary in length),
 * and a name that follows the existing names when the newest partitions
 * share a pattern (events_20240101, events_2024_01_01, events_p3, ...),
 * else <table>_p<lower bound>.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon.h"
#include "pg.h"
#include "tiering.h"
#include "tierlake/calendar.h"

#define USEC_PER_DAY (86400LL * 1000000LL)

/* ------------------------------------------------------------ calendar steps */

/* A bound as a UTC date and time; false when the key is an integer. */
static bool bound_civil(tdb_key_type type, int64_t v, struct tm *tm)
{
	int64_t days, rem = 0;
	if (type == TDB_KEY_BIGINT)
		return false;
	if (type == TDB_KEY_DATE)
		days = v;
	else
		days = tl_floor_div(v, USEC_PER_DAY, &rem);
	int64_t year;
	int month, day;
	tl_civil_from_days(days, &year, &month, &day);
	memset(tm, 0, sizeof(*tm));
	tm->tm_year = (int)(year - 1900);
	tm->tm_mon = month - 1;
	tm->tm_mday = day;
	int64_t secs = rem / 1000000;
	tm->tm_hour = (int)(secs / 3600);
	tm->tm_min = (int)(secs / 60 % 60);
	tm->tm_sec = (int)(secs % 60);
	return true;
}

/* The canonical value of a UTC calendar date at midnight. */
static int64_t civil_bound(tdb_key_type type, int64_t year, int month)
{
	int64_t days = tl_days_from_civil(year, month, 1);
	return type == TDB_KEY_DATE ? days : days * USEC_PER_DAY;
}

/* Months between two bounds when both are UTC month starts, else 0. */
static int64_t whole_months(tdb_key_type type, int64_t lo, int64_t hi)
{
	struct tm a, b;
	if (!bound_civil(type, lo, &a) || !bound_civil(type, hi, &b))
		return 0;
	if (type != TDB_KEY_DATE && (lo % USEC_PER_DAY != 0 || hi % USEC_PER_DAY != 0))
		return 0;
	if (a.tm_mday != 1 || b.tm_mday != 1)
		return 0;
	return (int64_t)(b.tm_year - a.tm_year) * 12 + (b.tm_mon - a.tm_mon);
}

/* The bound `months` calendar months after the month start lo. */
static int64_t add_months(tdb_key_type type, int64_t lo, int64_t months)
{
	struct tm a;
	memset(&a, 0, sizeof(a));
	bound_civil(type, lo, &a);
	int64_t index = (int64_t)(a.tm_year + 1900) * 12 + a.tm_mon + months;
	return civil_bound(type, index / 12, (int)(index % 12) + 1);
}

/* How partitions continue: a fixed width, or a number of calendar months. */
typedef struct step {
	int64_t width;
	int64_t months;
} step;

static step newest_step(tdb_key_type type, const tdb_heap_partition *newest)
{
	step s = {newest->hi - newest->lo, whole_months(type, newest->lo, newest->hi)};
	return s;
}

/* The upper bound of the partition starting at lo; false on overflow. */
static bool step_from(tdb_key_type type, const step *s, int64_t lo, int64_t *hi)
{
	if (s->months > 0) {
		*hi = add_months(type, lo, s->months);
		return *hi > lo;
	}
	return !__builtin_add_overflow(lo, s->width, hi);
}

/* ------------------------------------------------------------ names */

/* Suffix forms a partition name may derive from its lower bound. */
static const char *const time_formats[] = {
	"%Y%m%d",        "%Y_%m_%d",       "%Y%m%d%H",      "%Y%m%d_%H", "%Y_%m_%d_%H",
	"%Y%m%d_%H%M",   "%Y_%m_%d_%H%M",  "%Y%m",          "%Y_%m",     "%Y",
};

/* The suffix `form` renders for a lower bound (form -1: the integer itself). */
static void render_suffix(tdb_key_type type, int form, int64_t lo, char *out, size_t size)
{
	struct tm tm;
	if (form < 0 || !bound_civil(type, lo, &tm))
		snprintf(out, size, "%lld", (long long)lo);
	else if (strftime(out, size, time_formats[form], &tm) == 0)
		out[0] = '\0';
}

static bool has_suffix(const char *name, const char *suffix, size_t *prefix_len)
{
	size_t n = strlen(name), s = strlen(suffix);
	if (s == 0 || s >= n || strcmp(name + n - s, suffix) != 0)
		return false;
	*prefix_len = n - s;
	return true;
}

/* How new partitions are named. */
typedef struct naming {
	char prefix[128];
	int form;            /* index into time_formats, -1 the integer bound, -2 a running number */
	long long next_number;
} naming;

/* Does `form` derive partition p's name with this prefix? */
static bool form_fits(tdb_key_type type, int form, const tdb_heap_partition *p, const char *prefix, size_t prefix_len)
{
	char suffix[64];
	render_suffix(type, form, p->lo, suffix, sizeof(suffix));
	return strlen(p->name) == prefix_len + strlen(suffix) && strncmp(p->name, prefix, prefix_len) == 0 &&
	       strcmp(p->name + prefix_len, suffix) == 0;
}

/* A trailing run of digits: its value and where it starts; false if none. */
static bool trailing_number(const char *name, long long *value, size_t *start)
{
	size_t n = strlen(name), i = n;
	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	if (i == n || n - i > 15 || i == 0)
		return false;
	*value = atoll(name + i);
	*start = i;
	return true;
}

/*
 * The naming the newest partitions share: a form of the lower bound that
 * renders the newest partition's name (and the one before it, when there
 * is one, with the same prefix), else a running number that the two
 * newest continue; else <table>_p<lower bound>.
 */
static naming find_naming(const tdb_catalog_table *t, const tdb_heap_partition *parts, int n)
{
	naming nm;
	memset(&nm, 0, sizeof(nm));
	const tdb_heap_partition *newest = &parts[n - 1];
	const tdb_heap_partition *before = n >= 2 ? &parts[n - 2] : NULL;
	int nforms = t->tier_key_type == TDB_KEY_BIGINT ? 0 : (int)(sizeof(time_formats) / sizeof(time_formats[0]));
	for (int form = -1; form < nforms; form++) {
		char suffix[64];
		size_t prefix_len;
		render_suffix(t->tier_key_type, form, newest->lo, suffix, sizeof(suffix));
		if (!has_suffix(newest->name, suffix, &prefix_len) || prefix_len >= sizeof(nm.prefix))
			continue;
		if (before != NULL && !form_fits(t->tier_key_type, form, before, newest->name, prefix_len))
			continue;
		memcpy(nm.prefix, newest->name, prefix_len);
		nm.form = form;
		return nm;
	}
	long long a, b;
	size_t sa, sb;
	if (before != NULL && trailing_number(newest->name, &a, &sa) && trailing_number(before->name, &b, &sb) &&
	    a == b + 1 && sa == sb && sa < sizeof(nm.prefix) && strncmp(newest->name, before->name, sa) == 0) {
		memcpy(nm.prefix, newest->name, sa);
		nm.form = -2;
		nm.next_number = a + 1;
		return nm;
	}
	snprintf(nm.prefix, sizeof(nm.prefix), "%.60s_p", t->table_name);
	nm.form = t->tier_key_type == TDB_KEY_BIGINT ? -1 : 0;
	return nm;
}

/* The next partition's name; advances a running number. */
static void next_name(const tdb_catalog_table *t, naming *nm, int64_t lo, char *out, size_t size)
{
	char suffix[64];
	if (nm->form == -2)
		snprintf(suffix, sizeof(suffix), "%lld", nm->next_number++);
	else
		render_suffix(t->tier_key_type, nm->form, lo, suffix, sizeof(suffix));
	/* The fallback form for temporal keys is the day; finer partitions need the time too. */
	if (nm->form == 0 && t->tier_key_type != TDB_KEY_DATE && lo % USEC_PER_DAY != 0) {
		struct tm tm;
		memset(&tm, 0, sizeof(tm));
		bound_civil(t->tier_key_type, lo, &tm);
		strftime(suffix, sizeof(suffix), "%Y%m%d_%H%M%S", &tm);
	}
	snprintf(out, size, "%s%s", nm->prefix, suffix);
}

/* ------------------------------------------------------------ creating */

/* Creates one partition [lo, hi) and records it as hot, in one transaction. */
static int create_partition(PGconn *c, const tdb_catalog_table *t, const char *name, int64_t lo, int64_t hi,
                            tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "CREATE TABLE ");
	tdb_pg_quote_qualified(t->schema_name, name, &sql);
	tl_buf_append_str(&sql, " PARTITION OF ");
	tdb_pg_quote_qualified(t->schema_name, t->table_name, &sql);
	tl_buf_append_str(&sql, " FOR VALUES FROM (");
	int rc = tdb_key_literal(c, t->tier_key_type, lo, &sql, err);
	tl_buf_append_str(&sql, ") TO (");
	if (rc == 0)
		rc = tdb_key_literal(c, t->tier_key_type, hi, &sql, err);
	tl_buf_append_str(&sql, ")");

	char id[24], slo[24], shi[24];
	snprintf(id, sizeof(id), "%lld", (long long)t->table_id);
	snprintf(slo, sizeof(slo), "%lld", (long long)lo);
	snprintf(shi, sizeof(shi), "%lld", (long long)hi);
	const char *params[] = {id, name, slo, shi, t->schema_name};
	if (rc == 0)
		rc = tdb_pg_exec(c, "starting premake", "BEGIN", 0, NULL, err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "creating a partition", tdb_buf_cstr(&sql), 0, NULL, err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "recording a new partition",
		                 "INSERT INTO tierdb.partitions (table_id, partition_id, tier_key_lo, tier_key_hi, state)"
		                 " VALUES ($1, quote_ident($5) || '.' || quote_ident($2), $3, $4, 'hot')"
		                 " ON CONFLICT (table_id, partition_id) DO UPDATE SET tier_key_lo = EXCLUDED.tier_key_lo,"
		                 " tier_key_hi = EXCLUDED.tier_key_hi, state = 'hot', updated_at = now()",
		                 5, params, err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "committing premake", "COMMIT", 0, NULL, err);
	if (rc < 0)
		tdb_abort_transaction(c);
	tl_buf_free(&sql);
	return rc;
}

/* The index of the reference partition (see the file comment), or -1 when there is none. */
static int reference_partition(const tdb_catalog_table *t, const tdb_heap_partition *parts, int n, bool has_max,
                               int64_t max_key)
{
	int ref = -1;
	for (int i = 0; i < n; i++) {
		if (has_max ? parts[i].lo <= max_key : parts[i].lo >= t->cutline_t) {
			ref = i;
			if (!has_max)
				break;
		}
	}
	return ref;
}

int tdb_premake(PGconn *c, const tdb_catalog_table *t, int64_t keep, tl_error *err)
{
	const char *label = tdb_table_label(t);
	tdb_heap_partition *parts;
	int n;
	bool has_max;
	int64_t max_key;
	if (keep == 0)
		return 0;
	if (tdb_range_partitions(c, t, &parts, &n, err) < 0)
		return -1;
	if (tdb_heap_max_key(c, t, &has_max, &max_key, err) < 0) {
		tdb_heap_partitions_free(parts, n);
		return -1;
	}
	int ref = reference_partition(t, parts, n, has_max, max_key);
	if (ref < 0) {
		tdb_heap_partitions_free(parts, n);
		if (n == 0)
			return tl_error_set(err, TL_ERR_INVALID,
			                    "%s has no range partitions to continue; create one with CREATE TABLE ... "
			                    "PARTITION OF %s FOR VALUES FROM (...) TO (...)",
			                    label, label);
		tdb_log(label, "premake: no partition at or above the cut-line to continue from");
		return 0;
	}
	int64_t ahead = 0;
	for (int i = ref + 1; i < n; i++)
		if (parts[i].lo >= parts[ref].hi)
			ahead++;

	const tdb_heap_partition *newest = &parts[n - 1];
	if (ahead < keep && (!newest->has_lo || !newest->has_hi)) {
		tl_error_set(err, TL_ERR_INVALID,
		             "%s: the newest partition %s is unbounded (%s), so it has no width to continue; "
		             "premake adds partitions after a bounded one",
		             label, newest->partition_id, newest->bound);
		tdb_heap_partitions_free(parts, n);
		return -1;
	}
	step s = newest_step(t->tier_key_type, newest);
	naming nm = find_naming(t, parts, n);
	int64_t lo = newest->hi;
	int status = 0;
	for (; ahead < keep; ahead++) {
		int64_t hi;
		if (!step_from(t->tier_key_type, &s, lo, &hi)) {
			status = tl_error_set(err, TL_ERR_INVALID,
			                      "%s: cannot add a partition after %s, which reaches the end of the key range",
			                      label, newest->name);
			break;
		}
		char name[256];
		next_name(t, &nm, lo, name, sizeof(name));
		if (strlen(name) > 63) {
			status = tl_error_set(err, TL_ERR_INVALID,
			                      "%s: the next partition's name %s is longer than Postgres allows (63 bytes)",
			                      label, name);
			break;
		}
		if (create_partition(c, t, name, lo, hi, err) < 0) {
			status = -1;
			break;
		}
		tdb_log(label, "premake: created partition %s [%lld, %lld)", name, (long long)lo, (long long)hi);
		lo = hi;
	}
	tdb_heap_partitions_free(parts, n);
	return status;
}
