/*
 * file_set.c: a hash set of file locations for the maintenance operations
 * (maintenance_internal.h), keyed by a normal form of the location.
 *
 * Table metadata records locations as the writer spelled them: Java writes
 * "file:/x/...", we write the table location as given ("file:///x" or
 * "/x"), and a listing of the table directory yields our own spelling. The
 * normal form makes these one key without allocating for a lookup: the
 * key is produced a character at a time (key_next), and hashing and
 * comparing both read that stream.
 */
#include <stdint.h>
#include <string.h>

#include "iceberg/maintenance_internal.h"

/* A location's normal form, one character at a time. */
typedef struct key_cursor {
	const char *prefix;     /* emitted verbatim first ("scheme://"), then rest */
	size_t prefix_len;
	const char *rest;       /* the path, whose slashes are folded */
} key_cursor;

static bool is_scheme_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '-' ||
	       c == '.';
}

static void key_start(key_cursor *k, const char *location)
{
	k->prefix = "";
	k->prefix_len = 0;
	k->rest = location;
	/* file: URIs name local paths exactly as tl_local_path maps them. */
	if (strncmp(location, "file://", 7) == 0) {
		k->rest = location + 7;
		return;
	}
	if (strncmp(location, "file:", 5) == 0) {
		k->rest = location + 5;
		return;
	}
	/* S3 storage serves s3a:// as s3:// (s3_storage.c). */
	if (strncmp(location, "s3a://", 6) == 0) {
		k->prefix = "s3://";
		k->prefix_len = 5;
		k->rest = location + 6;
		return;
	}
	const char *p = location;
	while (is_scheme_char(*p))
		p++;
	if (p > location && strncmp(p, "://", 3) == 0) {
		k->prefix = location;
		k->prefix_len = (size_t)(p + 3 - location);
		k->rest = p + 3;
	}
}

/* The next character of the normal form, or -1 at its end. */
static int key_next(key_cursor *k)
{
	if (k->prefix_len > 0) {
		k->prefix_len--;
		return (unsigned char)*k->prefix++;
	}
	char c = *k->rest;
	if (c == '\0')
		return -1;
	k->rest++;
	if (c == '/') {
		for (;;) {
			if (k->rest[0] == '/')
				k->rest++;
			else if (k->rest[0] == '.' && k->rest[1] == '/')
				k->rest += 2;
			else
				break;
		}
	}
	return (unsigned char)c;
}

/* FNV-1a over the normal form. */
static uint64_t key_hash(const char *location, size_t *len)
{
	key_cursor k;
	key_start(&k, location);
	uint64_t h = 14695981039346656037ULL;
	size_t n = 0;
	for (int c; (c = key_next(&k)) >= 0; n++) {
		h ^= (uint64_t)c;
		h *= 1099511628211ULL;
	}
	if (len != NULL)
		*len = n;
	return h;
}

/* Whether location's normal form is `key` (itself a normal form). */
static bool key_equal(const char *key, const char *location)
{
	key_cursor k;
	key_start(&k, location);
	for (const char *p = key;; p++) {
		int c = key_next(&k);
		if (c < 0)
			return *p == '\0';
		if ((unsigned char)*p != c)
			return false;
	}
}

void tl_ice_file_set_init(tl_ice_file_set *set)
{
	memset(set, 0, sizeof(*set));
	tl_arena_init(&set->arena, 64 * 1024);
}

void tl_ice_file_set_free(tl_ice_file_set *set)
{
	tl_free(set->slots);
	tl_arena_free(&set->arena);
	memset(set, 0, sizeof(*set));
}

/* The slot holding location's key, or the empty slot where it would go. */
static size_t find_slot(const tl_ice_file_set *set, const char *location, uint64_t hash)
{
	size_t mask = set->cap - 1;
	size_t i = (size_t)hash & mask;
	while (set->slots[i].key != NULL && (set->slots[i].hash != hash || !key_equal(set->slots[i].key, location)))
		i = (i + 1) & mask;
	return i;
}

/* Doubles the table, moving each key by its stored hash; -1 when out of memory. */
static int grow(tl_ice_file_set *set)
{
	size_t cap = set->cap ? 2 * set->cap : 256;
	tl_ice_file_slot *slots = tl_calloc(cap, sizeof(tl_ice_file_slot));
	if (slots == NULL)
		return -1;
	for (size_t i = 0; i < set->cap; i++) {
		if (set->slots[i].key == NULL)
			continue;
		size_t j = (size_t)set->slots[i].hash & (cap - 1);
		while (slots[j].key != NULL)
			j = (j + 1) & (cap - 1);
		slots[j] = set->slots[i];
	}
	tl_free(set->slots);
	set->slots = slots;
	set->cap = cap;
	return 0;
}

int tl_ice_file_set_add(tl_ice_file_set *set, const char *location)
{
	/* Kept at most half full, so probes stay short and always end at an empty slot. */
	if (2 * (set->count + 1) > set->cap && grow(set) < 0)
		return -1;
	size_t len;
	uint64_t hash = key_hash(location, &len);
	size_t i = find_slot(set, location, hash);
	if (set->slots[i].key != NULL)
		return 0;
	char *key = tl_arena_alloc(&set->arena, len + 1);
	if (key == NULL)
		return -1;
	key_cursor k;
	key_start(&k, location);
	size_t n = 0;
	for (int c; (c = key_next(&k)) >= 0;)
		key[n++] = (char)c;
	key[n] = '\0';
	set->slots[i].key = key;
	set->slots[i].hash = hash;
	set->count++;
	return 1;
}

bool tl_ice_file_set_has(const tl_ice_file_set *set, const char *location)
{
	if (set->count == 0)
		return false;
	return set->slots[find_slot(set, location, key_hash(location, NULL))].key != NULL;
}
