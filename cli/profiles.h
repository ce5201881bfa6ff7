/*
 * profiles.h: storage profiles on the client side (SPEC §4
 * tierdb.storage_profiles, §8 `tierdb profile`): the catalog statements
 * that list, create, drop and choose the default profile, and serving
 * every profile's warehouse from this process.
 *
 * Serving: a profile whose warehouse is on S3 gets its own S3 storage
 * (lake/include/tierlake/profile.h), registered for the warehouse prefix,
 * so every lake location under it is read and written with the profile's
 * endpoint, region and credentials. Credentials are never in the catalog:
 * the row holds a reference REF, and this process finds the credentials in
 * its environment as TIERDB_CREDENTIALS_<REF>, or else in the file that
 * TIERDB_CREDENTIALS_FILE names (the server's credentials-file format,
 * tierlake/profile.h; owned by this user, mode 0600). Commands that touch lakes
 * (register, verify, the daemon) call tdb_profiles_serve after connecting
 * and before the first lake operation; the daemon calls it every cycle,
 * so a profile created or changed while it runs is picked up.
 */
#ifndef TIERDB_PROFILES_H
#define TIERDB_PROFILES_H

#include <stdbool.h>

#include <libpq-fe.h>

#include "tierlake/error.h"

/* What `tierdb profile create` asks for. */
typedef struct tdb_profile_spec {
	const char *name;
	const char *warehouse;       /* as given; local relative paths become absolute */
	const char *config;          /* "k=v;k=v" from --config, or NULL */
	const char *credential_ref;  /* --credentials, or NULL */
	bool make_default;
} tdb_profile_spec;

/*
 * Validates and inserts the profile in one transaction; with make_default
 * the previous default stops being one in that same transaction. Errors
 * say what is wrong (an unknown setting, a bad warehouse or reference, a
 * name in use).
 */
int tdb_profile_create(PGconn *c, const tdb_profile_spec *spec, tl_error *err);

/*
 * Deletes the profile. Refused while a registered table uses it (the
 * tables are named) and for the default profile (make another the default
 * first).
 */
int tdb_profile_drop(PGconn *c, const char *name, tl_error *err);

/* Makes `name` the one default profile, in one transaction. */
int tdb_profile_set_default(PGconn *c, const char *name, tl_error *err);

/*
 * The profiles as a result for printing: as rows (profile, default,
 * warehouse, settings, credentials, tables) or, with json, one row holding
 * a JSON array of objects. PQclear it; NULL with err.
 */
PGresult *tdb_profile_list(PGconn *c, bool json, tl_error *err);

/*
 * Registers a storage for every profile whose warehouse is on S3 (see
 * above), replacing those of earlier calls whose rows or credentials
 * changed. A profile that cannot be served (its credentials are missing
 * from the environment, say) still gets a storage that fails its tables'
 * operations with the reason, naming the profile and the reference; `warn`
 * (may be NULL) is called with that reason when it first appears. -1 with
 * err only when the catalog cannot be read.
 */
int tdb_profiles_serve(PGconn *c, void (*warn)(const char *message), tl_error *err);

#endif
