/*
 * bloom.c: xxHash64 and the split block bloom filter of Parquet's
 * BloomFilter.md.
 *
 * xxHash64 follows Yann Collet's reference (github.com/Cyan4973/xxHash,
 * XXH64): four 64-bit lanes over 32-byte stripes, then the tail in 8-,
 * 4- and 1-byte steps, then the avalanche. The block filter words are
 * little-endian in the file; they are read and written byte by byte so the
 * code does not depend on the host's order.
 */
#include <math.h>
#include <string.h>

#include "parquet/bloom.h"

#define PRIME64_1 UINT64_C(0x9E3779B185EBCA87)
#define PRIME64_2 UINT64_C(0xC2B2AE3D27D4EB4F)
#define PRIME64_3 UINT64_C(0x165667B19E3779F9)
#define PRIME64_4 UINT64_C(0x85EBCA77C2B2AE63)
#define PRIME64_5 UINT64_C(0x27D4EB2F165667C5)

static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t read64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint32_t read32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t round64(uint64_t acc, uint64_t input)
{
	acc += input * PRIME64_2;
	acc = rotl64(acc, 31);
	return acc * PRIME64_1;
}

static inline uint64_t merge_round64(uint64_t acc, uint64_t val)
{
	acc ^= round64(0, val);
	return acc * PRIME64_1 + PRIME64_4;
}

uint64_t pq_xxhash64(const void *data, size_t len, uint64_t seed)
{
	const uint8_t *p = data;
	const uint8_t *end = p + len;
	uint64_t h;

	if (len >= 32) {
		uint64_t v1 = seed + PRIME64_1 + PRIME64_2;
		uint64_t v2 = seed + PRIME64_2;
		uint64_t v3 = seed;
		uint64_t v4 = seed - PRIME64_1;
		const uint8_t *limit = end - 32;
		do {
			v1 = round64(v1, read64(p));
			v2 = round64(v2, read64(p + 8));
			v3 = round64(v3, read64(p + 16));
			v4 = round64(v4, read64(p + 24));
			p += 32;
		} while (p <= limit);
		h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
		h = merge_round64(h, v1);
		h = merge_round64(h, v2);
		h = merge_round64(h, v3);
		h = merge_round64(h, v4);
	} else {
		h = seed + PRIME64_5;
	}
	h += (uint64_t)len;
	for (; p + 8 <= end; p += 8) {
		h ^= round64(0, read64(p));
		h = rotl64(h, 27) * PRIME64_1 + PRIME64_4;
	}
	if (p + 4 <= end) {
		h ^= (uint64_t)read32(p) * PRIME64_1;
		h = rotl64(h, 23) * PRIME64_2 + PRIME64_3;
		p += 4;
	}
	for (; p < end; p++) {
		h ^= (uint64_t)*p * PRIME64_5;
		h = rotl64(h, 11) * PRIME64_1;
	}
	h ^= h >> 33;
	h *= PRIME64_2;
	h ^= h >> 29;
	h *= PRIME64_3;
	h ^= h >> 32;
	return h;
}

int64_t pq_bloom_optimal_bytes(int64_t ndv, double fpp, int64_t max_bytes)
{
	if (max_bytes > PQ_BLOOM_MAX_BYTES)
		max_bytes = PQ_BLOOM_MAX_BYTES;
	if (max_bytes < PQ_BLOOM_MIN_BYTES)
		max_bytes = PQ_BLOOM_MIN_BYTES;
	if (ndv < 1)
		ndv = 1;
	if (!(fpp > 0.0 && fpp < 1.0))
		fpp = 0.01;
	/* m = -8 ndv / ln(1 - fpp^(1/8)) bits (BloomFilter.md, "Sizing"). */
	double bits = -8.0 * (double)ndv / log(1.0 - pow(fpp, 1.0 / 8.0));
	double bytes = bits / 8.0;
	int64_t size = PQ_BLOOM_MIN_BYTES;
	while (size < max_bytes && (double)size < bytes)
		size *= 2;
	return size > max_bytes ? max_bytes : size;
}

static const uint32_t salt[8] = {0x47b6137bU, 0x44974d91U, 0x8824ad5bU, 0xa2b7289dU,
                                 0x705495c7U, 0x2df1424bU, 0x9efc4947U, 0x5c6bfb31U};

/* The block a hash falls in: its high 32 bits scaled to the block count. */
uint64_t pq_bloom_block_index(size_t num_bytes, uint64_t hash)
{
	uint64_t blocks = num_bytes / 32;
	return ((hash >> 32) * blocks) >> 32;
}

void pq_bloom_insert(uint8_t *bitset, size_t num_bytes, uint64_t hash)
{
	uint8_t *block = bitset + pq_bloom_block_index(num_bytes, hash) * 32;
	uint32_t key = (uint32_t)hash;
	for (int i = 0; i < 8; i++) {
		uint32_t bit = (key * salt[i]) >> 27;
		block[4 * i + bit / 8] |= (uint8_t)(1u << (bit % 8));
	}
}

bool pq_bloom_block_may_contain(const uint8_t *block, uint64_t hash)
{
	uint32_t key = (uint32_t)hash;
	for (int i = 0; i < 8; i++) {
		uint32_t bit = (key * salt[i]) >> 27;
		if ((block[4 * i + bit / 8] & (1u << (bit % 8))) == 0)
			return false;
	}
	return true;
}

bool pq_bloom_may_contain(const uint8_t *bitset, size_t num_bytes, uint64_t hash)
{
	return pq_bloom_block_may_contain(bitset + pq_bloom_block_index(num_bytes, hash) * 32, hash);
}
