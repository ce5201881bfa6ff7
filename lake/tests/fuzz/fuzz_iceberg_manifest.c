/*
 * fuzz_iceberg_manifest.c: libFuzzer target for Iceberg manifests and
 * manifest lists, which TierDB plans scans from whoever wrote the table.
 *
 * The same bytes are read as a manifest (every entry, with sequence-number
 * inheritance applied as the scan planner will) and as a manifest list.
 * Each must read to the end or fail with an error that has a message.
 * Seeds (lake/tests/corpus/fuzz_iceberg_manifest) are a manifest and a
 * manifest list written by pyiceberg.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tierlake/error.h"
#include "tierlake/iceberg_manifest.h"
#include "tierlake/io.h"

#define FUZZ_REQUIRE(cond)                                                                         \
	do {                                                                                           \
		if (!(cond)) {                                                                             \
			fprintf(stderr, "fuzz_iceberg_manifest: %s:%d: broken promise: %s\n", __FILE__, __LINE__, \
			        #cond);                                                                        \
			abort();                                                                               \
		}                                                                                          \
	} while (0)

static void require_reported(const tl_error *err)
{
	FUZZ_REQUIRE(err->code != TL_OK && err->message[0] != '\0');
}

static void read_as_manifest_list(tl_input *in)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_manifest_list_reader *r = tl_ice_manifest_list_reader_open(in, &err);
	if (r == NULL) {
		require_reported(&err);
		return;
	}
	const tl_ice_manifest_file *file;
	int rc;
	while ((rc = tl_ice_manifest_list_reader_next(r, &file, &err)) > 0)
		;
	if (rc < 0)
		require_reported(&err);
	tl_ice_manifest_list_reader_free(r);
}

static void read_as_manifest(tl_input *in)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_manifest_reader *r = tl_ice_manifest_reader_open(in, &err);
	if (r == NULL) {
		require_reported(&err);
		return;
	}
	/* A plausible list entry to inherit from, as the planner would pass. */
	tl_ice_manifest_file list_entry = {0};
	list_entry.added_snapshot_id = 1;
	list_entry.sequence_number = 1;
	const tl_ice_manifest_entry *entry;
	int rc;
	while ((rc = tl_ice_manifest_reader_next(r, &entry, &err)) > 0) {
		tl_ice_manifest_entry copy = *entry;
		tl_error inherit_err;
		tl_error_clear(&inherit_err);
		if (tl_ice_manifest_entry_inherit(&copy, &list_entry, &inherit_err) < 0)
			require_reported(&inherit_err);
	}
	if (rc < 0)
		require_reported(&err);
	tl_ice_manifest_reader_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tl_input *in = tl_input_from_memory(data, size, "fuzz.avro");
	read_as_manifest(in);
	read_as_manifest_list(in);
	tl_input_close(in);
	return 0;
}
