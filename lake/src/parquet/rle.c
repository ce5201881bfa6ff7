/*
 * rle.c: the RLE / bit-packed hybrid encoding (definition levels, dictionary
 * indices, RLE booleans) and the LSB-first bit packing it shares with
 * DELTA_BINARY_PACKED.
 *
 * Both directions sit on the hot path of every column, so bit unpacking is
 * specialised per bit width: a switch hands a compile-time width to an
 * always-inlined group-of-8 routine, which the compiler turns into straight
 * shifts and masks over 64-bit loads.
 */
#include <string.h>

#include "parquet/encoding.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the Parquet bit packing here assumes a little-endian host"
#endif

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* The spec caps every run at 2^31 - 1 values so readers can count in int32. */
#define RLE_MAX_RUN ((uint64_t)INT32_MAX)
#define RLE_MAX_GROUPS (RLE_MAX_RUN / 8)

int pq_bit_width(uint64_t max_value)
{
	return max_value ? 64 - __builtin_clzll(max_value) : 0;
}

static ALWAYS_INLINE uint64_t load_le64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static ALWAYS_INLINE void store_le64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* ------------------------------------------------------ bit unpacking */

/*
 * One group of 8 values of width bw (1..32). A value starts at most 7 bits
 * into a byte, so one 8-byte load covers it; the load may reach up to 8
 * bytes past the group, which the callers guarantee are readable.
 */
static ALWAYS_INLINE void unpack8_u32(const uint8_t *in, uint32_t *out, const int bw)
{
	const uint64_t mask = ((uint64_t)1 << bw) - 1;
#pragma GCC unroll 8
	for (int i = 0; i < 8; i++) {
		const int bit = i * bw;
		out[i] = (uint32_t)((load_le64(in + (bit >> 3)) >> (bit & 7)) & mask);
	}
}

/* As unpack8_u32 for widths 1..64: a value may span 9 bytes. */
static ALWAYS_INLINE void unpack8_u64(const uint8_t *in, uint64_t *out, const int bw)
{
	const uint64_t mask = bw == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bw) - 1;
#pragma GCC unroll 8
	for (int i = 0; i < 8; i++) {
		const int bit = i * bw, shift = bit & 7;
		const uint8_t *p = in + (bit >> 3);
		uint64_t v = load_le64(p) >> shift;
		if (shift != 0 && bw + shift > 64)
			v |= (uint64_t)p[8] << (64 - shift);
		out[i] = v & mask;
	}
}

/*
 * Unpacks ngroups groups. Groups followed by at least 8 readable bytes use
 * wide loads straight from the input; the last few are copied into a
 * zero-padded scratch first so no load passes in + avail.
 */
#define DEFINE_UNPACK_GROUPS(NAME, T, UNPACK8)                                          \
	static ALWAYS_INLINE void NAME(const uint8_t *in, size_t avail, T *out, int64_t ngroups, \
	                               const int bw)                                        \
	{                                                                                   \
		int64_t direct = avail >= 8 ? (int64_t)((avail - 8) / (size_t)bw) : 0;          \
		if (direct > ngroups)                                                           \
			direct = ngroups;                                                           \
		for (int64_t g = 0; g < direct; g++)                                            \
			UNPACK8(in + g * bw, out + 8 * g, bw);                                      \
		/* At most ceil(8 / bw) + 1 groups remain: at most 8 + 2 * bw bytes. */         \
		uint8_t tail[8 + 2 * 64 + 8 + 8];                                               \
		int64_t rest = ngroups - direct;                                                \
		size_t tail_bytes = (size_t)rest * (size_t)bw;                                  \
		if (rest == 0)                                                                  \
			return;                                                                     \
		memcpy(tail, in + direct * bw, tail_bytes);                                     \
		memset(tail + tail_bytes, 0, 9);                                                \
		for (int64_t g = 0; g < rest; g++)                                              \
			UNPACK8(tail + g * bw, out + 8 * (direct + g), bw);                         \
	}

DEFINE_UNPACK_GROUPS(unpack_groups_u32, uint32_t, unpack8_u32)
DEFINE_UNPACK_GROUPS(unpack_groups_u64, uint64_t, unpack8_u64)

#define WIDTHS_1_TO_32(X)                                                              \
	X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)   \
	X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28)      \
	X(29) X(30) X(31) X(32)
#define WIDTHS_33_TO_64(X)                                                             \
	X(33) X(34) X(35) X(36) X(37) X(38) X(39) X(40) X(41) X(42) X(43) X(44) X(45)      \
	X(46) X(47) X(48) X(49) X(50) X(51) X(52) X(53) X(54) X(55) X(56) X(57) X(58)      \
	X(59) X(60) X(61) X(62) X(63) X(64)

void pq_bit_unpack32(const uint8_t *in, size_t avail, int bit_width, uint32_t *out, int64_t ngroups)
{
	switch (bit_width) {
	case 0:
		memset(out, 0, (size_t)ngroups * 8 * sizeof(*out));
		return;
#define UNPACK32_CASE(W)                                                               \
	case W:                                                                            \
		unpack_groups_u32(in, avail, out, ngroups, W);                                 \
		return;
		WIDTHS_1_TO_32(UNPACK32_CASE)
#undef UNPACK32_CASE
	}
}

void pq_bit_unpack64(const uint8_t *in, size_t avail, int bit_width, uint64_t *out, int64_t ngroups)
{
	switch (bit_width) {
	case 0:
		memset(out, 0, (size_t)ngroups * 8 * sizeof(*out));
		return;
#define UNPACK64_CASE(W)                                                               \
	case W:                                                                            \
		unpack_groups_u64(in, avail, out, ngroups, W);                                 \
		return;
		WIDTHS_1_TO_32(UNPACK64_CASE)
		WIDTHS_33_TO_64(UNPACK64_CASE)
#undef UNPACK64_CASE
	}
}

/* -------------------------------------------------------- bit packing */

/*
 * Packs 8 values into exactly bw bytes: bits gather in a 64-bit
 * accumulator that is stored whenever it fills, so no store passes the
 * group. Instantiated for 64-bit values (delta miniblocks) and 32-bit ones
 * (RLE literal groups).
 */
#define DEFINE_PACK8(NAME, T)                                                          \
	static ALWAYS_INLINE void NAME(uint8_t *out, const T *in, const int bw)            \
	{                                                                                  \
		const uint64_t mask = bw == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bw) - 1;       \
		uint64_t acc = 0;                                                              \
		int nacc = 0, pos = 0;                                                         \
		_Pragma("GCC unroll 8") for (int i = 0; i < 8; i++)                            \
		{                                                                              \
			uint64_t v = (uint64_t)in[i] & mask;                                       \
			acc |= v << nacc;                                                          \
			if (nacc + bw >= 64) {                                                     \
				store_le64(out + pos, acc);                                            \
				pos += 8;                                                              \
				acc = nacc ? v >> (64 - nacc) : 0;                                     \
				nacc = nacc + bw - 64;                                                 \
			} else {                                                                   \
				nacc += bw;                                                            \
			}                                                                          \
		}                                                                              \
		for (; nacc > 0; nacc -= 8, acc >>= 8)                                         \
			out[pos++] = (uint8_t)acc;                                                 \
	}

DEFINE_PACK8(pack8_u64, uint64_t)
DEFINE_PACK8(pack8_u32, uint32_t)

void pq_bit_pack64(uint8_t *out, const uint64_t *in, int bit_width, int64_t ngroups)
{
	switch (bit_width) {
	case 0:
		return;
#define PACK64_CASE(W)                                                                 \
	case W:                                                                            \
		for (int64_t g = 0; g < ngroups; g++)                                          \
			pack8_u64(out + g * W, in + 8 * g, W);                                     \
		return;
		WIDTHS_1_TO_32(PACK64_CASE)
		WIDTHS_33_TO_64(PACK64_CASE)
#undef PACK64_CASE
	}
}

static void bit_pack32(uint8_t *out, const uint32_t *in, int bit_width, int64_t ngroups)
{
	switch (bit_width) {
	case 0:
		return;
#define PACK32_CASE(W)                                                                 \
	case W:                                                                            \
		for (int64_t g = 0; g < ngroups; g++)                                          \
			pack8_u32(out + g * W, in + 8 * g, W);                                     \
		return;
		WIDTHS_1_TO_32(PACK32_CASE)
#undef PACK32_CASE
	}
}

/* -------------------------------------------------------- RLE decoder */

void pq_rle_decoder_init(pq_rle_decoder *d, const uint8_t *data, size_t len, int bit_width)
{
	d->p = data;
	/* NULL + 0 is undefined in C, and an empty level section may be NULL. */
	d->end = len ? data + len : data;
	d->bit_width = bit_width;
	d->repeat_left = 0;
	d->repeat_value = 0;
	d->packed_left = 0;
	d->packed = NULL;
	d->packed_bit = 0;
}

/* Reads the next run header and sets up the run. */
static int rle_next_run(pq_rle_decoder *d, tl_error *err)
{
	const int bw = d->bit_width;
	uint64_t header;

	if (pq_read_uvarint(&d->p, d->end, &header) < 0)
		return tl_error_set(err, TL_ERR_CORRUPT, "RLE/bit-packed hybrid: run header is truncated or overlong");

	uint64_t count = header >> 1;
	if (header & 1) {
		if (count > RLE_MAX_GROUPS)
			return tl_error_set(err, TL_ERR_CORRUPT,
			                    "RLE/bit-packed hybrid: bit-packed run of %llu groups exceeds 2^31 - 1 values",
			                    (unsigned long long)count);
		size_t avail = (size_t)(d->end - d->p);
		d->packed = d->p;
		d->packed_bit = 0;
		if (bw > 0 && count * (uint64_t)bw > avail) {
			/* A final run cut short: keep its whole groups and let the
			 * caller see the data end, as parquet-cpp does. */
			count = avail / (size_t)bw;
			d->p = d->end;
		} else {
			d->p += count * (uint64_t)bw;
		}
		d->packed_left = (uint32_t)(count * 8);
		return 0;
	}

	if (count > RLE_MAX_RUN)
		return tl_error_set(err, TL_ERR_CORRUPT, "RLE/bit-packed hybrid: RLE run of %llu values exceeds 2^31 - 1",
		                    (unsigned long long)count);
	int nbytes = (bw + 7) / 8;
	if (d->end - d->p < nbytes)
		return tl_error_set(err, TL_ERR_CORRUPT, "RLE/bit-packed hybrid: repeated value of an RLE run is truncated");
	uint32_t value = 0;
	for (int i = 0; i < nbytes; i++)
		value |= (uint32_t)d->p[i] << (8 * i);
	d->p += nbytes;
	if (bw < 32 && (value >> bw) != 0)
		return tl_error_set(err, TL_ERR_CORRUPT, "RLE/bit-packed hybrid: repeated value %u does not fit in bit width %d",
		                    value, bw);
	d->repeat_value = value;
	d->repeat_left = (uint32_t)count;
	return 0;
}

/* Copies up to `want` values out of the current bit-packed run. */
static int64_t rle_take_packed(pq_rle_decoder *d, uint32_t *out, int64_t want)
{
	const int bw = d->bit_width;
	int64_t k = want < (int64_t)d->packed_left ? want : (int64_t)d->packed_left;
	int64_t done = 0;
	uint32_t group[8];

	d->packed_left -= (uint32_t)k;
	if (bw == 0) {
		memset(out, 0, (size_t)k * sizeof(*out));
		return k;
	}

	/* Finish a group an earlier call started. */
	uint32_t index = d->packed_bit / (uint32_t)bw;
	if (index != 0) {
		pq_bit_unpack32(d->packed, (size_t)(d->end - d->packed), bw, group, 1);
		int64_t take = 8 - (int64_t)index < k ? 8 - (int64_t)index : k;
		memcpy(out, group + index, (size_t)take * sizeof(*out));
		done = take;
		index += (uint32_t)take;
		if (index == 8) {
			d->packed += bw;
			index = 0;
		}
	}

	/* Whole groups straight into the output. */
	int64_t groups = (k - done) / 8;
	if (groups > 0) {
		pq_bit_unpack32(d->packed, (size_t)(d->end - d->packed), bw, out + done, groups);
		d->packed += groups * bw;
		done += groups * 8;
	}

	/* Start a group and keep our place in it for the next call. */
	if (done < k) {
		pq_bit_unpack32(d->packed, (size_t)(d->end - d->packed), bw, group, 1);
		index = (uint32_t)(k - done);
		memcpy(out + done, group, index * sizeof(*out));
	}
	d->packed_bit = index * (uint32_t)bw;
	return k;
}

int64_t pq_rle_decode(pq_rle_decoder *d, uint32_t *out, int64_t n, tl_error *err)
{
	if (d->bit_width < 0 || d->bit_width > 32)
		return tl_error_set(err, TL_ERR_CORRUPT, "RLE/bit-packed hybrid: bit width %d is outside 0..32",
		                    d->bit_width);
	int64_t done = 0;
	while (done < n) {
		if (d->repeat_left > 0) {
			int64_t k = n - done < (int64_t)d->repeat_left ? n - done : (int64_t)d->repeat_left;
			const uint32_t v = d->repeat_value;
			uint32_t *o = out + done;
			for (int64_t i = 0; i < k; i++)
				o[i] = v;
			d->repeat_left -= (uint32_t)k;
			done += k;
		} else if (d->packed_left > 0) {
			done += rle_take_packed(d, out + done, n - done);
		} else if (d->p < d->end) {
			if (rle_next_run(d, err) < 0)
				return -1;
		} else {
			break;
		}
	}
	return done;
}

/* -------------------------------------------------------- RLE encoder */

/*
 * The encoder follows parquet-cpp's scheme: values are buffered in groups of
 * 8; a value repeated 8 times from the start of a group becomes a candidate
 * RLE run that swallows the rest of the repetition, and other groups are
 * bit-packed into an open literal run. Two refinements keep output compact:
 * a repetition too short to pay for the headers it costs (a run of 8..24
 * one-bit levels, say) is bit-packed with its neighbours instead; and the
 * literal run's header is reserved as one byte and widened (moving the run
 * once) only if the run grows past 63 groups, rather than capping literal
 * runs at 63 groups as parquet-cpp does.
 */

void pq_rle_encoder_init(pq_rle_encoder *e, tl_buf *out, int bit_width)
{
	e->out = out;
	e->bit_width = bit_width;
	e->nbuffered = 0;
	e->run_value = 0;
	e->run_length = 0;
	e->packed_header_pos = SIZE_MAX;
	e->packed_groups = 0;
}

static void rle_close_literal_run(pq_rle_encoder *e)
{
	if (e->packed_header_pos == SIZE_MAX)
		return;
	tl_buf *out = e->out;
	if (tl_buf_failed(out)) { /* the header byte may never have been stored; the writer checks out */
		e->packed_header_pos = SIZE_MAX;
		e->packed_groups = 0;
		return;
	}
	uint64_t header = ((uint64_t)e->packed_groups << 1) | 1;
	size_t header_len = 1;
	for (uint64_t h = header; h >= 0x80; h >>= 7)
		header_len++;
	size_t pos = e->packed_header_pos;
	if (header_len > 1) {
		if (tl_buf_reserve(out, header_len - 1) < 0)
			return; /* out is failed; its writer checks it (buf.h) */
		memmove(out->data + pos + header_len, out->data + pos + 1, out->len - pos - 1);
		out->len += header_len - 1;
	}
	for (size_t i = 0; i < header_len; i++, header >>= 7)
		out->data[pos + i] = (uint8_t)((header & 0x7f) | (i + 1 < header_len ? 0x80 : 0));
	e->packed_header_pos = SIZE_MAX;
	e->packed_groups = 0;
}

/* Appends ngroups groups of 8 to the open literal run, opening one if needed. */
static void rle_write_literal_groups(pq_rle_encoder *e, const uint32_t *values, int64_t ngroups)
{
	if (e->packed_header_pos == SIZE_MAX) {
		e->packed_header_pos = e->out->len;
		tl_buf_append_byte(e->out, 0);
	}
	uint8_t *packed = tl_buf_extend(e->out, (size_t)ngroups * (size_t)e->bit_width);
	if (packed == NULL)
		return; /* out is failed; the writer checks it (buf.h) */
	bit_pack32(packed, values, e->bit_width, ngroups);
	e->packed_groups += ngroups;
	if ((uint64_t)e->packed_groups == RLE_MAX_GROUPS)
		rle_close_literal_run(e);
}

static void rle_write_literal_group(pq_rle_encoder *e, const uint32_t *values)
{
	rle_write_literal_groups(e, values, 1);
}

static inline bool group_is_uniform(const uint32_t *v)
{
	return ((v[0] ^ v[1]) | (v[0] ^ v[2]) | (v[0] ^ v[3]) | (v[0] ^ v[4]) | (v[0] ^ v[5]) | (v[0] ^ v[6]) |
	        (v[0] ^ v[7])) == 0;
}

/*
 * At a group boundary with no repetition pending, a group of 8 holding two
 * distinct values can only be bit-packed: pack the run of such groups ahead
 * straight from the input, skipping the per-value bookkeeping. Returns the
 * number of values consumed.
 */
static int64_t rle_pack_mixed_groups(pq_rle_encoder *e, const uint32_t *values, int64_t n)
{
	int64_t limit = n / 8, groups = 0;
	if ((uint64_t)limit > RLE_MAX_GROUPS - (uint64_t)e->packed_groups)
		limit = (int64_t)(RLE_MAX_GROUPS - (uint64_t)e->packed_groups);
	while (groups < limit && !group_is_uniform(values + 8 * groups))
		groups++;
	if (groups > 0)
		rle_write_literal_groups(e, values, groups);
	return groups * 8;
}

static void rle_write_repeat_run(pq_rle_encoder *e, uint32_t value, int64_t length)
{
	int nbytes = (e->bit_width + 7) / 8;
	while (length > 0) {
		int64_t chunk = (uint64_t)length > RLE_MAX_RUN ? (int64_t)RLE_MAX_RUN : length;
		tl_buf_append_uvarint(e->out, (uint64_t)chunk << 1);
		for (int i = 0; i < nbytes; i++)
			tl_buf_append_byte(e->out, (uint8_t)(value >> (8 * i)));
		length -= chunk;
	}
}

/*
 * Whether an RLE run of `length` beats bit-packing it: the run costs its
 * header and value, and splitting the surrounding literal run costs about
 * one more header byte.
 */
static bool rle_run_pays(int bit_width, int64_t length)
{
	if (bit_width == 0)
		return true;
	int header = 1;
	for (uint64_t h = (uint64_t)length << 1; h >= 0x80; h >>= 7)
		header++;
	return (uint64_t)length * (uint64_t)bit_width > 8 * (uint64_t)(header + (bit_width + 7) / 8 + 1);
}

/* The repetition being counted has ended: write it as a run or as literals. */
static void rle_end_repeat(pq_rle_encoder *e)
{
	if (rle_run_pays(e->bit_width, e->run_length)) {
		rle_close_literal_run(e);
		rle_write_repeat_run(e, e->run_value, e->run_length);
	} else {
		uint32_t group[8];
		for (int i = 0; i < 8; i++)
			group[i] = e->run_value;
		for (int64_t g = 0; g < e->run_length / 8; g++)
			rle_write_literal_group(e, group);
		/* The odd values start the next group. */
		e->nbuffered = (int)(e->run_length % 8);
		for (int i = 0; i < e->nbuffered; i++)
			e->buffered[i] = e->run_value;
	}
	e->run_length = 0;
}

/* A full buffer is either the start of a repetition or a literal group. */
static void rle_flush_buffered(pq_rle_encoder *e)
{
	if (e->run_length >= 8) {
		/* Every buffered value is the repetition's; it is written when it ends. */
		e->nbuffered = 0;
		return;
	}
	rle_write_literal_group(e, e->buffered);
	e->nbuffered = 0;
	/* The values counted so far went out as literals: a run must start afresh. */
	e->run_length = 0;
}

void pq_rle_encode(pq_rle_encoder *e, const uint32_t *values, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		if (e->nbuffered == 0 && e->run_length == 0 && n - i >= 8) {
			i += rle_pack_mixed_groups(e, values + i, n - i);
			if (n - i >= 8 && group_is_uniform(values + i)) {
				/* A uniform group opens a repetition, as 8 steps below would. */
				e->run_value = values[i];
				e->run_length = 8;
				for (i += 8; i < n && values[i] == e->run_value; i++)
					e->run_length++;
			}
			if (i == n)
				break;
		}
		uint32_t v = values[i];
		if (v == e->run_value && e->run_length > 0) {
			if (e->run_length >= 8) {
				/* Inside an RLE run: count the rest of the repetition in one sweep. */
				int64_t j = i + 1;
				while (j < n && values[j] == v)
					j++;
				e->run_length += j - i;
				i = j - 1;
				continue;
			}
			e->run_length++;
		} else {
			if (e->run_length >= 8)
				rle_end_repeat(e);
			e->run_value = v;
			e->run_length = 1;
		}
		e->buffered[e->nbuffered++] = v;
		if (e->nbuffered == 8)
			rle_flush_buffered(e);
	}
}

void pq_rle_encoder_finish(pq_rle_encoder *e)
{
	if (e->run_length >= 8)
		rle_end_repeat(e);
	if (e->nbuffered > 0) {
		if (e->run_length == e->nbuffered && e->packed_header_pos == SIZE_MAX) {
			/* A lone short repetition: one RLE run beats a padded group. */
			rle_write_repeat_run(e, e->run_value, e->run_length);
		} else {
			/* Pad the last group with zeros; readers stop at their count. */
			for (int i = e->nbuffered; i < 8; i++)
				e->buffered[i] = 0;
			rle_write_literal_group(e, e->buffered);
		}
	}
	rle_close_literal_run(e);
	e->nbuffered = 0;
	e->run_length = 0;
}
