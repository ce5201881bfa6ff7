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

#include "tierlake/error.h"

typedef struct tl_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
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
/* Ensures room for `extra` more bytes; aborts the process only if malloc fails. */
void tl_buf_reserve(tl_buf *b, size_t extra);
void tl_buf_append(tl_buf *b, const void *data, size_t len);
void tl_buf_append_byte(tl_buf *b, uint8_t byte);
void tl_buf_append_str(tl_buf *b, const char *s);
void tl_buf_printf(tl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends an unsigned LEB128 varint (Thrift compact, Avro). */
void tl_buf_append_uvarint(tl_buf *b, uint64_t v);
/* Grows len by n bytes and returns a pointer to them (contents undefined). */
uint8_t *tl_buf_extend(tl_buf *b, size_t n);

typedef struct tl_arena_block tl_arena_block;
typedef struct tl_arena {
	tl_arena_block *head;
	size_t block_size;
	size_t total;       /* bytes handed out since the last reset */
} tl_arena;

void tl_arena_init(tl_arena *a, size_t block_size);
void *tl_arena_alloc(tl_arena *a, size_t n);
/* Copies the bytes into the arena and returns a view of the copy. */
tl_bytes tl_arena_copy(tl_arena *a, const void *data, uint32_t len);
/* Frees every block but the first, which is kept for reuse. */
void tl_arena_reset(tl_arena *a);
void tl_arena_free(tl_arena *a);

/* Allocation helpers that abort on out-of-memory, like Postgres' palloc. */
void *tl_malloc(size_t n);
void *tl_calloc(size_t count, size_t size);
void *tl_realloc(void *p, size_t n);
char *tl_strdup(const char *s);

#endif
