/*
 * fuzz_avro.c: libFuzzer target for the Avro container file reader.
 *
 * The bytes are read as a whole file: header, schema, codec, every block
 * and every record, each value walked down to its leaves (so a value that
 * points outside its block is touched). The reader must either finish or
 * fail with an error set, never crash, hang or allocate without bound.
 * Whatever it accepts must also survive re-encoding with the file's own
 * schema and decoding back to the same bytes.
 *
 * Seeds (lake/tests/corpus/fuzz_avro) are the fixtures of
 * lake/tests/data/avro: fastavro files with every codec and a pyiceberg
 * manifest and manifest list.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/avro.h"
#include "tierlake/io.h"

#define FUZZ_REQUIRE(cond)                                                                   \
	do {                                                                                     \
		if (!(cond)) {                                                                       \
			fprintf(stderr, "fuzz_avro: %s:%d: broken promise: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                         \
		}                                                                                    \
	} while (0)

/* Touches every byte a value points at; returns a checksum so nothing is optimized away. */
static uint64_t walk(const tl_avro_value *v, int depth)
{
	FUZZ_REQUIRE(depth <= TL_AVRO_MAX_DEPTH + 1);
	FUZZ_REQUIRE(v->schema != NULL && v->schema->type != TL_AVRO_UNION);
	uint64_t sum = (uint64_t)v->schema->type;
	switch (v->schema->type) {
	case TL_AVRO_BYTES:
	case TL_AVRO_STRING:
	case TL_AVRO_FIXED:
		for (uint32_t i = 0; i < v->u.bytes.len; i++)
			sum += v->u.bytes.ptr[i];
		break;
	case TL_AVRO_ENUM:
		FUZZ_REQUIRE(v->u.symbol < v->schema->n_symbols);
		break;
	case TL_AVRO_ARRAY:
	case TL_AVRO_MAP:
		for (uint32_t i = 0; i < v->u.list.n; i++) {
			if (v->u.list.keys != NULL)
				for (uint32_t k = 0; k < v->u.list.keys[i].len; k++)
					sum += v->u.list.keys[i].ptr[k];
			sum += walk(&v->u.list.items[i], depth + 1);
		}
		break;
	case TL_AVRO_RECORD:
		for (uint32_t i = 0; i < v->schema->n_fields; i++) {
			int32_t id = v->schema->fields[i].field_id;
			if (id != TL_AVRO_NO_ID)
				FUZZ_REQUIRE(tl_avro_record_get_by_id(v, id) != NULL);
			sum += walk(&v->u.record.fields[i], depth + 1);
		}
		break;
	default:
		break;
	}
	return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tl_error err;
	tl_error_clear(&err);
	tl_input *in = tl_input_from_memory(data, size, "fuzz.avro");
	tl_avro_reader *r = tl_avro_reader_open(in, &err);
	if (r == NULL) {
		FUZZ_REQUIRE(err.code != TL_OK && err.message[0] != '\0');
		tl_input_close(in);
		return 0;
	}
	const tl_avro_schema *schema = tl_avro_reader_schema(r);
	tl_buf enc, again;
	tl_buf_init(&enc);
	tl_buf_init(&again);
	tl_arena arena;
	tl_arena_init(&arena, 4096);
	const tl_avro_value *v;
	int rc;
	volatile uint64_t sink = 0;
	while ((rc = tl_avro_reader_next(r, &v, &err)) == 1) {
		sink += walk(v, 0);
		/* What was decoded re-encodes, and decoding that gives the same encoding. */
		tl_buf_reset(&enc);
		tl_buf_reset(&again);
		tl_error e2;
		tl_error_clear(&e2);
		FUZZ_REQUIRE(tl_avro_encode(&enc, schema, v, &e2) == 0);
		tl_avro_value back;
		size_t used = 0;
		FUZZ_REQUIRE(tl_avro_decode(enc.data, enc.len, &used, schema, &arena, UINT64_MAX, &back, &e2) == 0);
		FUZZ_REQUIRE(used == enc.len);
		FUZZ_REQUIRE(tl_avro_encode(&again, schema, &back, &e2) == 0);
		FUZZ_REQUIRE(again.len == enc.len && memcmp(again.data, enc.data, enc.len) == 0);
		tl_arena_reset(&arena);
	}
	if (rc < 0)
		FUZZ_REQUIRE(err.code != TL_OK && err.message[0] != '\0');
	(void)sink;
	tl_arena_free(&arena);
	tl_buf_free(&enc);
	tl_buf_free(&again);
	tl_avro_reader_free(r);
	tl_input_close(in);
	return 0;
}
