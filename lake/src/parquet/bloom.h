/*
 * bloom.h: Parquet's split block bloom filter (parquet-format
 * BloomFilter.md) and the hash it is defined with, xxHash64 (seed 0) of a
 * value's PLAIN encoding: little-endian numbers, a byte array's bytes
 * without their length prefix, a fixed-length array's bytes as stored.
 *
 * The filter is an array of 32-byte blocks of eight 32-bit words. A hash
 * picks a block with its high half and sets (or tests) one bit in each
 * word, chosen by its low half multiplied by eight fixed salts. Any writer
 * and reader following the spec agree bit for bit, so filters written
 * here are probed by DuckDB, Spark and pyarrow, and theirs here.
 */
#ifndef TIERLAKE_PARQUET_BLOOM_H
#define TIERLAKE_PARQUET_BLOOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The spec's bounds on a filter's bitset, in bytes (a power of two). */
#define PQ_BLOOM_MIN_BYTES 32
#define PQ_BLOOM_MAX_BYTES (128 * 1024 * 1024)

uint64_t pq_xxhash64(const void *data, size_t len, uint64_t seed);

/*
 * The bitset size the spec recommends for ndv distinct values at false
 * positive probability fpp: the bits of an ideal split block filter,
 * rounded up to a power of two bytes within [PQ_BLOOM_MIN_BYTES, max_bytes].
 */
int64_t pq_bloom_optimal_bytes(int64_t ndv, double fpp, int64_t max_bytes);

/* bitset has num_bytes bytes, a multiple of 32. */
void pq_bloom_insert(uint8_t *bitset, size_t num_bytes, uint64_t hash);
bool pq_bloom_may_contain(const uint8_t *bitset, size_t num_bytes, uint64_t hash);

/*
 * The same probe a block at a time, for readers that fetch only the block
 * a hash falls in: its index among the num_bytes / 32 blocks, and the test
 * of that block's 32 bytes.
 */
uint64_t pq_bloom_block_index(size_t num_bytes, uint64_t hash);
bool pq_bloom_block_may_contain(const uint8_t *block, uint64_t hash);

#endif
