/*
 * writer_dictionary.c: the writer's per-column-chunk dictionary of
 * distinct values.
 *
 * Every non-null value the writer sees goes through here while a chunk is
 * dictionary-encoded, so this is the writer's hot path. The design keeps a
 * hit (the common case for low-cardinality columns) to one hash, one slot
 * load and one compare:
 *   - numbers are keyed by their bits inline in the slot (so -0.0 and 0.0,
 *     or two different NaNs, stay distinct, as the dictionary must
 *     reproduce values exactly);
 *   - byte arrays keep their 64-bit hash in the slot, and the bytes are
 *     compared only when it matches;
 *   - entries are stored PLAIN-encoded, so the dictionary page is written
 *     straight from `plain` without another pass.
 */
#include <stdlib.h>
#include <string.h>

#include "parquet/encoding.h"
#include "parquet/writer_internal.h"

#define DICT_INITIAL_SLOTS 64

void pq_dict_init(pq_dict *d, tl_pq_physical physical, int type_length)
{
	memset(d, 0, sizeof(*d));
	tl_buf_init(&d->plain);
	switch (physical) {
	case TL_PQ_INT32:
	case TL_PQ_FLOAT:
		d->width = 4;
		break;
	case TL_PQ_INT64:
	case TL_PQ_DOUBLE:
		d->width = 8;
		break;
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
		d->width = type_length;
		d->by_bytes = true;
		break;
	default:
		d->width = 0;
		d->by_bytes = true;
		break;
	}
}

void pq_dict_reset(pq_dict *d)
{
	tl_buf_reset(&d->plain);
	if (d->count > 0)
		memset(d->slots, 0, (d->mask + 1) * sizeof(*d->slots));
	d->count = 0;
}

void pq_dict_free(pq_dict *d)
{
	tl_buf_free(&d->plain);
	tl_free(d->entries);
	tl_free(d->slots);
	memset(d, 0, sizeof(*d));
}

int pq_dict_index_bit_width(const pq_dict *d)
{
	if (d->count <= 1)
		return 1;
	return pq_bit_width(d->count - 1);
}

/* ------------------------------------------------------------ hashing */

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t load32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* Multiplies into 128 bits and folds the halves: one instruction on
 * x86-64 and arm64, and every input bit reaches every output bit. */
static inline uint64_t fold_multiply(uint64_t a, uint64_t b)
{
	__extension__ typedef unsigned __int128 u128;
	u128 r = (u128)a * b;
	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

#define HASH_K0 0x9e3779b97f4a7c15ull
#define HASH_K1 0xc2b2ae3d27d4eb4full
#define HASH_K2 0x165667b19e3779f9ull

static inline uint64_t hash_u64(uint64_t x)
{
	return fold_multiply(x ^ HASH_K0, HASH_K1);
}

uint64_t pq_hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t a, b, seed = HASH_K2 ^ (uint64_t)n;
	if (n <= 16) {
		/* Two (possibly overlapping) loads cover every byte of short
		 * values without a loop or a byte-wise tail. */
		if (n >= 8) {
			a = load64(p);
			b = load64(p + n - 8);
		} else if (n >= 4) {
			a = load32(p);
			b = load32(p + n - 4);
		} else if (n > 0) {
			a = ((uint64_t)p[0] << 16) | ((uint64_t)p[n >> 1] << 8) | p[n - 1];
			b = 0;
		} else {
			a = b = 0;
		}
	} else {
		const uint8_t *start = p;
		size_t left = n;
		while (left > 16) {
			seed = fold_multiply(load64(p) ^ HASH_K0, load64(p + 8) ^ seed);
			p += 16;
			left -= 16;
		}
		/* The last 16 bytes, overlapping what the loop consumed. */
		p = start + n - 16;
		a = load64(p);
		b = load64(p + 8);
	}
	return fold_multiply(fold_multiply(a ^ HASH_K0, b ^ seed), HASH_K1 ^ (uint64_t)n);
}

/* ------------------------------------------------------------ table growth */

/* Where a slot's key starts probing: numbers are hashed, byte arrays' keys are hashes already. */
static inline size_t home_slot(const pq_dict *d, uint64_t key)
{
	return (size_t)(d->by_bytes ? key : hash_u64(key)) & d->mask;
}

/*
 * Doubles the table (or makes the first one) and re-inserts every slot.
 * Out of memory, it keeps the old table and marks d->plain failed, which
 * the writer checks (buf.h); false then.
 */
static bool grow_table(pq_dict *d)
{
	size_t old_slots = d->slots ? d->mask + 1 : 0;
	pq_dict_slot *old = d->slots;
	size_t slots = old_slots ? old_slots * 2 : DICT_INITIAL_SLOTS;
	pq_dict_slot *grown = tl_calloc(slots, sizeof(pq_dict_slot));
	if (grown == NULL) {
		tl_buf_set_failed(&d->plain);
		return false;
	}
	d->slots = grown;
	d->mask = slots - 1;
	for (size_t i = 0; i < old_slots; i++) {
		if (old[i].index1 == 0)
			continue;
		size_t pos = home_slot(d, old[i].key);
		while (d->slots[pos].index1 != 0)
			pos = (pos + 1) & d->mask;
		d->slots[pos] = old[i];
	}
	tl_free(old);
	return true;
}

/* Kept at most half full, so probe sequences stay short. */
static inline bool table_needs_growth(const pq_dict *d)
{
	return d->slots == NULL || ((size_t)d->count + 1) * 2 > d->mask + 1;
}

/* An empty slot for a key known to be absent, growing the table first if due; NULL out of memory. */
static pq_dict_slot *slot_for_insert(pq_dict *d, uint64_t key, pq_dict_slot *found)
{
	if (!table_needs_growth(d))
		return found;
	if (!grow_table(d))
		return NULL;
	size_t pos = home_slot(d, key);
	while (d->slots[pos].index1 != 0)
		pos = (pos + 1) & d->mask;
	return &d->slots[pos];
}

/* ------------------------------------------------------------ encoding */

/*
 * Values are looked up in groups: hash a group, prefetch every home slot,
 * then probe. A high-cardinality column's table outgrows the cache, and
 * this overlaps the misses instead of taking them one at a time.
 */
#define LOOKUP_GROUP 16

/*
 * One loop per key width, so the compiler sees a constant width and the
 * load, hash and compare are a handful of instructions.
 */
static inline int64_t encode_fixed(pq_dict *d, const uint8_t *values, int64_t n, uint32_t *indices,
                                   size_t budget, const int width)
{
	uint64_t hashes[LOOKUP_GROUP];
	if (d->slots == NULL && !grow_table(d))
		return 0;
	for (int64_t group = 0; group < n; group += LOOKUP_GROUP) {
		int64_t end = n - group < LOOKUP_GROUP ? n : group + LOOKUP_GROUP;
		for (int64_t i = group; i < end; i++) {
			const uint8_t *value = values + (size_t)i * (size_t)width;
			hashes[i - group] = hash_u64(width == 8 ? load64(value) : load32(value));
			__builtin_prefetch(&d->slots[hashes[i - group] & d->mask]);
		}
		for (int64_t i = group; i < end; i++) {
			const uint8_t *value = values + (size_t)i * (size_t)width;
			uint64_t key = width == 8 ? load64(value) : load32(value);
			/* The table may have grown since the prefetch: mask now. */
			size_t pos = (size_t)hashes[i - group] & d->mask;
			for (;;) {
				pq_dict_slot *slot = &d->slots[pos];
				if (slot->index1 != 0) {
					if (slot->key == key) {
						indices[i] = slot->index1 - 1;
						break;
					}
					pos = (pos + 1) & d->mask;
					continue;
				}
				/* A new value. */
				if (d->plain.len + (size_t)width > budget)
					return i;
				slot = slot_for_insert(d, key, slot);
				tl_buf_append(&d->plain, value, (size_t)width);
				if (slot == NULL || tl_buf_failed(&d->plain))
					return i;
				slot->key = key;
				slot->index1 = d->count + 1;
				indices[i] = d->count++;
				break;
			}
		}
	}
	return n;
}

/* False out of memory (d->plain is then failed). */
static bool add_bytes_entry(pq_dict *d, tl_bytes value)
{
	if (d->count == d->entries_cap) {
		size_t cap = d->entries_cap ? d->entries_cap * 2 : 256;
		pq_dict_entry *entries = tl_realloc(d->entries, cap * sizeof(*d->entries));
		if (entries == NULL) {
			tl_buf_set_failed(&d->plain);
			return false;
		}
		d->entries = entries;
		d->entries_cap = cap;
	}
	if (d->width == 0) {
		uint8_t prefix[4] = {(uint8_t)value.len, (uint8_t)(value.len >> 8), (uint8_t)(value.len >> 16),
		                     (uint8_t)(value.len >> 24)};
		tl_buf_append(&d->plain, prefix, sizeof(prefix));
	}
	d->entries[d->count].offset = (uint32_t)d->plain.len;
	d->entries[d->count].len = value.len;
	tl_buf_append(&d->plain, value.ptr, value.len);
	return !tl_buf_failed(&d->plain);
}

/* Whether a dictionary entry holds exactly these bytes; short values are compared without a call. */
static inline bool entry_equals(const pq_dict *d, const pq_dict_entry *e, tl_bytes value)
{
	if (e->len != value.len)
		return false;
	const uint8_t *stored = d->plain.data + e->offset;
	/* Two overlapping loads cover every byte, as in pq_hash_bytes. */
	if (value.len >= 8 && value.len <= 16)
		return load64(stored) == load64(value.ptr) &&
		       load64(stored + value.len - 8) == load64(value.ptr + value.len - 8);
	if (value.len >= 4 && value.len < 8)
		return load32(stored) == load32(value.ptr) &&
		       load32(stored + value.len - 4) == load32(value.ptr + value.len - 4);
	return value.len == 0 || memcmp(stored, value.ptr, value.len) == 0;
}

static int64_t encode_bytes(pq_dict *d, const tl_bytes *values, int64_t n, uint32_t *indices, size_t budget)
{
	uint64_t hashes[LOOKUP_GROUP];
	if (d->slots == NULL && !grow_table(d))
		return 0;
	const size_t prefix = d->width == 0 ? 4 : 0;
	for (int64_t group = 0; group < n; group += LOOKUP_GROUP) {
		int64_t end = n - group < LOOKUP_GROUP ? n : group + LOOKUP_GROUP;
		for (int64_t i = group; i < end; i++) {
			hashes[i - group] = pq_hash_bytes(values[i].ptr, values[i].len);
			__builtin_prefetch(&d->slots[hashes[i - group] & d->mask]);
		}
		for (int64_t i = group; i < end; i++) {
			tl_bytes value = values[i];
			uint64_t hash = hashes[i - group];
			size_t pos = (size_t)hash & d->mask;
			for (;;) {
				pq_dict_slot *slot = &d->slots[pos];
				if (slot->index1 != 0) {
					if (slot->key == hash && entry_equals(d, &d->entries[slot->index1 - 1], value)) {
						indices[i] = slot->index1 - 1;
						break;
					}
					pos = (pos + 1) & d->mask;
					continue;
				}
				if (d->plain.len + prefix + value.len > budget)
					return i;
				slot = slot_for_insert(d, hash, slot);
				if (slot == NULL || !add_bytes_entry(d, value))
					return i;
				slot->key = hash;
				slot->index1 = d->count + 1;
				indices[i] = d->count++;
				break;
			}
		}
	}
	return n;
}

int64_t pq_dict_encode(pq_dict *d, const void *values, int64_t n, uint32_t *indices, size_t budget)
{
	if (n <= 0)
		return 0;
	if (d->by_bytes)
		return encode_bytes(d, values, n, indices, budget);
	if (d->width == 8)
		return encode_fixed(d, values, n, indices, budget, 8);
	return encode_fixed(d, values, n, indices, budget, 4);
}
