/*
 * fuzz_iceberg_metadata.c: libFuzzer target for Iceberg table metadata
 * JSON (v<N>.metadata.json), which TierDB reads from lakes any engine may
 * have written.
 *
 * Whatever the parser accepts must also write back out (as v2) and parse
 * again to metadata that writes the very same bytes: a field the parser
 * keeps but the writer drops or mangles shows up here, not only crashes.
 * Seeds (lake/tests/corpus/fuzz_iceberg_metadata) are the pyiceberg- and
 * Java-style fixtures of lake/tests/data/iceberg.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/iceberg_metadata.h"

#define FUZZ_REQUIRE(cond)                                                                         \
	do {                                                                                           \
		if (!(cond)) {                                                                             \
			fprintf(stderr, "fuzz_iceberg_metadata: %s:%d: broken promise: %s\n", __FILE__, __LINE__, \
			        #cond);                                                                        \
			abort();                                                                               \
		}                                                                                          \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_table_metadata *md = tl_ice_metadata_parse((const char *)data, size, &err);
	if (md == NULL) {
		FUZZ_REQUIRE(err.code != TL_OK && err.message[0] != '\0');
		return 0;
	}
	(void)tl_ice_metadata_current_snapshot(md);

	tl_buf first, second;
	tl_buf_init(&first);
	tl_buf_init(&second);
	if (tl_ice_metadata_write(md, &first, &err) == 0) {
		tl_ice_table_metadata *again = tl_ice_metadata_parse((const char *)first.data, first.len, &err);
		FUZZ_REQUIRE(again != NULL);
		FUZZ_REQUIRE(tl_ice_metadata_write(again, &second, &err) == 0);
		FUZZ_REQUIRE(first.len == second.len && memcmp(first.data, second.data, first.len) == 0);
		tl_ice_metadata_free(again);
	} else {
		FUZZ_REQUIRE(err.message[0] != '\0');
	}
	tl_buf_free(&first);
	tl_buf_free(&second);
	tl_ice_metadata_free(md);
	return 0;
}
