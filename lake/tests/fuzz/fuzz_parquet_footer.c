/*
 * fuzz_parquet_footer.c: libFuzzer target for the Thrift structures of a
 * Parquet file: FileMetaData (the footer), PageHeader and Statistics.
 *
 * The same bytes go to each decoder, which must either accept them or fail
 * with an error set, never read outside them. Whatever a decoder accepts
 * must also survive a round trip: encoding the decoded struct and decoding
 * that again has to give back the very same encoding. That catches fields
 * the decoder keeps but the encoder drops or mangles, which a crash-only
 * target would never notice.
 *
 * The seed corpus (lake/tests/corpus/fuzz_parquet_footer) holds footers and
 * page headers cut out of pyarrow-written files by scripts/make-fuzz-corpus.py.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parquet/metadata.h"
#include "tierlake/buf.h"
#include "tierlake/error.h"

#define FUZZ_REQUIRE(cond)                                                                   \
	do {                                                                                     \
		if (!(cond)) {                                                                       \
			fprintf(stderr, "fuzz_parquet_footer: %s:%d: broken promise: %s\n", __FILE__,   \
			        __LINE__, #cond);                                                        \
			abort();                                                                         \
		}                                                                                    \
	} while (0)

static void require_failure_reported(const tl_error *err)
{
	FUZZ_REQUIRE(err->code != TL_OK);
	FUZZ_REQUIRE(err->message[0] != '\0');
}

static void require_same_encoding(const tl_buf *a, const tl_buf *b, const char *what)
{
	if (a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0))
		return;
	fprintf(stderr, "fuzz_parquet_footer: %s: re-encoding a decoded struct changed it (%zu bytes, then %zu)\n",
	        what, a->len, b->len);
	abort();
}

static void fuzz_file_metadata(const uint8_t *data, size_t size)
{
	tl_error err;
	tl_error_clear(&err);
	pq_file_metadata md;
	memset(&md, 0, sizeof(md));
	if (pq_file_metadata_decode(data, size, &md, &err) != 0) {
		require_failure_reported(&err);
		pq_file_metadata_free(&md);
		return;
	}

	tl_buf first, second;
	tl_buf_init(&first);
	tl_buf_init(&second);
	pq_file_metadata_encode(&md, &first);

	pq_file_metadata again;
	memset(&again, 0, sizeof(again));
	tl_error_clear(&err);
	if (pq_file_metadata_decode(first.data, first.len, &again, &err) != 0) {
		fprintf(stderr, "fuzz_parquet_footer: FileMetaData we encoded does not decode: %s\n", err.message);
		abort();
	}
	pq_file_metadata_encode(&again, &second);
	require_same_encoding(&first, &second, "FileMetaData");

	pq_file_metadata_free(&again);
	pq_file_metadata_free(&md);
	tl_buf_free(&second);
	tl_buf_free(&first);
}

static void fuzz_page_header(const uint8_t *data, size_t size)
{
	tl_error err;
	tl_error_clear(&err);
	pq_page_header h;
	memset(&h, 0, sizeof(h));
	size_t consumed = 0;
	if (pq_page_header_decode(data, size, &h, &consumed, &err) != 0) {
		require_failure_reported(&err);
		return;
	}
	FUZZ_REQUIRE(consumed > 0 && consumed <= size);

	tl_buf first, second;
	tl_buf_init(&first);
	tl_buf_init(&second);
	pq_page_header_encode(&h, &first);

	pq_page_header again;
	memset(&again, 0, sizeof(again));
	size_t again_consumed = 0;
	tl_error_clear(&err);
	if (pq_page_header_decode(first.data, first.len, &again, &again_consumed, &err) != 0) {
		fprintf(stderr, "fuzz_parquet_footer: PageHeader we encoded does not decode: %s\n", err.message);
		abort();
	}
	FUZZ_REQUIRE(again_consumed == first.len);
	pq_page_header_encode(&again, &second);
	require_same_encoding(&first, &second, "PageHeader");

	tl_buf_free(&second);
	tl_buf_free(&first);
}

static void fuzz_statistics(const uint8_t *data, size_t size)
{
	tl_error err;
	tl_error_clear(&err);
	pq_statistics stats;
	memset(&stats, 0, sizeof(stats));
	if (pq_statistics_decode(data, size, &stats, &err) != 0) {
		require_failure_reported(&err);
		return;
	}
	/* Views must lie inside the input. */
	const tl_bytes views[] = {stats.min, stats.max, stats.min_value, stats.max_value};
	for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
		if (views[i].len == 0)
			continue;
		FUZZ_REQUIRE(views[i].ptr >= data && views[i].ptr + views[i].len <= data + size);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_file_metadata(data, size);
	fuzz_page_header(data, size);
	fuzz_statistics(data, size);
	return 0;
}
