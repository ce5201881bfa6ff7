/*
 * io.h: the storage interface every format reader and writer goes through.
 *
 * Readers fetch byte ranges (so a Parquet footer and one column chunk can be
 * read without the rest of the file, locally or from object storage later);
 * writers stream appends. Implementations live in src/io/; storage.h
 * chooses one by a location's scheme and does the rest (list, delete, the
 * commit primitive).
 */
#ifndef TIERLAKE_IO_H
#define TIERLAKE_IO_H

#include <stddef.h>
#include <stdint.h>

#include "tierlake/error.h"

typedef struct tl_input tl_input;
struct tl_input {
	/* Reads exactly len bytes at offset into buf; a short file is an error. */
	int (*read_at)(tl_input *in, uint64_t offset, void *buf, size_t len, tl_error *err);
	void (*close)(tl_input *in);
	uint64_t size;
	const char *name;   /* for error messages: a path or URL */
	/*
	 * Reads of ranges this many bytes apart or closer cost less as one read
	 * than as two (a round trip on object storage), so readers may fetch
	 * them together; 0 (local files, memory): read each range by itself.
	 */
	uint64_t coalesce_gap;
};

typedef struct tl_output tl_output;
struct tl_output {
	int (*write)(tl_output *out, const void *buf, size_t len, tl_error *err);
	/*
	 * Flushes and makes the bytes durable; 0 on success. Does not free.
	 * Writers buffer, so an output closed without finish() is abandoned:
	 * its tail may be missing and the caller should delete it.
	 */
	int (*finish)(tl_output *out, tl_error *err);
	void (*close)(tl_output *out);
	uint64_t offset;    /* bytes written so far */
	const char *name;
};

static inline int tl_input_read(tl_input *in, uint64_t offset, void *buf, size_t len, tl_error *err)
{
	return in->read_at(in, offset, buf, len, err);
}

static inline int tl_output_write(tl_output *out, const void *buf, size_t len, tl_error *err)
{
	return out->write(out, buf, len, err);
}

/* Closes and frees; NULL is fine. */
void tl_input_close(tl_input *in);
void tl_output_close(tl_output *out);

tl_input *tl_input_open_file(const char *path, tl_error *err);

/*
 * The local path a location in table metadata names: "file:///x" and
 * "file:/x" become "/x", plain paths stay (a new string, free() it).
 * Other schemes are TL_ERR_UNSUPPORTED: they are no local path (the local
 * storage of storage.h uses this; other code goes through storage.h).
 */
char *tl_local_path(const char *uri, tl_error *err);
/* tl_storage_open_read(uri): opened by the storage the URI's scheme chooses (storage.h). */
tl_input *tl_input_open_uri(const char *uri, tl_error *err);
/* A read-only view of memory the caller keeps alive (tests, fuzzing); NULL when out of memory. */
tl_input *tl_input_from_memory(const void *data, size_t len, const char *name);

/*
 * Creates path for writing. With exclusive set, an existing file is an
 * error (TL_ERR_CONFLICT) rather than being replaced.
 */
tl_output *tl_output_create_file(const char *path, int exclusive, tl_error *err);
/* Appends into a caller-owned tl_buf (tests, in-memory staging). */
struct tl_buf;
/* NULL when out of memory. */
tl_output *tl_output_to_buffer(struct tl_buf *buf, const char *name);

#endif
