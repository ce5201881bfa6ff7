/*
 * pqskip: the interop suite's check of late materialisation on Parquet
 * files other writers produce (pyarrow's every encoding, page version and
 * codec; DuckDB's files).
 *
 *   pqskip FILE
 *
 * Runs deferred_check (lake/tests/deferred_check.h) on the file: read
 * whole and read with columns deferred, loaded for every batch or every
 * third, with the first column eager or none, in batches that cut pages
 * and in larger ones. Prints "ok N values compared" and exits 0, or the
 * first difference on stderr and exits 1 (usage errors: exit 2).
 *
 * The check is compiled in by including its .c file: the Makefile builds
 * each tool from its one .c file.
 */
#include "../../lake/tests/deferred_check.c"

#include <stdio.h>

int main(int argc, char **argv)
{
	static const int64_t batch_rows[] = {97, 1024};
	static const int load_every[] = {1, 3};
	int64_t total = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: pqskip FILE\n");
		return 2;
	}
	for (size_t b = 0; b < sizeof(batch_rows) / sizeof(batch_rows[0]); b++)
		for (size_t l = 0; l < sizeof(load_every) / sizeof(load_every[0]); l++)
			for (int eager = -1; eager <= 0; eager++) {
				tl_error err;
				tl_error_clear(&err);
				int64_t n = deferred_check(argv[1], batch_rows[b], eager, load_every[l], &err);
				if (n < 0) {
					fprintf(stderr, "pqskip: %s (batches of %lld rows, loading every %d, eager column %d)\n",
					        err.message, (long long)batch_rows[b], load_every[l], eager);
					return 1;
				}
				total += n;
			}
	printf("ok %lld values compared\n", (long long)total);
	return 0;
}
