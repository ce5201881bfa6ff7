/*
 * digest.c: row fingerprints for `tierdb verify`; see digest.h.
 *
 * The row hash mixes each value's bytes with the column's position, so
 * swapping two columns' values changes it, and a NULL hashes differently
 * from every value. Values are hashed by physical type exactly as the batch
 * holds them: floats by their bits (NaN payloads and -0.0 are values the
 * heap stored), strings and fixed-length bytes by their bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"

#define MIX_MULT 0x9e3779b97f4a7c15ULL
#define NULL_MARK 0x6e756c6c2d76616cULL /* a NULL's stand-in value */

/* A 64-bit finaliser with full avalanche: every input bit flips about half the output bits. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* Hashes a byte string 8 bytes at a time; the length is mixed in so that prefixes differ. */
static uint64_t hash_bytes(const uint8_t *p, size_t len)
{
	uint64_t h = mix64(len ^ MIX_MULT);
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		h = mix64(h ^ w) * MIX_MULT;
	}
	uint64_t tail = 0;
	memcpy(&tail, p + i, len - i);
	return mix64(h ^ tail ^ ((uint64_t)(len - i) << 56));
}

static uint64_t value_hash(const tl_pq_column *col, const tl_vector *vec, int64_t row)
{
	if (tl_vector_is_null(vec, row))
		return NULL_MARK;
	switch (col->physical) {
	case TL_PQ_BOOLEAN: return mix64(vec->v.b[row] ? 1 : 2);
	case TL_PQ_INT32: return mix64((uint64_t)(uint32_t)vec->v.i32[row] ^ (1ULL << 40));
	case TL_PQ_INT64:
	case TL_PQ_INT96: return mix64((uint64_t)vec->v.i64[row]);
	case TL_PQ_FLOAT: {
		uint32_t bits;
		memcpy(&bits, &vec->v.f32[row], 4);
		return mix64((uint64_t)bits ^ (2ULL << 40));
	}
	case TL_PQ_DOUBLE: {
		uint64_t bits;
		memcpy(&bits, &vec->v.f64[row], 8);
		return mix64(bits);
	}
	case TL_PQ_BYTE_ARRAY:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY: return hash_bytes(vec->v.bytes[row].ptr, vec->v.bytes[row].len);
	}
	return 0;
}

uint64_t tdb_digest_row_hash(const tl_pq_schema *schema, const tl_pq_batch *batch, int64_t row)
{
	uint64_t h = MIX_MULT;
	for (int c = 0; c < schema->ncolumns; c++)
		h = mix64(h ^ value_hash(&schema->columns[c], &batch->columns[c], row)) + (uint64_t)c * MIX_MULT;
	return mix64(h);
}

void tdb_digest_add_row(tdb_digest *d, const tl_pq_schema *schema, const tl_pq_batch *batch, int64_t row)
{
	d->rows++;
	d->sum += tdb_digest_row_hash(schema, batch, row);
}

void tdb_digest_add_batch(tdb_digest *d, const tl_pq_schema *schema, const tl_pq_batch *batch)
{
	for (int64_t row = 0; row < batch->nrows; row++)
		tdb_digest_add_row(d, schema, batch, row);
}

json_t *tdb_digest_to_json(const tdb_digest *d)
{
	char hex[17];
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)d->sum);
	return json_pack("{s:I, s:s, s:i}", "rows", (json_int_t)d->rows, "checksum", hex, "version",
	                 TDB_DIGEST_VERSION);
}

int tdb_digest_from_json(const json_t *j, tdb_digest *out)
{
	json_t *rows = json_object_get(j, "rows"), *sum = json_object_get(j, "checksum");
	json_t *version = json_object_get(j, "version");
	if (!json_is_integer(rows) || !json_is_string(sum) || json_integer_value(version) != TDB_DIGEST_VERSION)
		return -1;
	const char *hex = json_string_value(sum);
	char *end;
	unsigned long long v = strtoull(hex, &end, 16);
	if (strlen(hex) != 16 || *end != '\0')
		return -1;
	out->rows = json_integer_value(rows);
	out->sum = v;
	return 0;
}
