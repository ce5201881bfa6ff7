/*
 * output.c: what commands that print rows share: the JSON Lines loop,
 * buffered writes to stdout with one error check at the end, and
 * --columns lists.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "cli.h"
#include "tierlake/buf.h"
#include "tierlake/parquet.h"
#include "tierlake/render.h"

void cli_write_out(tl_buf *buf)
{
	if (buf->len)
		fwrite(buf->data, 1, buf->len, stdout);
	tl_buf_reset(buf);
}

int cli_finish_output(void)
{
	if (fflush(stdout) != 0 || ferror(stdout))
		return cli_fail("writing output: %s", strerror(errno ? errno : EIO));
	return CLI_EXIT_OK;
}

int cli_print_rows(const tl_pq_schema *schema, const int *columns, tl_pq_batch *batch, cli_next_batch_fn next,
                   void *ctx, int64_t limit)
{
	tl_buf out;
	tl_buf_init(&out);
	tl_error err;
	tl_error_clear(&err);
	int status = CLI_EXIT_OK;
	for (int64_t printed = 0; printed < limit && !ferror(stdout);) {
		int64_t n = next(ctx, batch, &err);
		if (n < 0) {
			status = cli_fail("%s", err.message);
			break;
		}
		if (n == 0)
			break;
		if (n > limit - printed)
			n = limit - printed;
		for (int64_t row = 0; row < n; row++) {
			tl_render_row(schema, columns, batch, row, &out);
			tl_buf_append_byte(&out, '\n');
		}
		cli_write_out(&out);
		printed += n;
	}
	tl_buf_free(&out);
	return status;
}

void cli_column_list_free(cli_column_list *list)
{
	free(list->text);
	free(list->names);
}

/* Split by hand because strtok would skip empty names, which are mistakes worth naming. */
int cli_split_columns(const char *cmd, const char *arg, cli_column_list *list)
{
	int n = 1;
	for (const char *c = arg; *c; c++)
		n += *c == ',';
	list->text = tl_strdup(arg);
	list->names = tl_malloc((size_t)n * sizeof(char *));
	list->count = 0;
	char *name = list->text;
	for (int i = 0; i < n; i++) {
		char *comma = strchr(name, ',');
		if (comma)
			*comma = '\0';
		if (*name == '\0') {
			cli_usage_error(cmd, "--columns has an empty column name in '%s'", arg);
			return -1;
		}
		for (int k = 0; k < list->count; k++)
			if (strcmp(list->names[k], name) == 0) {
				cli_usage_error(cmd, "column \"%s\" appears twice in --columns", name);
				return -1;
			}
		list->names[list->count++] = name;
		name = comma ? comma + 1 : name + strlen(name);
	}
	return 0;
}

void cli_print_aligned(const PGresult *res, int ncols)
{
	int nrows = PQntuples(res);
	int *width = tl_calloc((size_t)ncols + 1, sizeof(int));
	for (int j = 0; j < ncols; j++) {
		width[j] = (int)strlen(PQfname(res, j));
		for (int i = 0; i < nrows; i++)
			if (PQgetlength(res, i, j) > width[j])
				width[j] = PQgetlength(res, i, j);
	}
	for (int j = 0; j < ncols; j++)
		printf("%-*s%s", j + 1 < ncols ? width[j] : 0, PQfname(res, j), j + 1 < ncols ? "  " : "\n");
	for (int i = 0; i < nrows; i++)
		for (int j = 0; j < ncols; j++)
			printf("%-*s%s", j + 1 < ncols ? width[j] : 0, PQgetvalue(res, i, j), j + 1 < ncols ? "  " : "\n");
	free(width);
}
