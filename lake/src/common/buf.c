/*
 * buf.c: growable buffers, a non-moving arena, and allocation that aborts
 * on out-of-memory (the library's callers cannot do better than stop, and
 * inside Postgres the extension's allocator replaces these paths).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/buf.h"

static void out_of_memory(size_t n)
{
	fprintf(stderr, "tierlake: out of memory allocating %zu bytes\n", n);
	abort();
}

void *tl_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL)
		out_of_memory(n);
	return p;
}

void *tl_calloc(size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size ? size : 1);
	if (p == NULL)
		out_of_memory(count * size);
	return p;
}

void *tl_realloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (q == NULL)
		out_of_memory(n);
	return q;
}

char *tl_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = tl_malloc(n);
	memcpy(p, s, n);
	return p;
}

void tl_buf_init(tl_buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void tl_buf_free(tl_buf *b)
{
	free(b->data);
	tl_buf_init(b);
}

void tl_buf_reserve(tl_buf *b, size_t extra)
{
	if (b->cap - b->len >= extra)
		return;
	size_t need = b->len + extra;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	b->data = tl_realloc(b->data, cap);
	b->cap = cap;
}

void tl_buf_append(tl_buf *b, const void *data, size_t len)
{
	if (len == 0)
		return;
	tl_buf_reserve(b, len);
	memcpy(b->data + b->len, data, len);
	b->len += len;
}

void tl_buf_append_byte(tl_buf *b, uint8_t byte)
{
	tl_buf_reserve(b, 1);
	b->data[b->len++] = byte;
}

void tl_buf_append_str(tl_buf *b, const char *s)
{
	tl_buf_append(b, s, strlen(s));
}

void tl_buf_printf(tl_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	tl_buf_reserve(b, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void tl_buf_append_uvarint(tl_buf *b, uint64_t v)
{
	tl_buf_reserve(b, 10);
	while (v >= 0x80) {
		b->data[b->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->data[b->len++] = (uint8_t)v;
}

uint8_t *tl_buf_extend(tl_buf *b, size_t n)
{
	tl_buf_reserve(b, n);
	uint8_t *p = b->data + b->len;
	b->len += n;
	return p;
}

struct tl_arena_block {
	tl_arena_block *next;
	size_t size;
	size_t used;
	_Alignas(16) uint8_t data[];
};

void tl_arena_init(tl_arena *a, size_t block_size)
{
	a->head = NULL;
	a->block_size = block_size ? block_size : 64 * 1024;
	a->total = 0;
}

void *tl_arena_alloc(tl_arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (a->head == NULL || a->head->size - a->head->used < n) {
		size_t size = n > a->block_size ? n : a->block_size;
		tl_arena_block *blk = tl_malloc(sizeof(*blk) + size);
		blk->size = size;
		blk->used = 0;
		blk->next = a->head;
		a->head = blk;
	}
	void *p = a->head->data + a->head->used;
	a->head->used += n;
	a->total += n;
	return p;
}

tl_bytes tl_arena_copy(tl_arena *a, const void *data, uint32_t len)
{
	tl_bytes view;
	uint8_t *p = tl_arena_alloc(a, len);
	if (len)
		memcpy(p, data, len);
	view.ptr = p;
	view.len = len;
	return view;
}

void tl_arena_reset(tl_arena *a)
{
	if (a->head == NULL)
		return;
	/* Keep the oldest block (the last in the list): it is block_size when
	 * allocations are small, which is the common steady state. */
	tl_arena_block *blk = a->head, *keep = NULL;
	while (blk) {
		tl_arena_block *next = blk->next;
		if (next == NULL)
			keep = blk;
		else
			free(blk);
		blk = next;
	}
	keep->used = 0;
	keep->next = NULL;
	a->head = keep;
	a->total = 0;
}

void tl_arena_free(tl_arena *a)
{
	tl_arena_block *blk = a->head;
	while (blk) {
		tl_arena_block *next = blk->next;
		free(blk);
		blk = next;
	}
	a->head = NULL;
	a->total = 0;
}
