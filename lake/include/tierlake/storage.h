/*
 * storage.h: the one boundary between the lake library and where a lake's
 * files live.
 *
 * Every open, create, list, delete and mkdir on a lake location goes
 * through a tl_storage, a table of functions plus its state (in the manner
 * of SQLite's sqlite3_vfs and iceberg-cpp's FileIO). The library picks the
 * implementation by the location's scheme: a plain path or file:// is the
 * local file system (src/io/local.c); s3:// (and s3a://) is S3 (src/io/
 * s3_storage.c), configured from the environment unless the host registers
 * its own. A host (the extension, a test) can register an implementation
 * for a scheme, for example one that injects I/O errors, or for every
 * location under a prefix, such as a warehouse with its own credentials.
 *
 * Locations are passed whole (a URI or a plain path, as table metadata
 * records them), so an implementation can serve several buckets or roots.
 * Object stores have no directories: make_dirs is a no-op there and
 * listing a "directory" lists the keys under "<location>/".
 */
#ifndef TIERLAKE_STORAGE_H
#define TIERLAKE_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tierlake/error.h"
#include "tierlake/io.h"

/* One name under a listed location. */
typedef struct tl_storage_entry {
	char *name;     /* relative to the listed location, '/'-separated when recursive */
	uint64_t size;  /* bytes; 0 for a directory */
	bool is_dir;    /* a subdirectory (a common prefix on object stores); never when recursive */
	int64_t mtime_ms;   /* last modified, ms since the epoch; 0 when the storage does not tell */
} tl_storage_entry;

typedef struct tl_storage_list {
	tl_storage_entry *entries;
	size_t count;
} tl_storage_list;

/* How tl_storage.list walks. */
enum {
	TL_STORAGE_LIST_RECURSIVE = 1   /* every file below, no directory entries */
};

/* How tl_storage.create treats an existing object. */
enum {
	TL_STORAGE_CREATE_REPLACE = 0,  /* truncate or overwrite it */
	TL_STORAGE_CREATE_EXCLUSIVE = 1 /* TL_ERR_CONFLICT if it exists (best effort on object stores:
	                                   names written this way are unique anyway) */
};

typedef struct tl_storage tl_storage;

/*
 * What an implementation provides. Every function returns 0 (or non-NULL)
 * on success and -1 (or NULL) with err set otherwise; a missing object is
 * TL_ERR_NOT_FOUND, an existing one where none may be TL_ERR_CONFLICT,
 * anything the medium refuses TL_ERR_IO. Messages name the location.
 */
struct tl_storage {
	const char *name;   /* "local", "s3", ...: for messages */
	void *state;        /* the implementation's own */

	/* Opens an object for ranged reads; in->size is its size. */
	tl_input *(*open_read)(tl_storage *s, const char *location, tl_error *err);

	/*
	 * Creates an object for streamed writes (multipart on object stores).
	 * Nothing is visible under the name before finish() succeeds on object
	 * stores; locally the file exists from the start, so callers name new
	 * files uniquely and delete what they abandon.
	 */
	tl_output *(*create)(tl_storage *s, const char *location, int mode, tl_error *err);

	/*
	 * The commit primitive: makes `location` hold exactly data[0..len) if
	 * and only if nothing exists there yet, atomically: readers see either
	 * no object or the whole, durable content, and of two racing callers
	 * exactly one succeeds; the other gets TL_ERR_CONFLICT. (Locally: a
	 * temporary file, fsync, link() to the name, directory fsync. On S3: a
	 * PUT with If-None-Match: *.)
	 */
	int (*create_if_absent)(tl_storage *s, const char *location, const void *data, size_t len, tl_error *err);

	/*
	 * Makes `location` hold data[0..len), replacing what was there, so that
	 * readers see the old or the new content, never a mix (locally: a
	 * temporary file renamed over it). For small pointers such as
	 * version-hint.text.
	 */
	int (*replace)(tl_storage *s, const char *location, const void *data, size_t len, tl_error *err);

	/*
	 * Lists what is under the directory `location` (flags:
	 * TL_STORAGE_LIST_RECURSIVE). A directory that does not exist is
	 * TL_ERR_NOT_FOUND locally; object stores list an empty prefix as
	 * empty. Order is unspecified. Free with tl_storage_list_free.
	 */
	int (*list)(tl_storage *s, const char *location, int flags, tl_storage_list *out, tl_error *err);

	/*
	 * Deletes one object; a missing one is TL_ERR_NOT_FOUND locally and
	 * success on object stores, which do not tell (callers ignore both).
	 */
	int (*remove)(tl_storage *s, const char *location, tl_error *err);

	/* Deletes `location` and everything under it; nothing there is success. */
	int (*remove_all)(tl_storage *s, const char *location, tl_error *err);

	/*
	 * Whether location is an object (*is_dir false, *size its bytes) or a
	 * directory (a non-empty prefix on object stores); TL_ERR_NOT_FOUND when
	 * neither. size and is_dir may be NULL.
	 */
	int (*stat)(tl_storage *s, const char *location, uint64_t *size, bool *is_dir, tl_error *err);

	/* Makes the directory and its parents exist (mkdir -p); a no-op on object stores. */
	int (*make_dirs)(tl_storage *s, const char *location, tl_error *err);

	/*
	 * The location in a form other processes and engines resolve the same
	 * way, for recording in metadata: locally the absolute path with
	 * symbolic links resolved (the directory must exist); object stores
	 * return it unchanged. A new string (free() it).
	 */
	char *(*canonical)(tl_storage *s, const char *location, tl_error *err);
};

/*
 * The storage serving `location`: the one registered for the longest
 * prefix it lies under, else the one registered for its scheme, else the
 * built-in local storage for plain paths and file:, or the built-in S3
 * storage for s3: and s3a: (made from the environment on first use; a bad
 * environment is TL_ERR_INVALID naming the variable). Another scheme is
 * TL_ERR_UNSUPPORTED. The result is not owned by the caller.
 */
tl_storage *tl_storage_for(const char *location, tl_error *err);

/*
 * Serves `scheme` ("file" also covers plain paths; "s3", ...) with
 * `storage` from now on, or restores the built-in choice when storage is
 * NULL; returns what served it before (NULL for the built-in). Not
 * thread-safe: register at startup (or in a test, around the calls).
 */
tl_storage *tl_storage_register(const char *scheme, tl_storage *storage);

/*
 * Serves every location under `prefix` (a whole path component: "s3://b/wh"
 * covers "s3://b/wh/t/x" but not "s3://b/wh2") with `storage`, or stops when
 * storage is NULL; returns what served that prefix before. Not thread-safe,
 * like tl_storage_register; the storage must outlive its registration.
 */
tl_storage *tl_storage_register_prefix(const char *prefix, tl_storage *storage);

/* The built-in local file system storage (plain paths and file: URIs). */
tl_storage *tl_storage_local(void);

void tl_storage_list_free(tl_storage_list *list);

/* Shorthands: tl_storage_for(location), then the operation. */
tl_input *tl_storage_open_read(const char *location, tl_error *err);
tl_output *tl_storage_create(const char *location, int mode, tl_error *err);
int tl_storage_create_if_absent(const char *location, const void *data, size_t len, tl_error *err);
int tl_storage_replace(const char *location, const void *data, size_t len, tl_error *err);
int tl_storage_list_dir(const char *location, int flags, tl_storage_list *out, tl_error *err);
int tl_storage_remove(const char *location, tl_error *err);
int tl_storage_remove_all(const char *location, tl_error *err);
int tl_storage_stat(const char *location, uint64_t *size, bool *is_dir, tl_error *err);
int tl_storage_make_dirs(const char *location, tl_error *err);
char *tl_storage_canonical(const char *location, tl_error *err);

/* Whether location is an existing object (not a directory); false on any error. */
bool tl_storage_is_file(const char *location);

#endif
