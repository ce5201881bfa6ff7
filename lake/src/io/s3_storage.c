/*
 * s3_storage.c: the tl_storage for s3:// (and s3a://) locations, built on
 * the S3 client.
 *
 * One storage holds one client, shared by every object it opens, so a cold
 * scan or a commit reuses its connections instead of making one per file.
 * That makes a storage single-threaded, like the processes that use it (a
 * backend, the daemon). Object stores have no directories: a "directory"
 * is the prefix "<location>/", make_dirs does nothing, and listing folds
 * deeper keys into their first component.
 *
 * Readers of Parquet and Avro start at a file's end (the footer and its
 * length, then the footer) and read small files whole; over S3 each read is
 * a round trip. So an input fetches the last TAIL_BYTES of its object (the
 * whole object when it is smaller) in one GET the first time a read falls
 * there, and serves every later read inside that window from memory; and
 * it tells readers (coalesce_gap) to fetch column chunks less than a MiB
 * apart together.
 */
#include <stdlib.h>
#include <string.h>

#include "io/s3_internal.h"
#include "tierlake/storage.h"

typedef struct s3_storage {
	tl_storage base;
	tl_s3_client *client;
} s3_storage;

static tl_s3_client *client_of(tl_storage *s)
{
	return ((s3_storage *)s)->client;
}

/* "<location>/" unless it already ends in '/': the prefix a directory stands for (NULL: out of memory). */
static char *dir_prefix(const char *location, tl_error *err)
{
	size_t n = strlen(location);
	char *p = tl_malloc(n + 2);
	if (p == NULL) {
		tl_error_nomem(err, "the prefix of %s", location);
		return NULL;
	}
	memcpy(p, location, n);
	if (n == 0 || location[n - 1] != '/')
		p[n++] = '/';
	p[n] = '\0';
	return p;
}

#define TAIL_BYTES (64 * 1024)
/* A GET costs about as much as transferring this many bytes more (a round trip on a fast link). */
#define COALESCE_GAP (1024 * 1024)

typedef struct tail_input {
	tl_input base;
	tl_input *object;     /* the ranged-GET input */
	uint8_t *tail;        /* the object's last tail_len bytes, once a read fell there */
	uint64_t tail_len;
} tail_input;

static int tail_read_at(tl_input *in, uint64_t offset, void *buf, size_t len, tl_error *err)
{
	tail_input *t = (tail_input *)in;
	uint64_t window = in->size < TAIL_BYTES ? in->size : TAIL_BYTES;
	uint64_t start = in->size - window;
	if (offset < start || offset > in->size || len > in->size - offset)
		return tl_input_read(t->object, offset, buf, len, err);
	if (t->tail == NULL) {
		uint8_t *tail = tl_malloc(window ? window : 1);
		if (tail == NULL)
			return tl_error_nomem(err, "the last %llu bytes of %s", (unsigned long long)window, in->name);
		if (tl_input_read(t->object, start, tail, window, err) < 0) {
			tl_free(tail);
			return -1;
		}
		t->tail = tail;
		t->tail_len = window;
	}
	memcpy(buf, t->tail + (offset - start), len);
	return 0;
}

static void tail_close(tl_input *in)
{
	tail_input *t = (tail_input *)in;
	tl_input_close(t->object);
	tl_free(t->tail);
	tl_free(t);
}

static tl_input *s3_open_read(tl_storage *s, const char *location, tl_error *err)
{
	tl_input *object = tl_s3_input_over(client_of(s), false, location, err);
	if (object == NULL)
		return NULL;
	tail_input *t = tl_calloc(1, sizeof(*t));
	if (t == NULL) {
		tl_input_close(object);
		tl_error_nomem(err, "an input for %s", location);
		return NULL;
	}
	t->object = object;
	t->base.read_at = tail_read_at;
	t->base.close = tail_close;
	t->base.size = object->size;
	t->base.name = object->name;
	t->base.coalesce_gap = COALESCE_GAP;
	return &t->base;
}

static tl_output *s3_create(tl_storage *s, const char *location, int mode, tl_error *err)
{
	return tl_s3_output_over(client_of(s), false, location, mode == TL_STORAGE_CREATE_EXCLUSIVE, err);
}

static int s3_create_if_absent(tl_storage *s, const char *location, const void *data, size_t len, tl_error *err)
{
	/* One PUT with If-None-Match: *: S3 makes the object whole or not at all, and a second one fails with 412. */
	return tl_s3_put(client_of(s), location, data, len, true, err);
}

static int s3_replace(tl_storage *s, const char *location, const void *data, size_t len, tl_error *err)
{
	return tl_s3_put(client_of(s), location, data, len, false, err);
}

/* Whether names[0..count) already holds name (listings fold many keys into one directory). */
static bool already_listed(const tl_buf *entries, const char *name, size_t len)
{
	const tl_storage_entry *e = (const tl_storage_entry *)entries->data;
	size_t count = entries->len / sizeof(*e);
	/* Keys come sorted, so a repeated directory is always the last one added. */
	return count > 0 && e[count - 1].is_dir && strlen(e[count - 1].name) == len &&
	       memcmp(e[count - 1].name, name, len) == 0;
}

static int s3_list(tl_storage *s, const char *location, int flags, tl_storage_list *out, tl_error *err)
{
	char *prefix = dir_prefix(location, err);
	if (prefix == NULL)
		return -1;
	tl_s3_listing listing;
	int rc = tl_s3_list(client_of(s), prefix, &listing, err);
	if (rc < 0) {
		tl_free(prefix);
		return -1;
	}
	/* The listing's keys are whole; strip the key part of the prefix. */
	char *bucket, *key_prefix;
	if (tl_s3_parse_uri(prefix, &bucket, &key_prefix, err) < 0) {
		tl_s3_listing_free(&listing);
		tl_free(prefix);
		return -1;
	}
	size_t skip = strlen(key_prefix);
	tl_buf entries;
	tl_buf_init(&entries);
	for (size_t i = 0; i < listing.count && rc == 0; i++) {
		const char *rest = listing.objects[i].key + skip;
		if (*rest == '\0')
			continue;  /* the "directory" marker object some tools write */
		const char *slash = (flags & TL_STORAGE_LIST_RECURSIVE) ? NULL : strchr(rest, '/');
		size_t len = slash ? (size_t)(slash - rest) : strlen(rest);
		if (slash && already_listed(&entries, rest, len))
			continue;
		tl_storage_entry e = {tl_strndup(rest, len), slash ? 0 : listing.objects[i].size, slash != NULL,
		                      slash ? 0 : listing.objects[i].mtime_ms};
		if (e.name != NULL)
			tl_buf_append(&entries, &e, sizeof(e));
		if (e.name == NULL || tl_buf_failed(&entries)) {
			tl_free(e.name);
			rc = tl_error_nomem(err, "the listing of %s", location);
		}
	}
	out->entries = (tl_storage_entry *)entries.data;
	out->count = entries.len / sizeof(tl_storage_entry);
	if (rc < 0)
		tl_storage_list_free(out);
	tl_free(bucket);
	tl_free(key_prefix);
	tl_s3_listing_free(&listing);
	tl_free(prefix);
	return rc;
}

static int s3_remove(tl_storage *s, const char *location, tl_error *err)
{
	/* S3 answers a DELETE of a missing key with 204 too, so a missing object is success here. */
	return tl_s3_delete(client_of(s), location, err);
}

static int s3_remove_all(tl_storage *s, const char *location, tl_error *err)
{
	char *prefix = dir_prefix(location, err);
	if (prefix == NULL)
		return -1;
	tl_s3_listing listing;
	int rc = tl_s3_list(client_of(s), prefix, &listing, err);
	if (rc == 0) {
		char *bucket, *key;
		rc = tl_s3_parse_uri(prefix, &bucket, &key, err);
		if (rc == 0) {
			tl_buf uri;
			tl_buf_init(&uri);
			for (size_t i = 0; i < listing.count && rc == 0; i++) {
				tl_buf_reset(&uri);
				tl_buf_append_str(&uri, "s3://");
				tl_buf_append_str(&uri, bucket);
				tl_buf_append_byte(&uri, '/');
				tl_buf_append_str(&uri, listing.objects[i].key);
				tl_buf_append_byte(&uri, 0);
				rc = tl_buf_check(&uri, err, "an object's URI");
				if (rc == 0)
					rc = tl_s3_delete(client_of(s), (const char *)uri.data, err);
			}
			tl_buf_free(&uri);
			tl_free(bucket);
			tl_free(key);
		}
		tl_s3_listing_free(&listing);
	}
	tl_free(prefix);
	/* The object named exactly `location`, if there is one. */
	return rc == 0 ? tl_s3_delete(client_of(s), location, err) : -1;
}

static int s3_stat(tl_storage *s, const char *location, uint64_t *size, bool *is_dir, tl_error *err)
{
	uint64_t n;
	tl_error why = {0};
	if (tl_s3_size(client_of(s), location, &n, &why) == 0) {
		if (size)
			*size = n;
		if (is_dir)
			*is_dir = false;
		return 0;
	}
	if (why.code != TL_ERR_NOT_FOUND) {
		if (err)
			*err = why;
		return -1;
	}
	/* No such object: a directory if any key lies under it. */
	char *prefix = dir_prefix(location, err);
	if (prefix == NULL)
		return -1;
	bool any = false;
	int rc = tl_s3_list_any(client_of(s), prefix, &any, err);
	tl_free(prefix);
	if (rc < 0)
		return -1;
	if (!any)
		return tl_error_set(err, TL_ERR_NOT_FOUND, "%s: no such object or prefix", location);
	if (size)
		*size = 0;
	if (is_dir)
		*is_dir = true;
	return 0;
}

static int s3_make_dirs(tl_storage *s, const char *location, tl_error *err)
{
	(void)s, (void)location, (void)err;
	return 0;  /* a key's "directories" exist as soon as the key does */
}

static char *s3_canonical(tl_storage *s, const char *location, tl_error *err)
{
	(void)s;
	char *copy = tl_strdup(location);
	if (copy == NULL)
		tl_error_nomem(err, "a copy of %s", location);
	return copy;
}

tl_storage *tl_storage_s3_new(const tl_s3_config *cfg, tl_error *err)
{
	tl_s3_client *client = tl_s3_client_new(cfg, err);
	if (client == NULL)
		return NULL;
	s3_storage *s = tl_calloc(1, sizeof(*s));
	if (s == NULL) {
		tl_s3_client_free(client);
		tl_error_nomem(err, "an S3 storage");
		return NULL;
	}
	s->client = client;
	s->base.name = "s3";
	s->base.state = s;
	s->base.open_read = s3_open_read;
	s->base.create = s3_create;
	s->base.create_if_absent = s3_create_if_absent;
	s->base.replace = s3_replace;
	s->base.list = s3_list;
	s->base.remove = s3_remove;
	s->base.remove_all = s3_remove_all;
	s->base.stat = s3_stat;
	s->base.make_dirs = s3_make_dirs;
	s->base.canonical = s3_canonical;
	return &s->base;
}

void tl_storage_s3_free(tl_storage *storage)
{
	if (storage == NULL)
		return;
	s3_storage *s = (s3_storage *)storage;
	tl_s3_client_free(s->client);
	tl_free(s);
}
