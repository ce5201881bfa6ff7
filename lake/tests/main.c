/*
 * main.c: runs the registered unit tests and prints a closing line CI reads.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

#include "test.h"
#include "tierlake/buf.h"
#include "tierlake/io.h"

#define MAX_TESTS 1024

static struct {
	const char *name;
	tl_test_fn fn;
} tests[MAX_TESTS];
static int ntests;
static int current_failed;

void tl_test_register(const char *name, tl_test_fn fn)
{
	if (ntests == MAX_TESTS) {
		fprintf(stderr, "too many tests; raise MAX_TESTS\n");
		exit(2);
	}
	tests[ntests].name = name;
	tests[ntests].fn = fn;
	ntests++;
}

void tl_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stdout, "    %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	current_failed = 1;
}

int tl_test_failed(void)
{
	return current_failed;
}

int tl_test_load(const char *path, tl_buf *out, tl_error *err)
{
	tl_input *in = tl_input_open_file(path, err);
	if (in == NULL)
		return -1;
	tl_buf_reset(out);
	int rc = tl_input_read(in, 0, tl_buf_extend(out, (size_t)in->size), (size_t)in->size, err);
	tl_input_close(in);
	return rc;
}

static int by_name(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	return strcmp(x, y);
}

int main(int argc, char **argv)
{
	const char *filter = argc > 1 ? argv[1] : NULL;
	int passed = 0, failed = 0;

	/* Constructor order is link order; run in name order so output is stable. */
	qsort(tests, (size_t)ntests, sizeof(tests[0]), by_name);
	for (int i = 0; i < ntests; i++) {
		if (filter && !strstr(tests[i].name, filter))
			continue;
		current_failed = 0;
		clock_t start = clock();
		tests[i].fn();
		double ms = 1000.0 * (double)(clock() - start) / CLOCKS_PER_SEC;
		printf("%s %s (%.0f ms)\n", current_failed ? "FAIL" : "ok  ", tests[i].name, ms);
		fflush(stdout);
		if (current_failed)
			failed++;
		else
			passed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
