/*
 * env.c: the host's allocator and interrupt check (env.h), and the
 * library's allocation helpers (buf.h) that go through them.
 *
 * Allocation failure is an ordinary error here: tl_malloc and friends return
 * NULL, count the failure (tl_mem_failures) and leave the caller to return
 * TL_ERR_NOMEM. Nothing in the library aborts on out-of-memory, because
 * inside a Postgres backend that would take the whole server through
 * crash recovery for one query's failed allocation.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/buf.h"
#include "tierlake/env.h"
#include "common/json_load.h"

static void *libc_malloc(size_t n, void *arg)
{
	(void)arg;
	return malloc(n);
}

static void *libc_realloc(void *p, size_t n, void *arg)
{
	(void)arg;
	return realloc(p, n);
}

static void libc_free(void *p, void *arg)
{
	(void)arg;
	free(p);
}

static tl_mem_methods methods = {libc_malloc, libc_realloc, libc_free, NULL};
static unsigned long failures;

static _Thread_local int json_loading; /* per thread: a parse on one thread says nothing of another's */

static tl_interrupt_fn interrupt_fn;
static void *interrupt_arg;

static void *json_alloc(size_t n)
{
	return tl_malloc(n);
}

/*
 * jansson allocates through tl_malloc from the start, not only once a host
 * sets its methods, so that a json_* constructor that fails is counted
 * (tl_mem_failures) under the default allocator too.
 */
__attribute__((constructor)) static void route_jansson(void)
{
	json_set_alloc_funcs(json_alloc, tl_free);
}

void tl_set_mem_methods(const tl_mem_methods *m)
{
	if (m == NULL)
		methods = (tl_mem_methods){libc_malloc, libc_realloc, libc_free, NULL};
	else
		methods = *m;
	/* jansson's objects are the library's memory too: the same methods, and
	 * the same failure accounting, so a json_* constructor that returns NULL
	 * is an out-of-memory the caller reports. */
	json_set_alloc_funcs(json_alloc, tl_free);
}

void tl_get_mem_methods(tl_mem_methods *out)
{
	*out = methods;
}

unsigned long tl_mem_failures(void)
{
	return failures;
}

void *tl_malloc(size_t n)
{
	void *p = methods.malloc(n ? n : 1, methods.arg);
	if (p == NULL)
		failures++;
	return p;
}

void *tl_calloc(size_t count, size_t size)
{
	if (count == 0 || size == 0)
		count = size = 1;
	if (count > SIZE_MAX / size) {
		failures++;
		return NULL;
	}
	void *p = tl_malloc(count * size);
	if (p != NULL)
		memset(p, 0, count * size);
	return p;
}

void *tl_realloc(void *p, size_t n)
{
	void *q = methods.realloc(p, n ? n : 1, methods.arg);
	if (q == NULL)
		failures++;
	return q;
}

void tl_free(void *p)
{
	if (p != NULL)
		methods.free(p, methods.arg);
}

char *tl_strdup(const char *s)
{
	return tl_strndup(s, strlen(s));
}

char *tl_strndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = tl_malloc(len + 1);
	if (p == NULL)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

bool tl_mem_json_loading(void)
{
	return json_loading > 0;
}

json_t *tl_json_loadb(const char *text, size_t len, size_t flags, json_error_t *error)
{
	json_loading++;
	json_t *json = json_loadb(text, len, flags, error);
	json_loading--;
	return json;
}

void tl_set_interrupt_check(tl_interrupt_fn fn, void *arg)
{
	interrupt_fn = fn;
	interrupt_arg = arg;
}

bool tl_interrupt_requested(void)
{
	return interrupt_fn != NULL && interrupt_fn(interrupt_arg);
}

int tl_check_interrupt(tl_error *err)
{
	if (!tl_interrupt_requested())
		return 0;
	return tl_error_set(err, TL_ERR_INTERRUPTED, "interrupted");
}

char *tl_json_dumps(const json_t *json, size_t flags)
{
	unsigned long failures = tl_mem_failures();
	char *text = json_dumps(json, flags);
	if (text != NULL && tl_mem_failures() != failures) {
		tl_free(text);
		return NULL;
	}
	return text;
}
