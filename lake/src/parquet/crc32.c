/*
 * crc32.c: the CRC-32 that Parquet page headers may carry (the IEEE
 * polynomial, as zlib computes it), over a page's bytes as stored.
 */
#include <limits.h>
#include <zlib.h>

#include "parquet/encoding.h"

uint32_t pq_crc32(const uint8_t *data, size_t len)
{
	uLong crc = crc32(0L, Z_NULL, 0);
	/* zlib counts in uInt; feed larger buffers in pieces. */
	while (len > 0) {
		uInt piece = len > UINT_MAX ? UINT_MAX : (uInt)len;
		crc = crc32(crc, data, piece);
		data += piece;
		len -= piece;
	}
	return (uint32_t)crc;
}
