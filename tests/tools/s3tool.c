/*
 * s3tool: the S3 interop tests' window into the lake library's S3 client.
 *
 *   s3tool put FILE URI [--if-absent]   streams FILE to the object through tl_s3_output_create
 *                                       (a multipart upload once it passes one part)
 *   s3tool cat URI                      prints each row of the Parquet object as one JSON
 *                                       line (tl_render_row), read through tl_s3_input_open
 *   s3tool ls URI                       prints "key<TAB>size" for each object under the prefix
 *
 * The server and credentials come from the environment (tl_s3_config_from_env:
 * TIERDB_S3_* or AWS_*). Errors go to stderr with exit status 1 (3 for a
 * put-if-absent that found the object), usage errors exit 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/parquet.h"
#include "tierlake/render.h"
#include "tierlake/s3.h"

static int fail(const tl_error *err)
{
	fprintf(stderr, "s3tool: %s\n", err->message);
	return err->code == TL_ERR_CONFLICT ? 3 : 1;
}

static int put(const tl_s3_config *cfg, const char *path, const char *uri, bool if_absent)
{
	tl_error err;
	tl_error_clear(&err);
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		perror(path);
		return 1;
	}
	tl_output *out = tl_s3_output_create(cfg, uri, if_absent, &err);
	int rc = out ? 0 : -1;
	char buf[64 * 1024];
	size_t n;
	while (rc == 0 && (n = fread(buf, 1, sizeof(buf), f)) > 0)
		rc = tl_output_write(out, buf, n, &err);
	if (rc == 0 && ferror(f))
		rc = tl_error_set(&err, TL_ERR_IO, "%s: read failed", path);
	if (rc == 0)
		rc = out->finish(out, &err);
	tl_output_close(out);
	fclose(f);
	return rc == 0 ? 0 : fail(&err);
}

static int cat(const tl_s3_config *cfg, const char *uri)
{
	tl_error err;
	tl_error_clear(&err);
	tl_input *in = tl_s3_input_open(cfg, uri, &err);
	if (in == NULL)
		return fail(&err);
	tl_pq_reader *r = tl_pq_reader_open(in, &err);
	int64_t n = r ? 0 : -1;
	if (r != NULL) {
		tl_pq_batch *b = tl_pq_reader_batch_new(r, 4096);
		tl_buf line;
		tl_buf_init(&line);
		while ((n = tl_pq_reader_next(r, b, &err)) > 0) {
			for (int64_t i = 0; i < n; i++) {
				tl_buf_reset(&line);
				tl_render_row(tl_pq_reader_schema(r), NULL, b, i, &line);
				tl_buf_append_byte(&line, '\n');
				fwrite(line.data, 1, line.len, stdout);
			}
		}
		tl_buf_free(&line);
		tl_pq_batch_free(b);
		tl_pq_reader_free(r);
	}
	tl_input_close(in);
	return n < 0 ? fail(&err) : 0;
}

static int ls(const tl_s3_config *cfg, const char *uri)
{
	tl_error err;
	tl_error_clear(&err);
	tl_s3_client *c = tl_s3_client_new(cfg, &err);
	tl_s3_listing l;
	if (c == NULL || tl_s3_list(c, uri, &l, &err) < 0) {
		tl_s3_client_free(c);
		return fail(&err);
	}
	for (size_t i = 0; i < l.count; i++)
		printf("%s\t%llu\n", l.objects[i].key, (unsigned long long)l.objects[i].size);
	tl_s3_listing_free(&l);
	tl_s3_client_free(c);
	return 0;
}

int main(int argc, char **argv)
{
	tl_s3_config cfg;
	tl_error err;
	tl_error_clear(&err);
	if (tl_s3_config_from_env(&cfg, &err) < 0)
		return fail(&err);
	if (argc >= 4 && strcmp(argv[1], "put") == 0 && (argc == 4 || (argc == 5 && strcmp(argv[4], "--if-absent") == 0)))
		return put(&cfg, argv[2], argv[3], argc == 5);
	if (argc == 3 && strcmp(argv[1], "cat") == 0)
		return cat(&cfg, argv[2]);
	if (argc == 3 && strcmp(argv[1], "ls") == 0)
		return ls(&cfg, argv[2]);
	fprintf(stderr, "usage: s3tool put FILE URI [--if-absent] | cat URI | ls URI\n");
	return 2;
}
