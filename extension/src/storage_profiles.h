/*-------------------------------------------------------------------------
 *
 * storage_profiles.h
 *		Serving the storage profiles' warehouses in a backend.
 *
 * storage_profiles_init defines tierdb.credentials_file; every place that
 * opens a lake location calls storage_profiles_prepare first, so a table
 * whose profile keeps its lake on S3 is read with that profile's endpoint
 * and credentials.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_STORAGE_PROFILES_H
#define TIERDB_STORAGE_PROFILES_H

/* Defines tierdb.credentials_file; from _PG_init. */
extern void storage_profiles_init(void);

/*
 * Makes this backend's storages match tierdb.storage_profiles and the
 * credentials file. Cheap after the first call of a transaction.
 */
extern void storage_profiles_prepare(void);

/*
 * The credentials file's path (palloc'd): tierdb.credentials_file, made
 * absolute against the data directory. The embedded worker hands it to its
 * daemon as TIERDB_CREDENTIALS_FILE.
 */
extern char *storage_profiles_credentials_path(void);

#endif
