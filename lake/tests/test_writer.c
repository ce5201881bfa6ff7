/*
 * test_writer.c: the Parquet writer, checked from the bytes it produces.
 *
 * Every case writes a real file into a scratch directory, then decodes the
 * footer and walks the page headers itself (so layout, sizes, encodings,
 * dictionary placement and CRCs are checked without trusting the reader),
 * and finally reads the values back through tl_pq_reader for a round trip.
 */
#include <math.h>
#include <stdlib.h>

#include "parquet/compress.h"
#include "parquet/encoding.h"
#include "parquet/metadata.h"
#include "parquet/writer_internal.h"
#include "deferred_check.h"
#include "test.h"
#include "tierlake/parquet.h"
#include "writer_test_files.h"

/* ------------------------------------------------------------ every type */

enum {
	C_BOOL, C_I32, C_I64, C_FLOAT, C_DOUBLE, C_STRING, C_BINARY, C_UUID, C_DATE, C_TS, C_TS_LOCAL_MS, C_TIME_US,
	C_TIME_MS, C_DEC32, C_DEC64, C_DEC_FLBA, C_DEC_BYTES, C_I8, C_U16, C_U32, C_U64, C_JSON, C_ENUM, C_TS_NS,
	NCOLS
};

static tl_pq_schema *every_type_schema(void)
{
	tl_pq_schema *s = tl_pq_schema_new();
	tl_pq_column c;
#define ADD(setup)                                                                                     \
	do {                                                                                              \
		setup;                                                                                        \
		c.field_id = s->ncolumns + 100;                                                               \
		tl_pq_schema_add(s, &c);                                                                      \
	} while (0)
	ADD(c = wt_column("b", TL_PQ_BOOLEAN, false));
	ADD(c = wt_column("i32", TL_PQ_INT32, true));
	ADD(c = wt_column("i64", TL_PQ_INT64, false));
	ADD(c = wt_column("f", TL_PQ_FLOAT, false));
	ADD(c = wt_column("d", TL_PQ_DOUBLE, false));
	ADD(c = wt_column("s", TL_PQ_BYTE_ARRAY, false); c.logical = TL_PQ_LOGICAL_STRING);
	ADD(c = wt_column("bin", TL_PQ_BYTE_ARRAY, false));
	ADD(c = wt_column("uuid", TL_PQ_FIXED_LEN_BYTE_ARRAY, false); c.type_length = 16; c.logical = TL_PQ_LOGICAL_UUID);
	ADD(c = wt_column("date", TL_PQ_INT32, false); c.logical = TL_PQ_LOGICAL_DATE);
	ADD(c = wt_column("ts", TL_PQ_INT64, false); c.logical = TL_PQ_LOGICAL_TIMESTAMP; c.unit = TL_PQ_MICROS;
	    c.utc_adjusted = true);
	ADD(c = wt_column("ts_local_ms", TL_PQ_INT64, false); c.logical = TL_PQ_LOGICAL_TIMESTAMP; c.unit = TL_PQ_MILLIS);
	ADD(c = wt_column("time_us", TL_PQ_INT64, false); c.logical = TL_PQ_LOGICAL_TIME; c.unit = TL_PQ_MICROS);
	ADD(c = wt_column("time_ms", TL_PQ_INT32, false); c.logical = TL_PQ_LOGICAL_TIME; c.unit = TL_PQ_MILLIS;
	    c.utc_adjusted = true);
	ADD(c = wt_column("dec32", TL_PQ_INT32, false); c.logical = TL_PQ_LOGICAL_DECIMAL; c.precision = 9; c.scale = 2);
	ADD(c = wt_column("dec64", TL_PQ_INT64, false); c.logical = TL_PQ_LOGICAL_DECIMAL; c.precision = 18; c.scale = 3);
	ADD(c = wt_column("dec_flba", TL_PQ_FIXED_LEN_BYTE_ARRAY, false); c.type_length = 9;
	    c.logical = TL_PQ_LOGICAL_DECIMAL; c.precision = 20; c.scale = 2);
	ADD(c = wt_column("dec_bytes", TL_PQ_BYTE_ARRAY, false); c.logical = TL_PQ_LOGICAL_DECIMAL; c.precision = 30;
	    c.scale = 5);
	ADD(c = wt_column("i8", TL_PQ_INT32, false); c.logical = TL_PQ_LOGICAL_INT; c.int_bit_width = 8;
	    c.int_signed = true);
	ADD(c = wt_column("u16", TL_PQ_INT32, false); c.logical = TL_PQ_LOGICAL_INT; c.int_bit_width = 16);
	ADD(c = wt_column("u32", TL_PQ_INT32, false); c.logical = TL_PQ_LOGICAL_INT; c.int_bit_width = 32);
	ADD(c = wt_column("u64", TL_PQ_INT64, false); c.logical = TL_PQ_LOGICAL_INT; c.int_bit_width = 64);
	ADD(c = wt_column("json", TL_PQ_BYTE_ARRAY, true); c.logical = TL_PQ_LOGICAL_JSON);
	ADD(c = wt_column("enum", TL_PQ_BYTE_ARRAY, false); c.logical = TL_PQ_LOGICAL_ENUM);
	ADD(c = wt_column("ts_ns", TL_PQ_INT64, false); c.logical = TL_PQ_LOGICAL_TIMESTAMP; c.unit = TL_PQ_NANOS;
	    c.utc_adjusted = true);
#undef ADD
	s->columns[C_ENUM].field_id = -1;   /* one column without a field id */
	return s;
}

static bool every_type_present(int col, int64_t r)
{
	if (col == C_I32 || col == C_JSON)
		return true;
	return wt_mix64((uint64_t)r * 31 + (uint64_t)col) % 5 != 0;
}

/* The value of row r in column col, as the batch holds it; byte values go to arena. */
static void every_type_value(int col, int64_t r, tl_vector *vec, int64_t slot, tl_arena *arena)
{
	uint64_t h = wt_mix64((uint64_t)r);
	char buf[64];
	uint8_t raw[16];
	switch (col) {
	case C_BOOL:
		vec->v.b[slot] = (r * 13 + 5) % 3 == 0;
		break;
	case C_I32:
		vec->v.i32[slot] = (int32_t)(uint32_t)(r * 2654435761u);
		break;
	case C_I64:
		vec->v.i64[slot] = (int64_t)(h >> 1) * (r % 2 ? -1 : 1);
		break;
	case C_FLOAT:
		vec->v.f32[slot] = r % 97 == 7 ? NAN : (float)(r - 2500) / 7.0f;
		break;
	case C_DOUBLE:
		vec->v.f64[slot] = r % 89 == 9 ? -0.0 : r % 89 == 10 ? INFINITY : (double)(r - 2500) * 1.25;
		break;
	case C_STRING:
		snprintf(buf, sizeof(buf), "s%d-\xc3\xa9", (int)(r % 37));
		vec->v.bytes[slot] = tl_arena_copy(arena, buf, (uint32_t)strlen(buf));
		break;
	case C_BINARY:
		for (int i = 0; i < 16; i++)
			raw[i] = (uint8_t)((r + i) * 0x3d);
		vec->v.bytes[slot] = tl_arena_copy(arena, raw, (uint32_t)(r % 11));
		break;
	case C_UUID:
		for (int i = 0; i < 16; i++)
			raw[i] = (uint8_t)(wt_mix64((uint64_t)r + (uint64_t)i * 7919) >> 7);
		vec->v.bytes[slot] = tl_arena_copy(arena, raw, 16);
		break;
	case C_DATE:
		vec->v.i32[slot] = (int32_t)(r - 2000);
		break;
	case C_TS:
		vec->v.i64[slot] = 1700000000000000LL + r * 1000003LL;
		break;
	case C_TS_LOCAL_MS:
		vec->v.i64[slot] = -86400000LL + r * 1001;
		break;
	case C_TIME_US:
		vec->v.i64[slot] = (r * 1000003LL) % 86400000000LL;
		break;
	case C_TIME_MS:
		vec->v.i32[slot] = (int32_t)((r * 1003) % 86400000);
		break;
	case C_DEC32:
		vec->v.i32[slot] = (int32_t)(r * 37 - 99999);
		break;
	case C_DEC64:
		vec->v.i64[slot] = r * 1000000007LL - 3000000000000LL;
		break;
	case C_DEC_FLBA: {
		int64_t v = r * 123456789LL - 500000000000LL;
		raw[0] = v < 0 ? 0xFF : 0x00;   /* sign extension to 9 bytes */
		for (int i = 0; i < 8; i++)
			raw[1 + i] = (uint8_t)((uint64_t)v >> (8 * (7 - i)));
		vec->v.bytes[slot] = tl_arena_copy(arena, raw, 9);
		break;
	}
	case C_DEC_BYTES: {
		/* Minimal big-endian two's complement: lengths vary with the value. */
		int64_t v = (r % 2 ? -1 : 1) * (int64_t)(h % 100000000);
		int len = 8;
		while (len > 1 && ((v >> (8 * (len - 1) - 1)) == 0 || (v >> (8 * (len - 1) - 1)) == -1))
			len--;
		for (int i = 0; i < len; i++)
			raw[i] = (uint8_t)((uint64_t)v >> (8 * (len - 1 - i)));
		vec->v.bytes[slot] = tl_arena_copy(arena, raw, (uint32_t)len);
		break;
	}
	case C_I8:
		vec->v.i32[slot] = (int32_t)(r % 256) - 128;
		break;
	case C_U16:
		vec->v.i32[slot] = (int32_t)(r % 65536);
		break;
	case C_U32:
		vec->v.i32[slot] = (int32_t)(uint32_t)(h >> 32);
		break;
	case C_U64:
		vec->v.i64[slot] = (int64_t)h;
		break;
	case C_JSON:
		snprintf(buf, sizeof(buf), "{\"r\":%d}", (int)(r % 5));
		vec->v.bytes[slot] = tl_arena_copy(arena, buf, (uint32_t)strlen(buf));
		break;
	case C_ENUM:
		vec->v.bytes[slot] = r % 3 ? wt_text("RED") : wt_text("GREEN");
		break;
	case C_TS_NS:
		vec->v.i64[slot] = 1700000000000000000LL + r;
		break;
	}
}

static void fill_every_type(tl_pq_batch *batch, int64_t first_row, int64_t n)
{
	tl_arena_reset(&batch->arena);
	batch->nrows = n;
	for (int col = 0; col < NCOLS; col++) {
		tl_vector *vec = &batch->columns[col];
		for (int64_t i = 0; i < n; i++) {
			int64_t r = first_row + i;
			bool present = every_type_present(col, r);
			if (vec->valid)
				vec->valid[i] = present;
			if (present)
				every_type_value(col, r, vec, i, &batch->arena);
		}
	}
}

typedef struct every_type_check {
	tl_pq_schema *schema;
	tl_pq_batch *expect;      /* one row, regenerated for each row checked */
} every_type_check;

/* Compares row `slot` of a batch read back with the expected row r. */
static int check_every_type_row(const tl_pq_batch *got, int64_t slot, int64_t r, const void *arg, tl_error *err)
{
	const every_type_check *check = arg;
	const tl_pq_schema *schema = check->schema;
	tl_pq_batch *expect = check->expect;
	fill_every_type(expect, r, 1);
	int rc = 0;
	for (int col = 0; col < NCOLS && rc == 0; col++) {
		const tl_vector *g = &got->columns[col], *e = &expect->columns[col];
		bool present = every_type_present(col, r);
		if (tl_vector_is_null(g, slot) == present) {
			rc = tl_error_set(err, TL_ERR_CORRUPT, "row %lld column %d: null mismatch", (long long)r, col);
			break;
		}
		if (!present)
			continue;
		bool same;
		switch (schema->columns[col].physical) {
		case TL_PQ_BOOLEAN:
			same = g->v.b[slot] == e->v.b[0];
			break;
		case TL_PQ_INT32:
			same = g->v.i32[slot] == e->v.i32[0];
			break;
		case TL_PQ_INT64:
			same = g->v.i64[slot] == e->v.i64[0];
			break;
		case TL_PQ_FLOAT:
			same = memcmp(&g->v.f32[slot], &e->v.f32[0], 4) == 0;
			break;
		case TL_PQ_DOUBLE:
			same = memcmp(&g->v.f64[slot], &e->v.f64[0], 8) == 0;
			break;
		default:
			same = wt_bytes_equal(g->v.bytes[slot], e->v.bytes[0].ptr, e->v.bytes[0].len);
			break;
		}
		if (!same)
			rc = tl_error_set(err, TL_ERR_CORRUPT, "row %lld column %s: value differs", (long long)r,
			                  schema->columns[col].name);
	}
	return rc;
}

static int read_back_every_type(const char *path, int64_t rows, tl_error *err)
{
	every_type_check check;
	check.schema = every_type_schema();
	check.expect = tl_pq_batch_new(check.schema, 1);
	int rc = wt_read_back(path, rows, 777, check_every_type_row, &check, err);
	tl_pq_batch_free(check.expect);
	tl_pq_schema_free(check.schema);
	return rc;
}

static void fill_every_type_rows(tl_pq_batch *batch, int64_t first_row, int64_t n, const void *arg)
{
	fill_every_type(batch, first_row, n);
}

static int write_every_type(const char *name, const tl_pq_writer_options *opts, int64_t rows, int64_t batch_rows,
                            written *f, tl_error *err)
{
	tl_pq_schema *schema = every_type_schema();
	int rc = wt_write_generated(name, schema, opts, rows, batch_rows, fill_every_type_rows, NULL, f, err);
	tl_pq_schema_free(schema);
	return rc;
}

TEST(writer_footer_describes_types_logical_types_and_field_ids)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_writer_options o;
	tl_pq_writer_options_init(&o);
	written f;
	CHECK_OK(write_every_type("footer_types", &o, 100, 100, &f, &err), &err);
	const pq_file_metadata *md = &f.md;

	CHECK_INT(md->version, 2);
	CHECK_INT(md->num_rows, 100);
	CHECK(md->has_created_by);
	CHECK(wt_bytes_equal(md->created_by, "tierdb version 0.1.0", 20));
	CHECK(md->has_column_orders);
	CHECK_INT(md->nkey_value, 0);
	CHECK_INT(md->nschema, NCOLS + 1);
	CHECK(wt_bytes_equal(md->schema[0].name, "schema", 6));
	CHECK(!md->schema[0].has_type);
	CHECK_INT(md->schema[0].num_children, NCOLS);

	const pq_schema_element *e = &md->schema[1];
#define EL(col) (&e[(col)])
	for (int col = 0; col < NCOLS; col++) {
		CHECK(EL(col)->has_type);
		CHECK(EL(col)->has_repetition);
		CHECK_INT(EL(col)->repetition, col == C_I32 || col == C_JSON ? PQ_REQUIRED : PQ_OPTIONAL);
		CHECK_INT(EL(col)->has_field_id, col != C_ENUM);
		if (col != C_ENUM)
			CHECK_INT(EL(col)->field_id, col + 100);
		CHECK_INT(EL(col)->num_children, 0);
	}
	CHECK(wt_bytes_equal(EL(C_TS)->name, "ts", 2));
	CHECK_INT(EL(C_BOOL)->type, TL_PQ_BOOLEAN);
	CHECK_INT(EL(C_BOOL)->converted_type, PQ_CT_NONE);
	CHECK_INT(EL(C_BOOL)->logical.kind, PQ_LT_NONE);

	CHECK_INT(EL(C_STRING)->logical.kind, PQ_LT_STRING);
	CHECK_INT(EL(C_STRING)->converted_type, PQ_CT_UTF8);
	CHECK_INT(EL(C_BINARY)->logical.kind, PQ_LT_NONE);
	CHECK_INT(EL(C_BINARY)->converted_type, PQ_CT_NONE);

	CHECK_INT(EL(C_UUID)->type, TL_PQ_FIXED_LEN_BYTE_ARRAY);
	CHECK_INT(EL(C_UUID)->type_length, 16);
	CHECK_INT(EL(C_UUID)->logical.kind, PQ_LT_UUID);
	CHECK_INT(EL(C_UUID)->converted_type, PQ_CT_NONE);

	CHECK_INT(EL(C_DATE)->logical.kind, PQ_LT_DATE);
	CHECK_INT(EL(C_DATE)->converted_type, PQ_CT_DATE);

	CHECK_INT(EL(C_TS)->logical.kind, PQ_LT_TIMESTAMP);
	CHECK_INT(EL(C_TS)->logical.unit, TL_PQ_MICROS);
	CHECK(EL(C_TS)->logical.utc_adjusted);
	CHECK_INT(EL(C_TS)->converted_type, PQ_CT_TIMESTAMP_MICROS);
	/* Local (not UTC-adjusted) timestamps have no legacy equivalent. */
	CHECK_INT(EL(C_TS_LOCAL_MS)->logical.unit, TL_PQ_MILLIS);
	CHECK(!EL(C_TS_LOCAL_MS)->logical.utc_adjusted);
	CHECK_INT(EL(C_TS_LOCAL_MS)->converted_type, PQ_CT_NONE);
	CHECK_INT(EL(C_TS_NS)->logical.unit, TL_PQ_NANOS);
	CHECK_INT(EL(C_TS_NS)->converted_type, PQ_CT_NONE);

	CHECK_INT(EL(C_TIME_US)->logical.kind, PQ_LT_TIME);
	CHECK_INT(EL(C_TIME_US)->logical.unit, TL_PQ_MICROS);
	CHECK_INT(EL(C_TIME_US)->converted_type, PQ_CT_NONE);
	CHECK_INT(EL(C_TIME_MS)->type, TL_PQ_INT32);
	CHECK_INT(EL(C_TIME_MS)->logical.unit, TL_PQ_MILLIS);
	CHECK_INT(EL(C_TIME_MS)->converted_type, PQ_CT_TIME_MILLIS);

	CHECK_INT(EL(C_DEC32)->logical.kind, PQ_LT_DECIMAL);
	CHECK_INT(EL(C_DEC32)->logical.decimal_precision, 9);
	CHECK_INT(EL(C_DEC32)->logical.decimal_scale, 2);
	CHECK_INT(EL(C_DEC32)->converted_type, PQ_CT_DECIMAL);
	CHECK_INT(EL(C_DEC32)->precision, 9);
	CHECK_INT(EL(C_DEC32)->scale, 2);
	CHECK_INT(EL(C_DEC64)->precision, 18);
	CHECK_INT(EL(C_DEC_FLBA)->type_length, 9);
	CHECK_INT(EL(C_DEC_FLBA)->precision, 20);
	CHECK_INT(EL(C_DEC_BYTES)->type, TL_PQ_BYTE_ARRAY);
	CHECK_INT(EL(C_DEC_BYTES)->scale, 5);

	CHECK_INT(EL(C_I8)->logical.kind, PQ_LT_INTEGER);
	CHECK_INT(EL(C_I8)->logical.int_bit_width, 8);
	CHECK(EL(C_I8)->logical.int_signed);
	CHECK_INT(EL(C_I8)->converted_type, PQ_CT_INT_8);
	CHECK_INT(EL(C_U16)->converted_type, PQ_CT_UINT_16);
	CHECK(!EL(C_U16)->logical.int_signed);
	CHECK_INT(EL(C_U32)->converted_type, PQ_CT_UINT_32);
	CHECK_INT(EL(C_U64)->converted_type, PQ_CT_UINT_64);
	CHECK_INT(EL(C_U64)->logical.int_bit_width, 64);

	CHECK_INT(EL(C_JSON)->logical.kind, PQ_LT_JSON);
	CHECK_INT(EL(C_JSON)->converted_type, PQ_CT_JSON);
	CHECK_INT(EL(C_ENUM)->logical.kind, PQ_LT_ENUM);
	CHECK_INT(EL(C_ENUM)->converted_type, PQ_CT_ENUM);
#undef EL

	/* Column chunks: path, type, codec, value counts including nulls. */
	CHECK_INT(md->nrow_groups, 1);
	for (int col = 0; col < NCOLS; col++) {
		const pq_column_chunk *cc = &md->row_groups[0].columns[col];
		CHECK(cc->has_meta_data);
		CHECK_INT(cc->meta_data.type, md->schema[col + 1].type);
		CHECK_INT(cc->meta_data.npath, 1);
		CHECK(wt_bytes_equal(cc->meta_data.path_in_schema[0], md->schema[col + 1].name.ptr,
		                  md->schema[col + 1].name.len));
		CHECK_INT(cc->meta_data.codec, TL_PQ_ZSTD);
		CHECK_INT(cc->meta_data.num_values, 100);
		CHECK(cc->meta_data.has_statistics);
		CHECK(cc->meta_data.statistics.has_null_count);
	}
	wt_written_free(&f);
}

TEST(writer_round_trips_every_type_codec_and_dictionary_setting)
{
	const tl_pq_codec codecs[] = {TL_PQ_UNCOMPRESSED, TL_PQ_SNAPPY, TL_PQ_GZIP, TL_PQ_ZSTD, TL_PQ_LZ4_RAW};
	for (size_t i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++) {
		for (int dictionary = 0; dictionary < 2; dictionary++) {
			tl_error err;
			tl_error_clear(&err);
			tl_pq_writer_options o;
			tl_pq_writer_options_init(&o);
			o.codec = codecs[i];
			o.dictionary = dictionary;
			o.page_rows = 700;
			o.row_group_rows = 2500;
			char name[64];
			snprintf(name, sizeof(name), "round_trip_%s_%d", tl_pq_codec_name(codecs[i]), dictionary);
			written f;
			CHECK_OK(write_every_type(name, &o, 6000, 1000, &f, &err), &err);
			CHECK_INT(f.md.nrow_groups, 3);
			CHECK_INT(f.md.row_groups[2].num_rows, 1000);
			page_view *pages = wt_page_buffer();
			for (int g = 0; g < f.md.nrow_groups; g++)
				for (int col = 0; col < NCOLS; col++) {
					const pq_column_meta *m = wt_chunk_meta(&f, g, col);
					int npages;
					CHECK_OK(wt_chunk_pages(&f, m, pages, &npages, &err), &err);
					CHECK_INT(m->codec, codecs[i]);
					bool dict_page = dictionary && col != C_BOOL;
					CHECK_INT(m->has_dictionary_page_offset, dict_page);
					/* Pages decompress to exactly their uncompressed size. */
					for (int p = 0; p < npages; p++) {
						size_t len = (size_t)pages[p].h.uncompressed_page_size;
						uint8_t *dst = tl_malloc(len);
						int rc = pq_decompress(codecs[i], pages[p].body, pages[p].body_len, dst, len, &err);
						free(dst);
						CHECK_OK(rc, &err);
					}
				}
			free(pages);
			CHECK_OK(read_back_every_type(f.path, 6000, &err), &err);
			wt_written_free(&f);
		}
	}
}

/* ------------------------------------------------------------ dictionary and pages */

TEST(writer_dictionary_page_comes_first_and_encodings_are_listed)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_schema *s = tl_pq_schema_new();
	tl_pq_column c = wt_column("kind", TL_PQ_BYTE_ARRAY, false);
	c.logical = TL_PQ_LOGICAL_STRING;
	tl_pq_schema_add(s, &c);
	c = wt_column("flag", TL_PQ_BOOLEAN, true);
	tl_pq_schema_add(s, &c);
	c = wt_column("n", TL_PQ_INT32, true);
	tl_pq_schema_add(s, &c);
	static const char *kinds[] = {"click", "view", "buy"};
	tl_pq_batch *b = tl_pq_batch_new(s, 5000);
	b->nrows = 5000;
	for (int i = 0; i < 5000; i++) {
		b->columns[0].v.bytes[i] = wt_text(kinds[i % 3]);
		b->columns[0].valid[i] = i % 10 != 0;
		b->columns[1].v.b[i] = i % 2;
		b->columns[2].v.i32[i] = i % 50 - 25;
	}
	page_view *pages = wt_page_buffer();
	for (int dictionary = 0; dictionary < 2; dictionary++) {
		tl_pq_writer_options o;
		tl_pq_writer_options_init(&o);
		o.dictionary = dictionary;
		o.page_rows = 1000;
		written f;
		CHECK_OK(wt_write_one(dictionary ? "dict_on" : "dict_off", s, &o, b, &f, &err), &err);
		for (int col = 0; col < 3; col++) {
			const pq_column_meta *m = wt_chunk_meta(&f, 0, col);
			int npages;
			CHECK_OK(wt_chunk_pages(&f, m, pages, &npages, &err), &err);
			bool dict = dictionary && col != 1;   /* booleans never use a dictionary */
			CHECK_INT(m->has_dictionary_page_offset, dict);
			CHECK_INT(npages, 5 + dict);
			CHECK_INT(f.md.row_groups[0].columns[col].file_offset, pages[0].offset);
			if (dict) {
				CHECK_INT(m->dictionary_page_offset, pages[0].offset);
				CHECK_INT(m->data_page_offset, pages[1].offset);
				CHECK_INT(pages[0].h.type, PQ_PAGE_DICTIONARY);
				CHECK(pages[0].h.has_dictionary_page_header);
				CHECK_INT(pages[0].h.dictionary_page_header.encoding, PQ_ENC_PLAIN);
				CHECK_INT(pages[0].h.dictionary_page_header.num_values, col == 0 ? 3 : 50);
				CHECK_INT(m->nencodings, 3);
				CHECK(wt_has_encoding(m, PQ_ENC_PLAIN) && wt_has_encoding(m, PQ_ENC_RLE) &&
				      wt_has_encoding(m, PQ_ENC_RLE_DICTIONARY));
			} else {
				CHECK_INT(m->data_page_offset, pages[0].offset);
				CHECK_INT(m->nencodings, 2);
				CHECK(wt_has_encoding(m, PQ_ENC_PLAIN) && wt_has_encoding(m, PQ_ENC_RLE));
			}
			for (int p = dict; p < npages; p++) {
				CHECK_INT(pages[p].h.type, PQ_PAGE_DATA);
				CHECK(pages[p].h.has_data_page_header);
				CHECK_INT(pages[p].h.data_page_header.num_values, 1000);
				CHECK_INT(pages[p].h.data_page_header.encoding, dict ? PQ_ENC_RLE_DICTIONARY : PQ_ENC_PLAIN);
				CHECK_INT(pages[p].h.data_page_header.definition_level_encoding, PQ_ENC_RLE);
				CHECK(pages[p].h.has_crc);   /* on by default */
			}
		}
		/* The dictionary made the string chunk much smaller. */
		if (dictionary)
			CHECK(wt_chunk_meta(&f, 0, 0)->total_uncompressed_size < 5000);
		else
			CHECK(wt_chunk_meta(&f, 0, 0)->total_uncompressed_size > 5000 * 4);
		wt_written_free(&f);
	}
	free(pages);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
}


static int64_t identity(int64_t row)
{
	return row * 3 - 7;
}

static bool every_third_null(int64_t row)
{
	return row % 3 != 1;
}

TEST(writer_dictionary_falls_back_to_plain_when_its_budget_is_spent)
{
	tl_error err;
	tl_error_clear(&err);
	for (int optional = 0; optional < 2; optional++) {
		tl_pq_schema *s = wt_one_column_schema(wt_column("id", TL_PQ_INT64, !optional));
		tl_pq_batch *b = tl_pq_batch_new(s, 10000);
		b->nrows = 10000;
		int64_t distinct = 0;
		for (int i = 0; i < 10000; i++) {
			b->columns[0].v.i64[i] = identity(i);
			if (optional)
				b->columns[0].valid[i] = every_third_null(i);
		}
		tl_pq_writer_options o;
		tl_pq_writer_options_init(&o);
		o.page_rows = 300;
		o.dictionary_bytes = 8 * 1000 + 7;   /* room for exactly 1,000 values */
		o.dictionary_early_fallback = false; /* its unique values would give it up at the first page */
		o.write_page_crc = true;
		written f;
		CHECK_OK(wt_write_one(optional ? "fallback_optional" : "fallback_required", s, &o, b, &f, &err), &err);
		const pq_column_meta *m = wt_chunk_meta(&f, 0, 0);
		CHECK(m->has_dictionary_page_offset);
		CHECK_INT(m->nencodings, 3);
		CHECK(wt_has_encoding(m, PQ_ENC_PLAIN) && wt_has_encoding(m, PQ_ENC_RLE_DICTIONARY));
		page_view *pages = wt_page_buffer();
		int npages;
		CHECK_OK(wt_chunk_pages(&f, m, pages, &npages, &err), &err);
		CHECK_INT(pages[0].h.type, PQ_PAGE_DICTIONARY);
		CHECK_INT(pages[0].h.dictionary_page_header.num_values, 1000);
		CHECK_INT(pages[0].h.uncompressed_page_size, 8000);
		/* Dictionary pages first, then PLAIN to the end; rows add up. */
		int64_t rows = 0, dict_rows = 0;
		bool plain_seen = false;
		for (int p = 1; p < npages; p++) {
			const pq_data_page_header *dp = &pages[p].h.data_page_header;
			if (dp->encoding == PQ_ENC_PLAIN)
				plain_seen = true;
			else {
				CHECK_INT(dp->encoding, PQ_ENC_RLE_DICTIONARY);
				CHECK(!plain_seen);
				dict_rows += dp->num_values;
			}
			CHECK(dp->num_values <= 300);
			rows += dp->num_values;
			CHECK(pages[p].h.has_crc);
		}
		CHECK(plain_seen);
		CHECK_INT(rows, 10000);
		/* The dictionary holds the first 1,000 non-null values and stops
		 * exactly at the row of the 1,001st. */
		for (int64_t r = 0; r < 10000; r++)
			if (!optional || every_third_null(r))
				if (++distinct == 1001) {
					CHECK_INT(dict_rows, r);
					break;
				}
		free(pages);
		CHECK_INT(wt_chunk_stats(&f, 0, 0)->null_count, optional ? 3333 : 0);
		CHECK_INT(wt_stat_i64(wt_chunk_stats(&f, 0, 0)->min_value), identity(0));
		CHECK_INT(wt_stat_i64(wt_chunk_stats(&f, 0, 0)->max_value), identity(9999));
		CHECK_OK(wt_read_back_int64(f.path, 10000, identity, optional ? every_third_null : NULL, &err), &err);
		wt_written_free(&f);
		tl_pq_batch_free(b);
		tl_pq_schema_free(s);
	}
}

/* 300 distinct values, each page of 1,000 rows holding every one of them. */
static int64_t one_of_300(int64_t row)
{
	return (row * 7) % 300 - 150;
}

/* Row i's value as 16 bytes of text. */
static void value_text(int64_t v, char out[17])
{
	snprintf(out, 17, "v%015lld", (long long)v);
}

/* Reads back a one-column BYTE_ARRAY file written from value_text(value(row)), nulls where !present(row). */
static void check_texts(const char *path, int64_t rows, int64_t (*value)(int64_t), bool (*present)(int64_t))
{
	tl_error err;
	tl_error_clear(&err);
	tl_input *in = tl_input_open_file(path, &err);
	tl_pq_reader *r = in ? tl_pq_reader_open(in, &err) : NULL;
	CHECK_OK(r != NULL ? 0 : -1, &err);
	tl_pq_batch *got = tl_pq_reader_batch_new(r, rows);
	char want[17];
	int64_t row = 0, n;
	bool right = true;
	while ((n = tl_pq_reader_next(r, got, &err)) > 0) {
		for (int64_t i = 0; i < n; i++, row++) {
			bool here = present == NULL || present(row);
			const tl_bytes *v = &got->columns[0].v.bytes[i];
			value_text(value(row), want);
			right &= tl_vector_is_null(&got->columns[0], i) != here &&
			         (!here || (v->len == 16 && memcmp(v->ptr, want, 16) == 0));
		}
	}
	tl_pq_batch_free(got);
	CHECK_INT(n, 0);
	CHECK_INT(row, rows);
	CHECK(right);
	tl_pq_reader_free(r);
	tl_input_close(in);
}

/*
 * What the first full page of a chunk says decides whether it keeps its
 * dictionary: values so nearly unique that the dictionary would outgrow
 * its budget before the row group ends give it up, and that page is
 * re-encoded PLAIN; values that repeat keep it, and so do unique values
 * in row groups small enough for the dictionary to hold them all; with
 * the judgement off the dictionary falls back at its budget only.
 */
TEST(writer_dictionary_is_given_up_at_the_first_page_when_it_would_outgrow_its_budget)
{
	tl_error err;
	tl_error_clear(&err);
	static const struct {
		int64_t (*value)(int64_t);
		bool nulls, early;
		int64_t row_group_rows;
		bool keeps;
	} cases[] = {
		{identity, false, true, 16000, false},   /* 16,000 distinct x 8 or 20 bytes: over the 32 KiB budget */
		{identity, true, true, 16000, false},    /* the same with a third of the rows null */
		{one_of_300, true, true, 16000, true},   /* 300 distinct: the dictionary pays */
		{identity, false, true, 1000, true},     /* 1,000-row row groups: it holds every value */
		{identity, false, false, 16000, true},   /* judgement off: kept until its budget is spent */
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		for (int bytes = 0; bytes < 2; bytes++) {
			bool optional = cases[k].nulls || bytes;
			tl_pq_schema *s = wt_one_column_schema(wt_column("v", bytes ? TL_PQ_BYTE_ARRAY : TL_PQ_INT64, !optional));
			tl_pq_batch *b = tl_pq_batch_new(s, 16000);
			char (*text)[17] = malloc(sizeof(*text) * 16000);
			b->nrows = 16000;
			for (int64_t i = 0; i < 16000; i++) {
				int64_t v = cases[k].value(i);
				value_text(v, text[i]);
				if (bytes)
					b->columns[0].v.bytes[i] = wt_text(text[i]);
				else
					b->columns[0].v.i64[i] = v;
				if (optional)
					b->columns[0].valid[i] = !cases[k].nulls || every_third_null(i);
			}
			tl_pq_writer_options o = wt_uncompressed_options();
			o.page_rows = 1000;
			o.row_group_rows = cases[k].row_group_rows;
			o.dictionary_bytes = 32 * 1024;
			o.dictionary_early_fallback = cases[k].early;
			written f;
			CHECK_OK(wt_write_one("dict_judged", s, &o, b, &f, &err), &err);
			const pq_column_meta *m = wt_chunk_meta(&f, 0, 0);
			page_view *pages = wt_page_buffer();
			int npages, dictionary_pages = 0;
			CHECK_OK(wt_chunk_pages(&f, m, pages, &npages, &err), &err);
			for (int p = 0; p < npages; p++)
				dictionary_pages += pages[p].h.type == PQ_PAGE_DATA &&
				                    pages[p].h.data_page_header.encoding == PQ_ENC_RLE_DICTIONARY;
			free(pages);
			if (m->has_dictionary_page_offset != cases[k].keeps || (dictionary_pages > 0) != cases[k].keeps)
				tl_test_fail(__FILE__, __LINE__, "case %zu (%s): %s dictionary page, %d dictionary-encoded pages", k,
				             bytes ? "strings" : "numbers", m->has_dictionary_page_offset ? "a" : "no",
				             dictionary_pages);
			/* A page encoded with the dictionary, then re-encoded without: every value reads back. */
			bool (*present)(int64_t) = cases[k].nulls ? every_third_null : NULL;
			if (bytes)
				check_texts(f.path, 16000, cases[k].value, present);
			else
				CHECK_OK(wt_read_back_int64(f.path, 16000, cases[k].value, present, &err), &err);
			wt_written_free(&f);
			free(text);
			tl_pq_batch_free(b);
			tl_pq_schema_free(s);
			if (tl_test_failed())
				return;
		}
	}
}

TEST(writer_dictionary_budget_of_zero_writes_plain_only)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_schema *s = wt_one_column_schema(wt_column("s", TL_PQ_BYTE_ARRAY, false));
	tl_pq_batch *b = tl_pq_batch_new(s, 100);
	b->nrows = 100;
	for (int i = 0; i < 100; i++) {
		b->columns[0].v.bytes[i] = wt_text("same");
		b->columns[0].valid[i] = i >= 10;   /* a first piece of nulls only */
	}
	tl_pq_writer_options o = wt_uncompressed_options();
	o.dictionary_bytes = 0;
	written f;
	CHECK_OK(wt_write_one("dict_zero", s, &o, b, &f, &err), &err);
	const pq_column_meta *m = wt_chunk_meta(&f, 0, 0);
	CHECK(!m->has_dictionary_page_offset);
	CHECK_INT(m->nencodings, 2);
	CHECK(!wt_has_encoding(m, PQ_ENC_RLE_DICTIONARY));
	page_view *pages = wt_page_buffer();
	int npages;
	CHECK_OK(wt_chunk_pages(&f, m, pages, &npages, &err), &err);
	int64_t rows = 0;
	for (int p = 0; p < npages; p++) {
		CHECK_INT(pages[p].h.data_page_header.encoding, PQ_ENC_PLAIN);
		rows += pages[p].h.data_page_header.num_values;
	}
	CHECK_INT(rows, 100);
	CHECK_INT(wt_chunk_stats(&f, 0, 0)->null_count, 10);
	free(pages);
	wt_written_free(&f);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
}

TEST(writer_each_row_group_starts_a_fresh_dictionary)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_schema *s = wt_one_column_schema(wt_column("id", TL_PQ_INT64, true));
	tl_pq_batch *b = tl_pq_batch_new(s, 4000);
	b->nrows = 4000;
	for (int i = 0; i < 4000; i++)
		b->columns[0].v.i64[i] = identity(i);
	tl_pq_writer_options o;
	tl_pq_writer_options_init(&o);
	o.row_group_rows = 2000;
	o.dictionary_bytes = 8000;
	written f;
	CHECK_OK(wt_write_one("dict_per_row_group", s, &o, b, &f, &err), &err);
	CHECK_INT(f.md.nrow_groups, 2);
	page_view *pages = wt_page_buffer();
	for (int g = 0; g < 2; g++) {
		const pq_column_meta *m = wt_chunk_meta(&f, g, 0);
		int npages;
		CHECK_OK(wt_chunk_pages(&f, m, pages, &npages, &err), &err);
		CHECK_INT(pages[0].h.type, PQ_PAGE_DICTIONARY);
		CHECK_INT(pages[0].h.dictionary_page_header.num_values, 1000);
		CHECK_INT(pages[1].h.data_page_header.encoding, PQ_ENC_RLE_DICTIONARY);
		CHECK_INT(pages[npages - 1].h.data_page_header.encoding, PQ_ENC_PLAIN);
		CHECK_INT(wt_stat_i64(wt_chunk_stats(&f, g, 0)->min_value), identity(g * 2000));
		CHECK_INT(wt_stat_i64(wt_chunk_stats(&f, g, 0)->max_value), identity(g * 2000 + 1999));
	}
	free(pages);
	CHECK_OK(wt_read_back_int64(f.path, 4000, identity, NULL, &err), &err);
	wt_written_free(&f);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
}

TEST(writer_pages_close_at_their_row_and_byte_limits)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_schema *s = tl_pq_schema_new();
	tl_pq_column c = wt_column("n", TL_PQ_INT64, true);
	tl_pq_schema_add(s, &c);
	c = wt_column("s", TL_PQ_BYTE_ARRAY, false);
	tl_pq_schema_add(s, &c);
	c = wt_column("b", TL_PQ_BOOLEAN, true);
	tl_pq_schema_add(s, &c);
	char text50[51];
	memset(text50, 'q', 50);
	text50[50] = '\0';
	tl_pq_batch *b = tl_pq_batch_new(s, 3000);
	b->nrows = 3000;
	for (int i = 0; i < 3000; i++) {
		b->columns[0].v.i64[i] = identity(i);
		b->columns[1].v.bytes[i] = (tl_bytes){(const uint8_t *)text50, (uint32_t)(i % 51)};
		b->columns[2].v.b[i] = i % 3 == 0;
	}
	page_view *pages = wt_page_buffer();

	/* By rows. */
	tl_pq_writer_options o = wt_uncompressed_options();
	o.dictionary = false;
	o.page_rows = 100;
	written f;
	CHECK_OK(wt_write_one("page_rows", s, &o, b, &f, &err), &err);
	for (int col = 0; col < 3; col++) {
		int npages;
		CHECK_OK(wt_chunk_pages(&f, wt_chunk_meta(&f, 0, col), pages, &npages, &err), &err);
		CHECK_INT(npages, 30);
		for (int p = 0; p < npages; p++)
			CHECK_INT(pages[p].h.data_page_header.num_values, 100);
	}
	wt_written_free(&f);

	/* By bytes: pages close at the value that reaches the limit. */
	o.page_rows = 20000;
	o.page_bytes = 1000;
	CHECK_OK(wt_write_one("page_bytes", s, &o, b, &f, &err), &err);
	int npages;
	CHECK_OK(wt_chunk_pages(&f, wt_chunk_meta(&f, 0, 0), pages, &npages, &err), &err);
	CHECK_INT(npages, 24);   /* 125 values of 8 bytes each */
	for (int p = 0; p < npages; p++)
		CHECK_INT(pages[p].h.uncompressed_page_size, 1000);
	CHECK_OK(wt_chunk_pages(&f, wt_chunk_meta(&f, 0, 1), pages, &npages, &err), &err);
	CHECK(npages > 50);
	int64_t rows = 0;
	for (int p = 0; p < npages; p++) {
		/* levels (with their 4-byte length) + values: at most one value past the limit */
		CHECK(pages[p].h.uncompressed_page_size < 1000 + 54 + 64);
		rows += pages[p].h.data_page_header.num_values;
	}
	CHECK_INT(rows, 3000);
	CHECK_OK(wt_chunk_pages(&f, wt_chunk_meta(&f, 0, 2), pages, &npages, &err), &err);
	CHECK_INT(npages, 1);   /* 3,000 booleans take 375 bytes */
	wt_written_free(&f);

	/* Dictionary indices count by their encoded width. */
	o.dictionary = true;
	o.page_bytes = 100;
	CHECK_OK(wt_write_one("page_bytes_dict", s, &o, b, &f, &err), &err);
	CHECK_OK(wt_chunk_pages(&f, wt_chunk_meta(&f, 0, 1), pages, &npages, &err), &err);
	CHECK_INT(pages[0].h.type, PQ_PAGE_DICTIONARY);
	CHECK(npages > 10);
	/* 51 distinct values: 6-bit indices once the first page has met them all
	 * (that page was sized while the index width was still growing). */
	for (int p = 2; p < npages; p++)
		CHECK(pages[p].h.data_page_header.num_values <= 100 * 8 / 6 + 1);
	wt_written_free(&f);

	free(pages);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
}

TEST(writer_row_groups_close_at_their_row_and_byte_limits)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_schema *s = tl_pq_schema_new();
	tl_pq_column c = wt_column("n", TL_PQ_INT64, true);
	tl_pq_schema_add(s, &c);
	c = wt_column("s", TL_PQ_BYTE_ARRAY, false);
	tl_pq_schema_add(s, &c);
	tl_pq_batch *b = tl_pq_batch_new(s, 1000);
	b->nrows = 1000;
	for (int i = 0; i < 1000; i++) {
		b->columns[0].v.i64[i] = identity(i);
		b->columns[1].v.bytes[i] = wt_text(i % 2 ? "odd" : "even");
		b->columns[1].valid[i] = i % 5 != 0;
	}
	tl_pq_writer_options o;
	tl_pq_writer_options_init(&o);
	o.row_group_rows = 300;
	written f;
	/* Two batches: row groups span batch boundaries. */
	tl_pq_batch *batches[2] = {b, b};
	CHECK_OK(wt_write_file("row_group_rows", s, &o, batches, 2, &f, &err), &err);
	CHECK_INT(f.md.num_rows, 2000);
	CHECK_INT(f.md.nrow_groups, 7);
	int64_t expect_offset = 4;
	for (int g = 0; g < 7; g++) {
		const pq_row_group *rg = &f.md.row_groups[g];
		CHECK_INT(rg->num_rows, g < 6 ? 300 : 200);
		CHECK(rg->has_ordinal);
		CHECK_INT(rg->ordinal, g);
		CHECK(rg->has_file_offset);
		CHECK_INT(rg->file_offset, expect_offset);
		int64_t compressed = 0, uncompressed = 0;
		for (int col = 0; col < 2; col++) {
			const pq_column_chunk *cc = &rg->columns[col];
			const pq_column_meta *m = &cc->meta_data;
			/* Chunks follow one another with no gap. */
			CHECK_INT(cc->file_offset, expect_offset);
			CHECK_INT(m->has_dictionary_page_offset ? m->dictionary_page_offset : m->data_page_offset,
			          expect_offset);
			CHECK_INT(m->num_values, rg->num_rows);
			expect_offset += m->total_compressed_size;
			compressed += m->total_compressed_size;
			uncompressed += m->total_uncompressed_size;
		}
		CHECK(rg->has_total_compressed_size);
		CHECK_INT(rg->total_compressed_size, compressed);
		CHECK_INT(rg->total_byte_size, uncompressed);
	}
	CHECK_INT(expect_offset, (int64_t)f.data_end);
	/* Statistics are per row group: rows 600..899 of the first batch. */
	CHECK_INT(wt_stat_i64(wt_chunk_stats(&f, 2, 0)->min_value), identity(600));
	CHECK_INT(wt_stat_i64(wt_chunk_stats(&f, 2, 0)->max_value), identity(899));
	CHECK_INT(wt_chunk_stats(&f, 2, 1)->null_count, 60);
	wt_written_free(&f);

	/* By bytes: a row group closes once its buffered pages reach the limit. */
	tl_pq_schema *wide = wt_one_column_schema(wt_column("n", TL_PQ_INT64, true));
	tl_pq_batch *big = tl_pq_batch_new(wide, 50000);
	big->nrows = 50000;
	for (int i = 0; i < 50000; i++)
		big->columns[0].v.i64[i] = identity(i);
	o = wt_uncompressed_options();
	o.dictionary = false;
	o.row_group_bytes = 64 * 1024;
	CHECK_OK(wt_write_one("row_group_bytes", wide, &o, big, &f, &err), &err);
	CHECK(f.md.nrow_groups >= 5);
	int64_t rows = 0;
	for (int g = 0; g < f.md.nrow_groups; g++) {
		const pq_row_group *rg = &f.md.row_groups[g];
		rows += rg->num_rows;
		if (g + 1 < f.md.nrow_groups) {
			CHECK(rg->total_compressed_size >= 64 * 1024);
			CHECK(rg->total_compressed_size < 64 * 1024 + 8 * 1024 + 512);
		}
	}
	CHECK_INT(rows, 50000);
	CHECK_OK(wt_read_back_int64(f.path, 50000, identity, NULL, &err), &err);
	wt_written_free(&f);
	tl_pq_batch_free(big);
	tl_pq_schema_free(wide);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
}

/* Every chunk of the file tiles its pages exactly and its rows add up. */
static int check_layout(const written *f, tl_error *err)
{
	page_view *pages = wt_page_buffer();
	int rc = 0;
	int64_t offset = 4, rows = 0;
	for (int g = 0; g < f->md.nrow_groups && rc == 0; g++) {
		rows += f->md.row_groups[g].num_rows;
		for (int col = 0; col < f->md.row_groups[g].ncolumns && rc == 0; col++) {
			const pq_column_meta *m = wt_chunk_meta(f, g, col);
			int npages;
			int64_t values = 0;
			rc = wt_chunk_pages(f, m, pages, &npages, err);
			for (int p = 0; p < npages && rc == 0; p++)
				values += pages[p].h.has_data_page_header ? pages[p].h.data_page_header.num_values : 0;
			if (rc == 0 && (values != m->num_values || values != f->md.row_groups[g].num_rows))
				rc = tl_error_set(err, TL_ERR_CORRUPT, "row group %d column %d: pages hold %lld values of %lld", g,
				                  col, (long long)values, (long long)m->num_values);
			int64_t start = m->has_dictionary_page_offset ? m->dictionary_page_offset : m->data_page_offset;
			if (rc == 0 && start != offset)
				rc = tl_error_set(err, TL_ERR_CORRUPT, "row group %d column %d starts at %lld, not %lld", g, col,
				                  (long long)start, (long long)offset);
			offset += m->total_compressed_size;
		}
	}
	if (rc == 0 && (rows != f->md.num_rows || offset != (int64_t)f->data_end))
		rc = tl_error_set(err, TL_ERR_CORRUPT, "row groups hold %lld rows ending at %lld; file says %lld, %zu",
		                  (long long)rows, (long long)offset, (long long)f->md.num_rows, f->data_end);
	free(pages);
	return rc;
}

TEST(writer_random_limits_and_batch_sizes_round_trip)
{
	const tl_pq_codec codecs[] = {TL_PQ_UNCOMPRESSED, TL_PQ_SNAPPY, TL_PQ_ZSTD, TL_PQ_LZ4_RAW, TL_PQ_GZIP};
	uint64_t seed = 12345;
	for (int round = 0; round < 10; round++) {
		tl_error err;
		tl_error_clear(&err);
		tl_pq_writer_options o;
		tl_pq_writer_options_init(&o);
#define RANDOM(lo, hi) ((int64_t)(lo) + (int64_t)((seed = wt_mix64(seed)) % (uint64_t)((hi) - (lo) + 1)))
		o.codec = codecs[RANDOM(0, 4)];
		o.page_rows = RANDOM(7, 3000);
		o.page_bytes = RANDOM(64, 20000);
		o.row_group_rows = RANDOM(1, 5000);
		o.row_group_bytes = RANDOM(4096, 400000);
		o.dictionary = RANDOM(0, 3) != 0;
		o.dictionary_bytes = RANDOM(0, 30000);
		o.write_page_crc = RANDOM(0, 1);
		int64_t rows = RANDOM(0, 5000), batch_rows = RANDOM(1, 2000);
#undef RANDOM
		written f;
		char name[32];
		snprintf(name, sizeof(name), "random_%d", round);
		CHECK_OK(write_every_type(name, &o, rows, batch_rows, &f, &err), &err);
		CHECK_OK(check_layout(&f, &err), &err);
		CHECK_OK(read_back_every_type(f.path, rows, &err), &err);
		wt_written_free(&f);
	}
}

TEST(writer_page_crcs_cover_the_stored_bytes)
{
	tl_error err;
	tl_error_clear(&err);
	page_view *pages = wt_page_buffer();
	for (int crc = 0; crc < 2; crc++) {
		tl_pq_writer_options o;
		tl_pq_writer_options_init(&o);
		if (!crc)
			o.write_page_crc = false; /* on is the default */
		o.page_rows = 400;
		written f;
		CHECK_OK(write_every_type(crc ? "crc_on" : "crc_off", &o, 1500, 500, &f, &err), &err);
		int checked = 0;
		for (int col = 0; col < NCOLS; col++) {
			int npages;
			CHECK_OK(wt_chunk_pages(&f, wt_chunk_meta(&f, 0, col), pages, &npages, &err), &err);
			for (int p = 0; p < npages; p++) {
				CHECK_INT(pages[p].h.has_crc, crc);
				if (crc) {
					CHECK_INT((uint32_t)pages[p].h.crc, pq_crc32(pages[p].body, pages[p].body_len));
					checked++;
				}
			}
		}
		CHECK(crc == 0 || checked > NCOLS * 4);
		CHECK_OK(read_back_every_type(f.path, 1500, &err), &err);
		wt_written_free(&f);
	}
	free(pages);
}

TEST(writer_definition_levels_are_rle_with_a_length_prefix)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_schema *s = tl_pq_schema_new();
	tl_pq_column c = wt_column("opt", TL_PQ_INT32, false);
	tl_pq_schema_add(s, &c);
	c = wt_column("req", TL_PQ_INT32, true);
	tl_pq_schema_add(s, &c);
	tl_pq_batch *b = tl_pq_batch_new(s, 1000);
	b->nrows = 1000;
	for (int i = 0; i < 1000; i++) {
		b->columns[0].v.i32[i] = b->columns[1].v.i32[i] = i;
		b->columns[0].valid[i] = (i / 7) % 3 != 0;
	}
	tl_pq_writer_options o = wt_uncompressed_options();
	o.dictionary = false;
	written f;
	CHECK_OK(wt_write_one("levels", s, &o, b, &f, &err), &err);
	page_view *pages = wt_page_buffer();
	int npages;
	CHECK_OK(wt_chunk_pages(&f, wt_chunk_meta(&f, 0, 0), pages, &npages, &err), &err);
	CHECK_INT(npages, 1);
	const uint8_t *body = pages[0].body;
	uint32_t levels_len = (uint32_t)body[0] | (uint32_t)body[1] << 8 | (uint32_t)body[2] << 16 |
	                      (uint32_t)body[3] << 24;
	CHECK(levels_len + 4 <= pages[0].body_len);
	pq_rle_decoder d;
	pq_rle_decoder_init(&d, body + 4, levels_len, 1);
	uint32_t levels[1000];
	CHECK_INT(pq_rle_decode(&d, levels, 1000, &err), 1000);
	int64_t present = 0;
	for (int i = 0; i < 1000; i++) {
		CHECK_INT(levels[i], b->columns[0].valid[i]);
		present += levels[i];
	}
	/* The PLAIN values follow the levels, nulls left out. */
	CHECK_INT(pages[0].body_len, 4 + levels_len + present * 4);
	int32_t first;
	memcpy(&first, body + 4 + levels_len, 4);
	CHECK_INT(first, 7);

	/* A required column has no levels at all: the page is just the values. */
	CHECK_OK(wt_chunk_pages(&f, wt_chunk_meta(&f, 0, 1), pages, &npages, &err), &err);
	CHECK_INT(pages[0].body_len, 4000);
	memcpy(&first, pages[0].body, 4);
	CHECK_INT(first, 0);
	free(pages);
	wt_written_free(&f);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
}

/* ------------------------------------------------------------ contract */

TEST(writer_copies_what_it_needs_from_the_batch)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_schema *s = tl_pq_schema_new();
	tl_pq_column c = wt_column("s", TL_PQ_BYTE_ARRAY, false);
	tl_pq_schema_add(s, &c);
	c = wt_column("n", TL_PQ_INT64, true);
	tl_pq_schema_add(s, &c);
	for (int dictionary = 0; dictionary < 2; dictionary++) {
		char storage[100][16];
		tl_pq_batch *b = tl_pq_batch_new(s, 100);
		tl_pq_writer_options o = wt_uncompressed_options();
		o.dictionary = dictionary;
		tl_buf file;
		tl_buf_init(&file);
		tl_output *out = tl_output_to_buffer(&file, "memory");
		tl_pq_writer *w = tl_pq_writer_open(out, s, &o, &err);
		CHECK(w != NULL);
		for (int round = 0; round < 3; round++) {
			b->nrows = 100;
			for (int i = 0; i < 100; i++) {
				snprintf(storage[i], sizeof(storage[i]), "r%dv%d", round, i % 10);
				b->columns[0].v.bytes[i] = wt_text(storage[i]);
				b->columns[1].v.i64[i] = round * 1000 + i;
			}
			CHECK_OK(tl_pq_writer_write(w, b, &err), &err);
			/* The caller reuses its memory straight away. */
			memset(storage, '#', sizeof(storage));
			memset(b->columns[1].v.i64, 0xEE, 100 * sizeof(int64_t));
		}
		CHECK_OK(tl_pq_writer_close(w, &err), &err);
		tl_pq_writer_free(w);
		tl_output_close(out);

		tl_input *in = tl_input_from_memory(file.data, file.len, "memory");
		tl_pq_reader *r = tl_pq_reader_open(in, &err);
		CHECK(r != NULL);
		tl_pq_batch *got = tl_pq_reader_batch_new(r, 300);
		CHECK_INT(tl_pq_reader_next(r, got, &err), 300);
		for (int row = 0; row < 300; row++) {
			char expect[16];
			snprintf(expect, sizeof(expect), "r%dv%d", row / 100, row % 10);
			CHECK(wt_bytes_equal(got->columns[0].v.bytes[row], expect, strlen(expect)));
			CHECK_INT(got->columns[1].v.i64[row], (row / 100) * 1000 + row % 100);
		}
		const tl_pq_chunk_info *info = tl_pq_reader_chunk(r, 0, 0);
		CHECK(info->stats.has_min_max);
		CHECK(wt_bytes_equal(info->stats.min.bytes, "r0v0", 4));
		CHECK(wt_bytes_equal(info->stats.max.bytes, "r2v9", 4));
		tl_pq_batch_free(got);
		tl_pq_reader_free(r);
		tl_input_close(in);
		tl_buf_free(&file);
		tl_pq_batch_free(b);
	}
	tl_pq_schema_free(s);
}

TEST(writer_created_by_and_key_value_metadata)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_schema *s = wt_one_column_schema(wt_column("n", TL_PQ_INT32, true));
	tl_pq_batch *b = tl_pq_batch_new(s, 1);
	b->nrows = 1;
	char key[16] = "iceberg.schema", value[16] = "{}";
	tl_pq_kv kv[] = {{key, value}, {"no-value", NULL}, {"empty", ""}};
	tl_pq_writer_options o;
	tl_pq_writer_options_init(&o);
	o.metadata = kv;
	o.nmetadata = 3;
	char created_by[32] = "tests version 9";
	o.created_by = created_by;

	tl_buf file;
	tl_buf_init(&file);
	tl_output *out = tl_output_to_buffer(&file, "memory");
	tl_pq_writer *w = tl_pq_writer_open(out, s, &o, &err);
	CHECK(w != NULL);
	/* The writer keeps its own copies of the options' strings. */
	memset(key, 'k', sizeof(key) - 1);
	memset(value, 'v', sizeof(value) - 1);
	memset(created_by, 'c', sizeof(created_by) - 1);
	CHECK_OK(tl_pq_writer_write(w, b, &err), &err);
	CHECK_OK(tl_pq_writer_close(w, &err), &err);
	tl_pq_writer_free(w);
	tl_output_close(out);

	written f;
	memset(&f, 0, sizeof(f));
	uint32_t footer_len;
	memcpy(&footer_len, file.data + file.len - 8, 4);
	CHECK_OK(pq_file_metadata_decode(file.data + file.len - 8 - footer_len, footer_len, &f.md, &err), &err);
	CHECK(wt_bytes_equal(f.md.created_by, "tests version 9", 15));
	CHECK_INT(f.md.nkey_value, 3);
	CHECK(wt_bytes_equal(f.md.key_value[0].key, "iceberg.schema", 14));
	CHECK(f.md.key_value[0].has_value);
	CHECK(wt_bytes_equal(f.md.key_value[0].value, "{}", 2));
	CHECK(wt_bytes_equal(f.md.key_value[1].key, "no-value", 8));
	CHECK(!f.md.key_value[1].has_value);
	CHECK(f.md.key_value[2].has_value);
	CHECK_INT(f.md.key_value[2].value.len, 0);
	pq_file_metadata_free(&f.md);
	tl_buf_free(&file);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
}

TEST(writer_empty_file_has_a_footer_and_no_row_groups)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_schema *s = wt_one_column_schema(wt_column("n", TL_PQ_INT32, false));
	tl_pq_batch *b = tl_pq_batch_new(s, 10);
	b->nrows = 0;
	tl_pq_writer_options o;
	tl_pq_writer_options_init(&o);
	written f;
	CHECK_OK(wt_write_one("empty", s, &o, b, &f, &err), &err);
	CHECK_INT(f.md.num_rows, 0);
	CHECK_INT(f.md.nrow_groups, 0);
	CHECK_INT(f.md.nschema, 2);
	CHECK_INT(f.footer_start, 4);
	CHECK_OK(wt_read_back_int64(f.path, 0, identity, NULL, &err), &err);
	wt_written_free(&f);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
}

/* Opens a writer into memory, writes the batch and expects an error containing `fragment`. */
static int expect_write_error(const tl_pq_schema *s, const tl_pq_batch *b, const char *fragment, tl_error *err)
{
	tl_buf file;
	tl_buf_init(&file);
	tl_output *out = tl_output_to_buffer(&file, "memory");
	tl_pq_writer_options o;
	tl_pq_writer_options_init(&o);
	tl_error_clear(err);
	tl_pq_writer *w = tl_pq_writer_open(out, s, &o, err);
	int rc = 0;
	if (w == NULL)
		rc = -1;
	else if (tl_pq_writer_write(w, b, err) == 0)
		rc = tl_error_set(err, TL_ERR_INVALID, "write succeeded; expected \"%s\"", fragment);
	else if (strstr(err->message, fragment) == NULL)
		rc = tl_error_set(err, TL_ERR_INVALID, "error \"%s\" lacks \"%s\"", err->message, fragment);
	if (rc == 0) {
		/* The writer stays failed: later calls repeat the error. */
		tl_error again;
		tl_error_clear(&again);
		if (tl_pq_writer_write(w, b, &again) == 0 || strstr(again.message, fragment) == NULL)
			rc = tl_error_set(err, TL_ERR_INVALID, "a second write did not repeat the error");
		tl_error_clear(&again);
		if (rc == 0 && (tl_pq_writer_close(w, &again) == 0 || strstr(again.message, fragment) == NULL))
			rc = tl_error_set(err, TL_ERR_INVALID, "close did not repeat the error");
	}
	tl_pq_writer_free(w);
	tl_output_close(out);
	tl_buf_free(&file);
	return rc;
}

TEST(writer_rejects_nulls_in_required_columns_naming_column_and_row)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_schema *s = tl_pq_schema_new();
	tl_pq_column c = wt_column("fine", TL_PQ_INT32, false);
	tl_pq_schema_add(s, &c);
	c = wt_column("must", TL_PQ_DOUBLE, true);
	tl_pq_schema_add(s, &c);
	tl_pq_batch *b = tl_pq_batch_new(s, 3000);
	b->nrows = 3000;
	/* A caller-supplied validity array on a required column. */
	uint8_t *valid = tl_malloc(3000);
	memset(valid, 1, 3000);
	valid[2345] = 0;
	b->columns[1].valid = valid;
	CHECK_OK(expect_write_error(s, b, "column \"must\", row 2345: null in a required column", &err), &err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
}

TEST(writer_rejects_wrong_fixed_lengths_and_oversized_byte_arrays)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_column c = wt_column("id", TL_PQ_FIXED_LEN_BYTE_ARRAY, false);
	c.type_length = 16;
	c.logical = TL_PQ_LOGICAL_UUID;
	tl_pq_schema *s = wt_one_column_schema(c);
	tl_pq_batch *b = tl_pq_batch_new(s, 10);
	b->nrows = 10;
	static const uint8_t zeros[16];
	for (int i = 0; i < 10; i++)
		b->columns[0].v.bytes[i] = (tl_bytes){zeros, 16};
	b->columns[0].valid[3] = 0;
	b->columns[0].v.bytes[3].len = 3;   /* a null row's slot is not looked at */
	b->columns[0].v.bytes[7].len = 15;
	CHECK_OK(expect_write_error(s, b, "column \"id\", row 7: value of 15 bytes in a FIXED_LEN_BYTE_ARRAY(16)", &err),
	         &err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);

	s = wt_one_column_schema(wt_column("blob", TL_PQ_BYTE_ARRAY, true));
	b = tl_pq_batch_new(s, 5);
	b->nrows = 5;
	for (int i = 0; i < 5; i++)
		b->columns[0].v.bytes[i] = wt_text("ok");
	/* Never read: the length alone is refused. */
	b->columns[0].v.bytes[4] = (tl_bytes){zeros, 0x80000000u};
	CHECK_OK(expect_write_error(s, b, "column \"blob\", row 4: a BYTE_ARRAY value of 2 GiB or more", &err), &err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
}

TEST(writer_rejects_bad_schemas_options_and_batches)
{
	tl_error err;
	tl_buf file;
	tl_buf_init(&file);
	tl_output *out = tl_output_to_buffer(&file, "memory");

	tl_pq_column c = wt_column("old", TL_PQ_INT96, false);
	tl_pq_schema *bad = wt_one_column_schema(c);
	tl_error_clear(&err);
	CHECK(tl_pq_writer_open(out, bad, NULL, &err) == NULL);
	CHECK(strstr(err.message, "INT96") != NULL);
	tl_pq_schema_free(bad);

	tl_pq_schema *s = wt_one_column_schema(wt_column("n", TL_PQ_INT32, true));
	tl_pq_writer_options o;
	tl_pq_writer_options_init(&o);
	o.codec = TL_PQ_LZO;
	tl_error_clear(&err);
	CHECK(tl_pq_writer_open(out, s, &o, &err) == NULL);
	CHECK(strstr(err.message, "LZO") != NULL);
	tl_pq_writer_options_init(&o);
	o.page_rows = 0;
	tl_error_clear(&err);
	CHECK(tl_pq_writer_open(out, s, &o, &err) == NULL);
	CHECK(strstr(err.message, "page limits") != NULL);
	tl_pq_writer_options_init(&o);
	o.row_group_bytes = -1;
	tl_error_clear(&err);
	CHECK(tl_pq_writer_open(out, s, &o, &err) == NULL);
	CHECK(strstr(err.message, "row group limits") != NULL);
	CHECK_INT(file.len, 0);   /* nothing was written */

	/* A batch shaped for another schema. */
	tl_pq_schema *two = wt_one_column_schema(wt_column("a", TL_PQ_INT32, true));
	c = wt_column("b", TL_PQ_INT32, true);
	tl_pq_schema_add(two, &c);
	tl_pq_batch *b = tl_pq_batch_new(two, 4);
	b->nrows = 4;
	tl_error_clear(&err);
	tl_pq_writer *w = tl_pq_writer_open(out, s, NULL, &err);
	CHECK(w != NULL);
	CHECK(tl_pq_writer_write(w, b, &err) < 0);
	CHECK(strstr(err.message, "batch has 2 columns, the schema 1") != NULL);
	tl_pq_writer_free(w);

	/* More rows than the batch has room for. */
	tl_pq_batch *small = tl_pq_batch_new(s, 4);
	small->nrows = 5;
	tl_error_clear(&err);
	w = tl_pq_writer_open(out, s, NULL, &err);
	CHECK(w != NULL);
	CHECK(tl_pq_writer_write(w, small, &err) < 0);
	CHECK(strstr(err.message, "batch has 5 rows but room for 4") != NULL);
	tl_pq_writer_free(w);
	tl_pq_batch_free(small);

	/* Closing twice is an error, not a second footer. */
	tl_pq_batch *one = tl_pq_batch_new(s, 1);
	one->nrows = 1;
	tl_error_clear(&err);
	w = tl_pq_writer_open(out, s, NULL, &err);
	CHECK_OK(tl_pq_writer_write(w, one, &err), &err);
	CHECK_OK(tl_pq_writer_close(w, &err), &err);
	CHECK(tl_pq_writer_close(w, &err) < 0);
	CHECK(strstr(err.message, "already closed") != NULL);
	tl_error_clear(&err);
	CHECK(tl_pq_writer_write(w, one, &err) < 0);
	tl_pq_writer_free(w);

	tl_pq_batch_free(one);
	tl_pq_batch_free(b);
	tl_pq_schema_free(two);
	tl_pq_schema_free(s);
	tl_output_close(out);
	tl_buf_free(&file);
}

/* An output that refuses every write past `limit` bytes, like a full disk. */
typedef struct failing_output {
	tl_output base;
	uint64_t limit;
} failing_output;

static int failing_write(tl_output *out, const void *buf, size_t len, tl_error *err)
{
	failing_output *f = (failing_output *)out;
	if (out->offset + len > f->limit)
		return tl_error_set(err, TL_ERR_IO, "%s: no space left on device", out->name);
	out->offset += len;
	return 0;
}

TEST(writer_reports_output_errors_and_stays_failed)
{
	tl_pq_schema *s = wt_one_column_schema(wt_column("n", TL_PQ_INT64, true));
	tl_pq_batch *b = tl_pq_batch_new(s, 1000);
	b->nrows = 1000;
	for (int i = 0; i < 1000; i++)
		b->columns[0].v.i64[i] = identity(i);
	/* Nothing fits; only the magic; the first row group fails; only the footer fails. */
	const uint64_t limits[] = {0, 4, 3000, 8050};
	for (int i = 0; i < 4; i++) {
		failing_output out;
		memset(&out, 0, sizeof(out));
		out.base.write = failing_write;
		out.base.name = "full.parquet";
		out.limit = limits[i];
		tl_pq_writer_options o = wt_uncompressed_options();
		o.row_group_rows = 500;
		o.dictionary = false;
		tl_error err;
		tl_error_clear(&err);
		tl_pq_writer *w = tl_pq_writer_open(&out.base, s, &o, &err);
		if (limits[i] < 4) {
			/* Even the leading magic does not fit. */
			CHECK(w == NULL);
			CHECK(strstr(err.message, "no space left") != NULL);
			continue;
		}
		CHECK(w != NULL);
		int rc = tl_pq_writer_write(w, b, &err);
		if (rc == 0)
			rc = tl_pq_writer_close(w, &err);
		CHECK(rc < 0);
		CHECK_INT(err.code, TL_ERR_IO);
		CHECK(strstr(err.message, "full.parquet: no space left on device") != NULL);
		tl_error again;
		tl_error_clear(&again);
		CHECK(tl_pq_writer_close(w, &again) < 0);
		CHECK_INT(again.code, TL_ERR_IO);
		tl_pq_writer_free(w);
	}
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
}

/* ------------------------------------------------------------ the dictionary itself */

TEST(writer_dictionary_keeps_distinct_bits_and_stops_at_its_budget)
{
	pq_dict d;
	pq_dict_init(&d, TL_PQ_DOUBLE, 0);
	double values[6] = {0.0, -0.0, NAN, 1.0, 0.0, NAN};
	uint32_t idx[6];
	CHECK_INT(pq_dict_encode(&d, values, 6, idx, 1 << 20), 6);
	CHECK_INT(d.count, 4);   /* 0.0 and -0.0 differ; the same NaN bits are one entry */
	CHECK_INT(idx[0], 0);
	CHECK_INT(idx[1], 1);
	CHECK_INT(idx[2], 2);
	CHECK_INT(idx[4], 0);
	CHECK_INT(idx[5], 2);
	CHECK_INT(d.plain.len, 32);
	CHECK_INT(pq_dict_index_bit_width(&d), 2);

	/* 100,000 distinct values grow the table many times; lookups stay right. */
	pq_dict_reset(&d);
	CHECK_INT(d.count, 0);
	double *many = tl_malloc(100000 * sizeof(double));
	uint32_t *many_idx = tl_malloc(100000 * sizeof(uint32_t));
	for (int i = 0; i < 100000; i++)
		many[i] = (double)(i * 7 % 100000) * 0.5;
	CHECK_INT(pq_dict_encode(&d, many, 100000, many_idx, 1 << 30), 100000);
	CHECK_INT(d.count, 100000);
	CHECK_INT(pq_dict_encode(&d, many, 100000, many_idx, 1 << 30), 100000);
	for (int i = 0; i < 100000; i++)
		CHECK_INT(many_idx[i], i);
	CHECK_INT(pq_dict_index_bit_width(&d), 17);

	/* The budget: an insert that would pass it is not made. */
	pq_dict_reset(&d);
	CHECK_INT(pq_dict_encode(&d, many, 100000, many_idx, 8 * 10 + 7), 10);
	CHECK_INT(d.count, 10);
	free(many);
	free(many_idx);
	pq_dict_free(&d);

	pq_dict_init(&d, TL_PQ_BYTE_ARRAY, 0);
	char words[5000][16];
	tl_bytes views[5000];
	for (int i = 0; i < 5000; i++) {
		snprintf(words[i], sizeof(words[i]), "w%d", i % 2500);
		views[i] = wt_text(words[i]);
	}
	views[17] = (tl_bytes){NULL, 0};
	uint32_t *widx = tl_malloc(5000 * sizeof(uint32_t));
	CHECK_INT(pq_dict_encode(&d, views, 5000, widx, 1 << 20), 5000);
	CHECK_INT(d.count, 2501);   /* plus the empty value */
	for (int i = 2500; i < 5000; i++)
		if (i != 2517)
			CHECK_INT(widx[i], widx[i - 2500]);
	tl_bytes e = pq_dict_entry_bytes(&d, widx[2600]);
	CHECK(wt_bytes_equal(e, "w100", 4));
	/* The PLAIN page body: 4-byte length, then the bytes. */
	CHECK_INT(d.plain.data[0], 2);
	CHECK(memcmp(d.plain.data + 4, "w0", 2) == 0);
	free(widx);
	pq_dict_free(&d);

	/* Fixed-length byte arrays are stored without length prefixes. */
	pq_dict_init(&d, TL_PQ_FIXED_LEN_BYTE_ARRAY, 3);
	tl_bytes fl[3] = {wt_text("abc"), wt_text("xyz"), wt_text("abc")};
	uint32_t fidx[3];
	CHECK_INT(pq_dict_encode(&d, fl, 3, fidx, 5), 1);   /* the second entry would need 6 bytes */
	CHECK_INT(pq_dict_encode(&d, fl, 3, fidx, 6), 3);
	CHECK_INT(d.plain.len, 6);
	CHECK(memcmp(d.plain.data, "abcxyz", 6) == 0);
	CHECK_INT(fidx[2], 0);
	pq_dict_free(&d);
}

TEST(writer_hash_spreads_similar_values)
{
	/* Values differing in one byte anywhere must land in different slots of
	 * a small table most of the time, or the dictionary degrades to a scan. */
	uint8_t buf[40];
	memset(buf, 'a', sizeof(buf));
	int distinct_low_bits = 0;
	bool seen[256] = {false};
	for (size_t len = 1; len <= sizeof(buf); len++)
		for (int pos = 0; pos < (int)len; pos += 3) {
			buf[pos] = 'b';
			uint8_t slot = (uint8_t)pq_hash_bytes(buf, len);
			if (!seen[slot]) {
				seen[slot] = true;
				distinct_low_bits++;
			}
			buf[pos] = 'a';
		}
	CHECK(distinct_low_bits > 150);
	CHECK(pq_hash_bytes((const uint8_t *)"ab", 2) != pq_hash_bytes((const uint8_t *)"ba", 2));
	CHECK(pq_hash_bytes((const uint8_t *)"abc", 3) != pq_hash_bytes((const uint8_t *)"abc\0", 4));
	CHECK(pq_hash_bytes(NULL, 0) == pq_hash_bytes((const uint8_t *)"x", 0));
}

/*
 * Our files read with late materialisation (deferred_check.h): every type,
 * PLAIN (dictionary off) and dictionary pages, small pages and several row
 * groups, so whole pages, parts of pages and whole row groups are skipped.
 */
TEST(writer_files_read_deferred_equal_a_plain_read)
{
	tl_error err;
	tl_error_clear(&err);
	for (int dictionary = 0; dictionary < 2; dictionary++) {
		tl_pq_writer_options o;
		tl_pq_writer_options_init(&o);
		o.dictionary = dictionary;
		o.page_rows = 300;
		o.row_group_rows = 2000;
		o.write_page_crc = true;
		written f;
		CHECK_OK(write_every_type(dictionary ? "deferred_dictionary" : "deferred_plain", &o, 5000, 700, &f, &err),
		         &err);
		for (int load_every = 1; load_every <= 7; load_every += 3)
			for (int eager = -1; eager < NCOLS; eager += 3)
				CHECK_OK(deferred_check(f.path, 128, eager, load_every, &err), &err);
		wt_written_free(&f);
	}
}
