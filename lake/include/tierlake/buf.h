/*
 * buf.h: growable byte buffers and a non-moving arena.
 *
 * tl_buf is the one growable byte array of the library (encoders append to
 * it, writers stage pages in it). tl_arena hands out memory that never moves
 * until the arena is reset, so views (tl_bytes) into it stay valid while more
 * is allocated.
 */
#ifndef TIERLAKE_BUF_H
#define TIERLAKE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tierlake/env.h"
#include "tierlake/error.h"

/*
 * A buffer whose growth fails remembers it (`failed`) and ignores every
 * later append, the way SQLite's StrAccum does: an encoder makes dozens of
 * appends in a row, and checking each would bury the format under error
 * handling. The code that finishes the buffer checks tl_buf_failed() once,
 * before it uses the bytes, and returns TL_ERR_NOMEM. The flag stays set
 * until tl_buf_free or tl_buf_init. The calls that hand out room to write
 * into (tl_buf_reserve, tl_buf_extend) report failure directly.
 */
typedef struct tl_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	bool failed;
} tl_buf;

/* A view of bytes owned by someone else. */
typedef struct tl_bytes {
	const uint8_t *ptr;
	uint32_t len;
} tl_bytes;

void tl_buf_init(tl_buf *b);
void tl_buf_free(tl_buf *b);
/* Keeps the allocation, forgets the contents. */
static inline void tl_buf_reset(tl_buf *b) { b->len = 0; }
/* Ensures room for `extra` more bytes: 0, or -1 when the allocation failed (or failed before). */
int tl_buf_reserve(tl_buf *b, size_t extra) __attribute__((warn_unused_result));
void tl_buf_append(tl_buf *b, const void *data, size_t len);
void tl_buf_append_byte(tl_buf *b, uint8_t byte);
void tl_buf_append_str(tl_buf *b, const char *s);
/* Appends a Unicode code point (at most 0x10FFFF) as UTF-8. */
void tl_buf_append_utf8(tl_buf *b, uint32_t codepoint);
void tl_buf_printf(tl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends an unsigned LEB128 varint (Thrift compact, Avro). */
void tl_buf_append_uvarint(tl_buf *b, uint64_t v);
/* Grows len by n bytes and returns a pointer to them (contents undefined); NULL on failure. */
uint8_t *tl_buf_extend(tl_buf *b, size_t n) __attribute__((warn_unused_result));
/* True once an allocation of b failed: its contents are incomplete. */
static inline bool tl_buf_failed(const tl_buf *b) { return b->failed; }
/* Marks b failed: an encoder that appends to b could not allocate its own scratch. */
static inline void tl_buf_set_failed(tl_buf *b) { b->failed = true; }
/* -1 with TL_ERR_NOMEM naming `what` when b failed, else 0. */
int tl_buf_check(const tl_buf *b, tl_error *err, const char *what);

typedef struct tl_arena_block tl_arena_block;
typedef struct tl_arena {
	tl_arena_block *head;
	size_t block_size;
	size_t total;       /* bytes handed out since the last reset */
} tl_arena;

void tl_arena_init(tl_arena *a, size_t block_size);
/* NULL when the allocation failed. */
void *tl_arena_alloc(tl_arena *a, size_t n) __attribute__((warn_unused_result));
/* Copies the bytes into the arena and returns a view of the copy (ptr NULL on failure). */
tl_bytes tl_arena_copy(tl_arena *a, const void *data, uint32_t len);
/* Frees every block but the first, which is kept for reuse. */
void tl_arena_reset(tl_arena *a);
void tl_arena_free(tl_arena *a);

/*
 * The library's allocation helpers, on the host's allocator (env.h). They
 * return NULL when the allocation fails (and count it, tl_mem_failures);
 * every caller checks and returns TL_ERR_NOMEM. Memory from them, and every
 * pointer the library hands out to be freed, is released with tl_free.
 */
void *tl_malloc(size_t n) __attribute__((warn_unused_result));
void *tl_calloc(size_t count, size_t size) __attribute__((warn_unused_result));
/* As realloc(3): on failure p stays allocated and NULL is returned. */
void *tl_realloc(void *p, size_t n) __attribute__((warn_unused_result));
char *tl_strdup(const char *s) __attribute__((warn_unused_result));
char *tl_strndup(const char *s, size_t n) __attribute__((warn_unused_result));
void tl_free(void *p);
/* Sets err to TL_ERR_NOMEM "out of memory <what>" (printf-formatted) and returns -1. */
int tl_error_nomem(tl_error *err, const char *what_fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
