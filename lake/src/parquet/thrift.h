/*
 * thrift.h: the Thrift compact protocol, the encoding of Parquet's footer
 * and page headers.
 *
 * The reader is a cursor over a byte range that never reads past its end
 * and bounds recursion, so hostile input fails with TL_ERR_CORRUPT. The
 * writer appends to a tl_buf and tracks field-id deltas per struct level.
 */
#ifndef TIERLAKE_PARQUET_THRIFT_H
#define TIERLAKE_PARQUET_THRIFT_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"

/* Compact protocol type ids. */
enum {
	TH_STOP = 0,
	TH_BOOL_TRUE = 1,
	TH_BOOL_FALSE = 2,
	TH_I8 = 3,
	TH_I16 = 4,
	TH_I32 = 5,
	TH_I64 = 6,
	TH_DOUBLE = 7,
	TH_BINARY = 8,
	TH_LIST = 9,
	TH_SET = 10,
	TH_MAP = 11,
	TH_STRUCT = 12,
	TH_UUID = 13              /* 16 bytes; Parquet has none, but skipping must know its size */
};

#define TH_MAX_DEPTH 32

typedef struct th_reader {
	const uint8_t *start;     /* for byte offsets in error messages */
	const uint8_t *p;
	const uint8_t *end;
	int depth;
	int16_t last_field[TH_MAX_DEPTH];
	/* A bool field's value travels in its field header. */
	bool pending_bool;
	tl_error *err;
	bool failed;
} th_reader;

void th_reader_init(th_reader *r, const uint8_t *data, size_t len, tl_error *err);

/* Every reading call returns 0 on success and -1 (with the error set) on failure. */
int th_read_struct_begin(th_reader *r);
int th_read_struct_end(th_reader *r);
/* Reads a field header; *type is TH_STOP at the end of the struct. */
int th_read_field(th_reader *r, int16_t *id, int *type);
/*
 * After a bool field's header, the value is the header's type (no bytes are
 * read); anywhere else (a list element) it is one byte: 1 true, 0 or 2 false.
 */
int th_read_bool(th_reader *r, int type, bool *v);
int th_read_i8(th_reader *r, int8_t *v);
int th_read_i16(th_reader *r, int16_t *v);
int th_read_i32(th_reader *r, int32_t *v);
int th_read_i64(th_reader *r, int64_t *v);
int th_read_double(th_reader *r, double *v);
/* A view of the bytes inside the input. */
int th_read_binary(th_reader *r, tl_bytes *v);
/*
 * A list header. *count is checked against the remaining input assuming each
 * element takes at least one byte, so a hostile count cannot size an allocation.
 * A list of bools reports TH_BOOL_TRUE as its element type; each element is
 * then read with th_read_bool, one byte each.
 */
int th_read_list_begin(th_reader *r, int *elem_type, int32_t *count);
/* Skips a value of the given type, recursing into containers (bounded). */
int th_skip(th_reader *r, int type);
/* Bytes consumed since init. */
size_t th_reader_offset(const th_reader *r, const uint8_t *start);

typedef struct th_writer {
	tl_buf *out;
	int depth;
	int16_t last_field[TH_MAX_DEPTH];
} th_writer;

void th_writer_init(th_writer *w, tl_buf *out);
void th_write_struct_begin(th_writer *w);
void th_write_struct_end(th_writer *w);    /* writes STOP */
void th_write_field(th_writer *w, int16_t id, int type);
/* A bool field is one call: header and value together. */
void th_write_bool_field(th_writer *w, int16_t id, bool v);
/* A bool list element (one byte); a bool field uses th_write_bool_field. */
void th_write_bool(th_writer *w, bool v);
void th_write_i8(th_writer *w, int8_t v);
void th_write_i16(th_writer *w, int16_t v);
void th_write_i32(th_writer *w, int32_t v);
void th_write_i64(th_writer *w, int64_t v);
void th_write_double(th_writer *w, double v);
void th_write_binary(th_writer *w, const void *data, size_t len);
/* elem_type TH_BOOL_TRUE for a list of bools. */
void th_write_list_begin(th_writer *w, int elem_type, int32_t count);

#endif
