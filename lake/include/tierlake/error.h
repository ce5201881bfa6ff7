/*
 * error.h: how every lake-library call reports failure.
 *
 * The lake library never calls Postgres and never exits: a failing call
 * returns -1 (or NULL) and fills the caller's tl_error with a code and a
 * message a user can act on. The extension turns that into ereport() after
 * the call returns; the CLI prints it.
 */
#ifndef TIERLAKE_ERROR_H
#define TIERLAKE_ERROR_H

#include <stddef.h>

typedef enum tl_error_code {
	TL_OK = 0,
	TL_ERR_IO,           /* the operating system or storage refused */
	TL_ERR_CORRUPT,      /* input bytes are not what the format allows */
	TL_ERR_UNSUPPORTED,  /* valid input that this library does not handle */
	TL_ERR_INVALID,      /* the caller passed something wrong */
	TL_ERR_NOMEM,        /* an allocation failed or would exceed a limit */
	TL_ERR_CONFLICT,     /* lost a race (for example an Iceberg commit) */
	TL_ERR_NOT_FOUND,    /* a named thing does not exist */
	TL_ERR_INTERRUPTED   /* the host's interrupt check asked the library to stop (env.h) */
} tl_error_code;

#define TL_ERROR_MESSAGE_MAX 512

typedef struct tl_error {
	tl_error_code code;
	char message[TL_ERROR_MESSAGE_MAX];
} tl_error;

/* Resets err to TL_OK with an empty message. */
void tl_error_clear(tl_error *err);

/*
 * Sets err (which may be NULL) to code and a printf-formatted message and
 * returns -1, so failing paths can say `return tl_error_set(...)`.
 * Setting an error that is already set keeps the first one: the root cause
 * is the most useful message.
 */
int tl_error_set(tl_error *err, tl_error_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefixes the message already in err with context ("reading foo.parquet: ..."). */
void tl_error_prefix(tl_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A short name for a code, such as "corrupt input". */
const char *tl_error_code_name(tl_error_code code);

#endif
