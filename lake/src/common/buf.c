/*
 * buf.c: growable buffers and a non-moving arena, on the host's allocator
 * (env.c). Neither aborts on out-of-memory: a buffer remembers that it
 * failed (see buf.h for why), an arena returns NULL.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/buf.h"

void tl_buf_init(tl_buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->failed = false;
}

void tl_buf_free(tl_buf *b)
{
	tl_free(b->data);
	tl_buf_init(b);
}

int tl_buf_reserve(tl_buf *b, size_t extra)
{
	if (b->failed)
		return -1;
	if (b->cap - b->len >= extra)
		return 0;
	if (extra > SIZE_MAX / 2 - b->len) {
		b->failed = true;
		return -1;
	}
	size_t need = b->len + extra;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	uint8_t *data = tl_realloc(b->data, cap);
	if (data == NULL) {
		b->failed = true;
		return -1;
	}
	b->data = data;
	b->cap = cap;
	return 0;
}

void tl_buf_append(tl_buf *b, const void *data, size_t len)
{
	if (len == 0)
		return;
	if (tl_buf_reserve(b, len) < 0)
		return;
	memcpy(b->data + b->len, data, len);
	b->len += len;
}

void tl_buf_append_byte(tl_buf *b, uint8_t byte)
{
	if (tl_buf_reserve(b, 1) < 0)
		return;
	b->data[b->len++] = byte;
}

void tl_buf_append_str(tl_buf *b, const char *s)
{
	tl_buf_append(b, s, strlen(s));
}

void tl_buf_append_utf8(tl_buf *b, uint32_t cp)
{
	if (cp < 0x80) {
		tl_buf_append_byte(b, (uint8_t)cp);
	} else if (cp < 0x800) {
		tl_buf_append_byte(b, (uint8_t)(0xC0 | (cp >> 6)));
		tl_buf_append_byte(b, (uint8_t)(0x80 | (cp & 0x3F)));
	} else if (cp < 0x10000) {
		tl_buf_append_byte(b, (uint8_t)(0xE0 | (cp >> 12)));
		tl_buf_append_byte(b, (uint8_t)(0x80 | ((cp >> 6) & 0x3F)));
		tl_buf_append_byte(b, (uint8_t)(0x80 | (cp & 0x3F)));
	} else {
		tl_buf_append_byte(b, (uint8_t)(0xF0 | (cp >> 18)));
		tl_buf_append_byte(b, (uint8_t)(0x80 | ((cp >> 12) & 0x3F)));
		tl_buf_append_byte(b, (uint8_t)(0x80 | ((cp >> 6) & 0x3F)));
		tl_buf_append_byte(b, (uint8_t)(0x80 | (cp & 0x3F)));
	}
}

void tl_buf_printf(tl_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	if (tl_buf_reserve(b, (size_t)n + 1) < 0)
		return;
	va_start(ap, fmt);
	vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void tl_buf_append_uvarint(tl_buf *b, uint64_t v)
{
	if (tl_buf_reserve(b, 10) < 0)
		return;
	while (v >= 0x80) {
		b->data[b->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->data[b->len++] = (uint8_t)v;
}

uint8_t *tl_buf_extend(tl_buf *b, size_t n)
{
	/* At least one byte, so that even n == 0 gives a non-NULL pointer: NULL means failure. */
	if (tl_buf_reserve(b, n ? n : 1) < 0)
		return NULL;
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
		if (blk == NULL)
			return NULL;
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
	if (p != NULL && len)
		memcpy(p, data, len);
	view.ptr = p;
	view.len = p != NULL ? len : 0;
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
			tl_free(blk);
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
		tl_free(blk);
		blk = next;
	}
	a->head = NULL;
	a->total = 0;
}

int tl_buf_check(const tl_buf *b, tl_error *err, const char *what)
{
	if (!b->failed)
		return 0;
	return tl_error_nomem(err, "%s", what);
}

int tl_error_nomem(tl_error *err, const char *what_fmt, ...)
{
	char what[TL_ERROR_MESSAGE_MAX];
	va_list ap;
	va_start(ap, what_fmt);
	vsnprintf(what, sizeof(what), what_fmt, ap);
	va_end(ap);
	return tl_error_set(err, TL_ERR_NOMEM, "out of memory %s", what);
}
