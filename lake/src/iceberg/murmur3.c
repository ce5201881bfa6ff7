/*
 * murmur3.c: MurmurHash3 x86_32 with seed 0, the hash the Iceberg spec's
 * bucket transform is defined on (Guava's murmur3_32 in Java Iceberg).
 */
#include <stddef.h>
#include <stdint.h>

#include "tierlake/iceberg_transform.h"

static uint32_t rotl32(uint32_t x, int r)
{
	return (x << r) | (x >> (32 - r));
}

int32_t tl_murmur3_32(const void *data, size_t len)
{
	const uint8_t *p = data;
	const uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
	uint32_t h = 0;
	size_t nblocks = len / 4;
	for (size_t i = 0; i < nblocks; i++) {
		uint32_t k = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
		             (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
		k *= c1;
		k = rotl32(k, 15);
		k *= c2;
		h ^= k;
		h = rotl32(h, 13);
		h = h * 5 + 0xe6546b64;
	}
	const uint8_t *tail = p + nblocks * 4;
	uint32_t k = 0;
	switch (len & 3) {
	case 3:
		k ^= (uint32_t)tail[2] << 16;
		/* fall through */
	case 2:
		k ^= (uint32_t)tail[1] << 8;
		/* fall through */
	case 1:
		k ^= tail[0];
		k *= c1;
		k = rotl32(k, 15);
		k *= c2;
		h ^= k;
	}
	h ^= (uint32_t)len;
	h ^= h >> 16;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	return (int32_t)h;
}
