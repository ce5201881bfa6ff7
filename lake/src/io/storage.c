/*
 * storage.c: choosing the tl_storage that serves a location, by its
 * scheme, and the shorthands that call it. Hosts and tests register their
 * own implementation for a scheme; the built-ins are the local file system
 * for plain paths and file:, and nothing yet for s3: (an S3 client plugs in
 * here through tl_storage_register or the built-in table below).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/buf.h"
#include "tierlake/storage.h"

#define SCHEME_MAX 16
#define REGISTERED_MAX 8

typedef struct registered {
	char scheme[SCHEME_MAX];
	tl_storage *storage;
} registered;

static registered registry[REGISTERED_MAX];

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

static registered *find_registered(const char *scheme)
{
	for (int i = 0; i < REGISTERED_MAX; i++)
		if (registry[i].storage != NULL && strcmp(registry[i].scheme, scheme) == 0)
			return &registry[i];
	return NULL;
}

tl_storage *tl_storage_register(const char *scheme, tl_storage *storage)
{
	char lower[SCHEME_MAX];
	size_t n = strlen(scheme);
	if (n >= SCHEME_MAX)
		return NULL;
	for (size_t i = 0; i <= n; i++)
		lower[i] = (char)tolower((unsigned char)scheme[i]);
	registered *r = find_registered(lower);
	tl_storage *previous = r ? r->storage : NULL;
	if (r == NULL && storage != NULL) {
		for (int i = 0; i < REGISTERED_MAX && r == NULL; i++)
			if (registry[i].storage == NULL)
				r = &registry[i];
		if (r == NULL)
			return previous; /* full: a handful of schemes is all a host serves */
		memcpy(r->scheme, lower, n + 1);
	}
	if (r != NULL)
		r->storage = storage;
	return previous;
}

tl_storage *tl_storage_for(const char *location, tl_error *err)
{
	char scheme[SCHEME_MAX];
	if (!location_scheme(location, scheme)) {
		tl_error_set(err, TL_ERR_UNSUPPORTED, "cannot use %s: its scheme is not a storage this build knows",
		             location);
		return NULL;
	}
	registered *r = find_registered(scheme);
	if (r != NULL)
		return r->storage;
	if (strcmp(scheme, "file") == 0)
		return tl_storage_local();
	if (strcmp(scheme, "s3") == 0 || strcmp(scheme, "s3a") == 0)
		tl_error_set(err, TL_ERR_UNSUPPORTED, "cannot use %s: s3:// is not wired yet; only local files "
		             "(a path or file://) are supported", location);
	else
		tl_error_set(err, TL_ERR_UNSUPPORTED, "cannot use %s: only local files (a path or file://) are supported",
		             location);
	return NULL;
}

void tl_storage_list_free(tl_storage_list *list)
{
	for (size_t i = 0; i < list->count; i++)
		free(list->entries[i].name);
	free(list->entries);
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
