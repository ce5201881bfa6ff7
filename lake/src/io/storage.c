/*
 * storage.c: choosing the tl_storage that serves a location, by its
 * scheme, and the shorthands that call it. Hosts and tests register their
 * own implementation for a scheme or for every location under a prefix (a
 * storage profile's warehouse with its own credentials); the built-ins are
 * the local file system for plain paths and file:, and S3 configured from
 * the environment for s3: and s3a:.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/buf.h"
#include "tierlake/s3.h"
#include "tierlake/storage.h"

#define SCHEME_MAX 16

/* A host's choice: a whole scheme, or every location under a prefix. */
typedef struct registered {
	char *match;        /* a lower-case scheme, or a location prefix */
	bool is_prefix;
	tl_storage *storage;
} registered;

static registered *registry;
static size_t registry_count;

/*
 * Guards the registry and the environment's S3 storage: a host may look
 * storages up from several threads (the daemon's Stream Load threads)
 * while one of them registers (its cycle re-serves the profiles). What a
 * lookup returns stays valid: hosts keep a storage alive after replacing
 * its registration (cli/profiles.c).
 */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * The scheme of a location, lower-cased, into out: "file" for plain paths
 * and file: URIs; a URI's scheme is the letters before "://". False when
 * the scheme is too long to be one we could serve.
 */
static bool location_scheme(const char *location, char out[SCHEME_MAX])
{
	const char *p = location;
	if (isalpha((unsigned char)*p))
		while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
			p++;
	size_t n = (size_t)(p - location);
	bool is_file = n == 4 && strncasecmp(location, "file", 4) == 0 && *p == ':';
	if (n == 0 || *p != ':' || (!is_file && strncmp(p, "://", 3) != 0)) {
		strcpy(out, "file");
		return true;
	}
	if (n >= SCHEME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		out[i] = (char)tolower((unsigned char)location[i]);
	out[n] = '\0';
	return true;
}

static registered *find_registered(const char *match, bool is_prefix)
{
	for (size_t i = 0; i < registry_count; i++)
		if (registry[i].is_prefix == is_prefix && strcmp(registry[i].match, match) == 0)
			return &registry[i];
	return NULL;
}

static tl_storage *set_registered_locked(const char *match, bool is_prefix, tl_storage *storage)
{
	registered *r = find_registered(match, is_prefix);
	tl_storage *previous = r ? r->storage : NULL;
	if (r != NULL && storage == NULL) {
		tl_free(r->match);
		*r = registry[--registry_count];
	} else if (r != NULL) {
		r->storage = storage;
	} else if (storage != NULL) {
		/* Out of memory: the registration does not happen (a few bytes, at a host's startup). */
		registered *grown = tl_realloc(registry, (registry_count + 1) * sizeof(*registry));
		char *copy = grown ? tl_strdup(match) : NULL;
		if (grown)
			registry = grown;
		if (copy)
			registry[registry_count++] = (registered){copy, is_prefix, storage};
	}
	return previous;
}

static tl_storage *set_registered(const char *match, bool is_prefix, tl_storage *storage)
{
	pthread_mutex_lock(&registry_lock);
	tl_storage *previous = set_registered_locked(match, is_prefix, storage);
	pthread_mutex_unlock(&registry_lock);
	return previous;
}

tl_storage *tl_storage_register(const char *scheme, tl_storage *storage)
{
	char lower[SCHEME_MAX];
	size_t n = strlen(scheme);
	if (n >= SCHEME_MAX)
		return NULL;
	for (size_t i = 0; i <= n; i++)
		lower[i] = (char)tolower((unsigned char)scheme[i]);
	return set_registered(lower, false, storage);
}

tl_storage *tl_storage_register_prefix(const char *prefix, tl_storage *storage)
{
	/* "s3://b/wh/" and "s3://b/wh" name the same directory. */
	size_t n = strlen(prefix);
	while (n > 1 && prefix[n - 1] == '/')
		n--;
	char *trimmed = tl_malloc(n + 1);
	if (trimmed == NULL)
		return NULL;
	memcpy(trimmed, prefix, n);
	trimmed[n] = '\0';
	tl_storage *previous = set_registered(trimmed, true, storage);
	tl_free(trimmed);
	return previous;
}

/* The storage registered for the longest prefix that location lies under (a whole path component), or NULL. */
static tl_storage *by_prefix(const char *location)
{
	registered *best = NULL;
	size_t best_len = 0;
	for (size_t i = 0; i < registry_count; i++) {
		registered *r = &registry[i];
		size_t n = strlen(r->match);
		if (!r->is_prefix || n < best_len || strncmp(location, r->match, n) != 0)
			continue;
		if (location[n] == '\0' || location[n] == '/' || r->match[n - 1] == '/') {
			best = r;
			best_len = n;
		}
	}
	return best ? best->storage : NULL;
}

/*
 * The built-in S3 storage, configured from the environment (TIERDB_S3_* and
 * AWS_*, tl_s3_config_from_env) the first time an s3:// location is used
 * and kept for the process.
 */
static tl_storage *environment_s3(tl_error *err)
{
	static tl_storage *s3;
	if (s3 == NULL) {
		tl_s3_config cfg;
		if (tl_s3_config_from_env(&cfg, err) < 0)
			return NULL;
		s3 = tl_storage_s3_new(&cfg, err);
	}
	return s3;
}

static tl_storage *storage_for_locked(const char *location, const char *scheme, tl_error *err)
{
	tl_storage *s = by_prefix(location);
	if (s != NULL)
		return s;
	registered *r = find_registered(scheme, false);
	if (r != NULL)
		return r->storage;
	if (strcmp(scheme, "file") == 0)
		return tl_storage_local();
	if (strcmp(scheme, "s3") == 0 || strcmp(scheme, "s3a") == 0) {
		s = environment_s3(err);
		if (s == NULL)
			tl_error_prefix(err, "cannot use %s", location);
		return s;
	}
	tl_error_set(err, TL_ERR_UNSUPPORTED, "cannot use %s: only local files (a path or file://) and s3:// are "
	             "supported", location);
	return NULL;
}

tl_storage *tl_storage_for(const char *location, tl_error *err)
{
	char scheme[SCHEME_MAX];
	if (!location_scheme(location, scheme)) {
		tl_error_set(err, TL_ERR_UNSUPPORTED, "cannot use %s: its scheme is not a storage this build knows",
		             location);
		return NULL;
	}
	pthread_mutex_lock(&registry_lock);
	tl_storage *s = storage_for_locked(location, scheme, err);
	pthread_mutex_unlock(&registry_lock);
	return s;
}

void tl_storage_list_free(tl_storage_list *list)
{
	for (size_t i = 0; i < list->count; i++)
		tl_free(list->entries[i].name);
	tl_free(list->entries);
	list->entries = NULL;
	list->count = 0;
}

tl_input *tl_storage_open_read(const char *location, tl_error *err)
{
	tl_storage *s = tl_storage_for(location, err);
	return s ? s->open_read(s, location, err) : NULL;
}

tl_output *tl_storage_create(const char *location, int mode, tl_error *err)
{
	tl_storage *s = tl_storage_for(location, err);
	return s ? s->create(s, location, mode, err) : NULL;
}

int tl_storage_create_if_absent(const char *location, const void *data, size_t len, tl_error *err)
{
	tl_storage *s = tl_storage_for(location, err);
	return s ? s->create_if_absent(s, location, data, len, err) : -1;
}

int tl_storage_replace(const char *location, const void *data, size_t len, tl_error *err)
{
	tl_storage *s = tl_storage_for(location, err);
	return s ? s->replace(s, location, data, len, err) : -1;
}

int tl_storage_list_dir(const char *location, int flags, tl_storage_list *out, tl_error *err)
{
	out->entries = NULL;
	out->count = 0;
	tl_storage *s = tl_storage_for(location, err);
	return s ? s->list(s, location, flags, out, err) : -1;
}

int tl_storage_remove(const char *location, tl_error *err)
{
	tl_storage *s = tl_storage_for(location, err);
	return s ? s->remove(s, location, err) : -1;
}

int tl_storage_remove_all(const char *location, tl_error *err)
{
	tl_storage *s = tl_storage_for(location, err);
	return s ? s->remove_all(s, location, err) : -1;
}

int tl_storage_stat(const char *location, uint64_t *size, bool *is_dir, tl_error *err)
{
	tl_storage *s = tl_storage_for(location, err);
	return s ? s->stat(s, location, size, is_dir, err) : -1;
}

int tl_storage_make_dirs(const char *location, tl_error *err)
{
	tl_storage *s = tl_storage_for(location, err);
	return s ? s->make_dirs(s, location, err) : -1;
}

char *tl_storage_canonical(const char *location, tl_error *err)
{
	tl_storage *s = tl_storage_for(location, err);
	return s ? s->canonical(s, location, err) : NULL;
}

bool tl_storage_is_file(const char *location)
{
	bool is_dir = true;
	return tl_storage_stat(location, NULL, &is_dir, NULL) == 0 && !is_dir;
}
