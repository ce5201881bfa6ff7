/*
 * error.c: filling tl_error. The first error set wins, so the root cause
 * survives while callers add context with tl_error_prefix.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tierlake/error.h"

void tl_error_clear(tl_error *err)
{
	if (err) {
		err->code = TL_OK;
		err->message[0] = '\0';
	}
}

int tl_error_set(tl_error *err, tl_error_code code, const char *fmt, ...)
{
	if (err == NULL || err->code != TL_OK)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	err->code = code;
	return -1;
}

void tl_error_prefix(tl_error *err, const char *fmt, ...)
{
	/* "interrupted" is about the host's request, not about the file being read. */
	if (err == NULL || err->code == TL_ERR_INTERRUPTED)
		return;
	char prefix[TL_ERROR_MESSAGE_MAX];
	char old[TL_ERROR_MESSAGE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->message, sizeof(old));
	/* Truncation is fine: the message is for people, and the prefix leads. */
	size_t n = strlen(prefix);
	if (n > sizeof(err->message) - 3)
		n = sizeof(err->message) - 3;
	memcpy(err->message, prefix, n);
	memcpy(err->message + n, ": ", 2);
	size_t rest = sizeof(err->message) - n - 3;
	size_t oldlen = strnlen(old, rest);
	memcpy(err->message + n + 2, old, oldlen);
	err->message[n + 2 + oldlen] = '\0';
}

const char *tl_error_code_name(tl_error_code code)
{
	switch (code) {
	case TL_OK: return "ok";
	case TL_ERR_IO: return "I/O error";
	case TL_ERR_CORRUPT: return "corrupt input";
	case TL_ERR_UNSUPPORTED: return "unsupported";
	case TL_ERR_INVALID: return "invalid argument";
	case TL_ERR_NOMEM: return "out of memory";
	case TL_ERR_CONFLICT: return "conflict";
	case TL_ERR_NOT_FOUND: return "not found";
	case TL_ERR_INTERRUPTED: return "interrupted";
	}
	return "unknown error";
}
