/*
 * maintenance_policy.h: a table's lake maintenance policy (SPEC §9,
 * tables.maintenance_policy; docs/maintenance.md lists every key).
 *
 * The catalog stores only the keys a user set, as JSON text values
 * ("target_file_bytes": "256MB"); everything else takes its default: the
 * daemon's TIERDB_MAINTENANCE_<KEY> variable when set, else the built-in
 * one, chosen like Java Iceberg's table-property defaults. Values are
 * parsed and checked when they are set (`tierdb policy --set`) and again
 * when the daemon reads them, so a bad value is named, never guessed at.
 */
#ifndef TIERDB_MAINTENANCE_POLICY_H
#define TIERDB_MAINTENANCE_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "tierlake/error.h"

typedef struct tdb_maintenance_policy {
	/* bin-pack and delete-debt compaction */
	bool compaction;
	int64_t target_file_bytes;     /* rewritten files roll over here (write.target-file-size-bytes) */
	int64_t small_file_bytes;      /* a data file below this is small */
	int64_t min_input_files;       /* bin-pack a partition once it has this many small files */
	double delete_ratio;           /* rewrite files once deletes cover this share of their rows */
	/* manifest rewrite */
	bool manifest_rewrite;
	int64_t max_manifests;         /* rewrite once the snapshot has more manifests than this */
	int64_t manifest_target_bytes;
	/* snapshot expiry */
	bool expiry;
	int64_t snapshot_max_age_ms;   /* snapshots older than this go (pins and min_snapshots permitting) */
	int64_t min_snapshots;         /* always keep this many of the newest */
	/* orphan sweep (opt-in) */
	bool orphan_sweep;
	int64_t orphan_min_age_ms;     /* never delete a file younger than this: a commit may be writing it */
	/* when, and what to warn about */
	int64_t interval_ms;           /* between unrequested maintenance runs of one table */
	int64_t warn_small_files;
	double warn_delete_ratio;
	int64_t warn_snapshots;
	/* bloom filters of the data files written (bloom_columns: tdb_maintenance_policy_bloom_columns) */
	double bloom_fpp;              /* false positive probability of every bloom filter, the key's too */
} tdb_maintenance_policy;

/* At most this many bloom_columns: each filter costs up to 1 MiB a row group. */
#define TDB_MAX_BLOOM_COLUMNS 32
/* bloom_fpp's range: a smaller one makes filters larger than a point lookup gains. */
#define TDB_BLOOM_FPP_MIN 0.0001
#define TDB_BLOOM_FPP_MAX 0.5

/*
 * The effective policy: `stored` (the maintenance_policy JSON object, may
 * be NULL) over the defaults (with_env: the daemon's TIERDB_MAINTENANCE_*
 * variables count). A bad stored value or variable is TL_ERR_INVALID
 * naming the key.
 */
int tdb_maintenance_policy_resolve(const json_t *stored, bool with_env, tdb_maintenance_policy *out, tl_error *err);

/*
 * Checks one `key=value` for `tierdb policy --set`; on success *key and
 * *value point into `assignment` copies (free() both). An unknown key or a
 * value its key does not take is TL_ERR_INVALID, listing the keys.
 */
int tdb_maintenance_policy_parse_assignment(const char *assignment, char **key, char **value, tl_error *err);

/*
 * The column names of the policy's bloom_columns (the table's own key, not
 * taken from the environment: names belong to one table), each once, in
 * the order given: *names is a malloc'd array of *n malloc'd names (NULL
 * and 0 for none; tdb_maintenance_policy_names_free). A malformed value is
 * TL_ERR_INVALID. Whether each names a column of a type bloom filters
 * serve is checked when it is set (cmd_policy.c).
 */
int tdb_maintenance_policy_bloom_columns(const json_t *stored, char ***names, int *n, tl_error *err);
void tdb_maintenance_policy_names_free(char **names, int n);

/* Whether `key` is a policy key. */
bool tdb_maintenance_policy_is_key(const char *key);

/*
 * The effective policy as a JSON object of every key with its value in
 * canonical text and whether it was set ("source": "table", "env" or
 * "default"), for printing and for tierdb.lake_stats.policy.
 */
json_t *tdb_maintenance_policy_describe(const json_t *stored, bool with_env);

#endif
