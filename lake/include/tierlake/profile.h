/*
 * profile.h: a storage profile (SPEC §4, tierdb.storage_profiles) as a
 * tl_storage: the rules for a profile's warehouse, its lake_config and its
 * credentials reference, and the storage a host registers for the
 * profile's warehouse prefix (tl_storage_register_prefix).
 *
 * The daemon, the `tierdb` command and the extension all serve profiles, so
 * the rules live here once; where the credentials come from is the host's
 * business (the daemon's environment, the server's credentials file), and
 * it hands in the text it found.
 *
 * Credentials text, the value of TIERDB_CREDENTIALS_<REF> and of a line of
 * the credentials file, is items separated by ';':
 *
 *     access_key_id=AKIA...;secret_access_key=...[;session_token=...]
 *
 * Whitespace around items is ignored; a value runs to the next ';' (S3 keys
 * and session tokens never contain one) and may contain '='.
 *
 * A credentials file holds lines "TIERDB_CREDENTIALS_<REF>=<credentials
 * text>" (an optional leading "export "), '#' comments and blank lines, so
 * the same file can be a systemd EnvironmentFile for the daemon.
 *
 * No message here ever contains a secret: errors name the profile, the
 * reference, where it was looked for and the offending key name.
 */
#ifndef TIERLAKE_PROFILE_H
#define TIERLAKE_PROFILE_H

#include <stdbool.h>

#include "tierlake/error.h"
#include "tierlake/storage.h"

/* The prefix of a credentials reference's environment variable. */
#define TL_CREDENTIALS_ENV_PREFIX "TIERDB_CREDENTIALS_"

/* What a profile row says, as text (the strings belong to the caller). */
typedef struct tl_profile {
	const char *name;            /* profile_name, for messages */
	const char *warehouse;       /* non-empty */
	const char *lake_config;     /* a JSON object (lake_config::text), NULL or "{}" for none */
	const char *credential_ref;  /* NULL: the environment's S3 credentials (TIERDB_S3_*, AWS_*) */
	const char *credentials;     /* the text the reference resolved to; NULL when it was not found */
	const char *credentials_source; /* where the reference was looked for, for messages ("the daemon's
	                                   environment", "the credentials file /x"); NULL: "the environment" */
	const char *credentials_error;  /* set when the host could not look the reference up at all (an
	                                   unreadable or unsafe credentials file): the storage fails with it */
	/* Passed on to the S3 client (tl_s3_config.interrupted): a host's cancel check. */
	bool (*interrupted)(void *arg);
	void *interrupt_arg;
} tl_profile;

/*
 * Whether `warehouse` is one a profile may name: an absolute local path, a
 * file: URI, or s3://bucket[/prefix] (s3a:// too). *is_s3 (may be NULL)
 * tells which. Anything else is TL_ERR_INVALID saying what is allowed.
 */
int tl_profile_check_warehouse(const char *warehouse, bool *is_s3, tl_error *err);

/* Whether ref is a credentials reference: [A-Za-z0-9_]+ (it becomes part of a variable name). */
bool tl_profile_ref_valid(const char *ref);

/*
 * Checks lake_config (a JSON object): the keys are "endpoint" (an http://
 * or https:// URL), "region" and "addressing" ("path" or "virtual"), all
 * strings. An unknown key or a bad value is TL_ERR_INVALID naming it.
 */
int tl_profile_check_config(const char *lake_config, tl_error *err);

/*
 * Checks credentials text (the format above): access_key_id and
 * secret_access_key present and non-empty, no unknown key. Messages name
 * `what` (for example "TIERDB_CREDENTIALS_R") and never a value.
 */
int tl_profile_check_credentials(const char *credentials, const char *what, tl_error *err);

/*
 * Finds TIERDB_CREDENTIALS_<ref> in the text of a credentials file: 1 and
 * *value (malloc'd) when found, 0 when not, -1 with err for a malformed
 * line (named by its number, never its content). `file` names the file in
 * messages.
 */
int tl_profile_credentials_lookup(const char *file_text, const char *ref, const char *file, char **value,
                                  tl_error *err);

/*
 * The storage for an S3 profile: an S3 storage configured by lake_config
 * (endpoint, region, addressing; unset ones from the environment, like the
 * built-in S3 storage) and by the credentials (or the environment's when
 * the profile has no reference). Every error it reports is prefixed with
 * "storage profile 'P' (credentials REF): ", so a refused credential names
 * the profile and the reference.
 *
 * A profile that cannot be served (its credentials were not found or are
 * malformed, its lake_config is bad) still gets a storage: one that fails
 * every operation with that error, so only its own tables fail, and only
 * when they are used. err (may be NULL) is set in that case too, so the
 * host can log it once. A local warehouse needs no storage: NULL, no error.
 */
tl_storage *tl_profile_storage_new(const tl_profile *profile, tl_error *err);
/* Frees a storage from tl_profile_storage_new; NULL is fine. */
void tl_profile_storage_free(tl_storage *storage);

#endif
