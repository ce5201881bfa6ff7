/*
 * env.h: what the host hands the lake library besides storage (storage.h):
 * its memory and its interrupt check.
 *
 * Memory. Every allocation and free of the library (and of jansson, which
 * the library uses for Iceberg's JSON) goes through one tl_mem_methods, in
 * the manner of SQLite's sqlite3_mem_methods. The default is the C library's
 * malloc/realloc/free. A host sets its own once, at startup, before any
 * library object exists: memory allocated under one set of methods must be
 * freed by the same set. When an allocation fails the library never aborts:
 * the call that needed it returns -1 (or NULL) with TL_ERR_NOMEM, having
 * freed what it had allocated and applied nothing half-way.
 *
 * Interrupt. The library calls the host's check in its long loops (manifest
 * reading, scan planning, the readers' batch loops, the writers, S3
 * transfers). A true return stops the operation: it returns -1 with
 * TL_ERR_INTERRUPTED and the message "interrupted", releasing what it holds.
 * The check must return, never longjmp: inside Postgres it reads
 * InterruptPending, and the extension calls CHECK_FOR_INTERRUPTS() after
 * the library call has returned.
 *
 * Both are process-wide settings (the library's callers are single-threaded
 * per process: a backend, the daemon); set them before starting threads.
 */
#ifndef TIERLAKE_ENV_H
#define TIERLAKE_ENV_H

#include <stdbool.h>
#include <stddef.h>

#include "tierlake/error.h"

typedef struct tl_mem_methods {
	/* Returns NULL on failure; n is never 0. */
	void *(*malloc)(size_t n, void *arg);
	/* As realloc(3): NULL on failure leaves p allocated; p may be NULL. */
	void *(*realloc)(void *p, size_t n, void *arg);
	/* p is never NULL. */
	void (*free)(void *p, void *arg);
	void *arg;
} tl_mem_methods;

/* Installs m (copied), or the C library's allocator when m is NULL. */
void tl_set_mem_methods(const tl_mem_methods *m);
/* The methods in force. */
void tl_get_mem_methods(tl_mem_methods *out);

/*
 * How many allocations have failed in this process so far. A function that
 * builds something through calls that cannot each report failure (jansson's
 * json_object_set_new, tl_buf appends) compares this before and after, like
 * SQLite's db->mallocFailed.
 */
unsigned long tl_mem_failures(void);

/*
 * True while jansson parses JSON for the library. jansson's lexer cannot
 * take a failed allocation (lake/src/common/json_load.h); an allocator that
 * fails on purpose (fault tests) must not fail one while this is true.
 */
bool tl_mem_json_loading(void);

typedef bool (*tl_interrupt_fn)(void *arg);

/* Installs the host's interrupt check (NULL removes it). */
void tl_set_interrupt_check(tl_interrupt_fn fn, void *arg);
/* True when the host asks the library to stop. */
bool tl_interrupt_requested(void);
/* 0, or -1 with err set to TL_ERR_INTERRUPTED "interrupted" when the host asks to stop. */
int tl_check_interrupt(tl_error *err);

#endif
