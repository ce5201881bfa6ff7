/*
 * promtext.c: the Prometheus text format's escaping and line shapes
 * (promtext.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "promtext.h"

/* Backslash and newline become \\ and \n; in label values also the double quote (\"). */
static void append_escaped(tl_buf *out, const char *s, int quote)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			tl_buf_append_str(out, "\\\\");
		else if (*s == '\n')
			tl_buf_append_str(out, "\\n");
		else if (quote && *s == '"')
			tl_buf_append_str(out, "\\\"");
		else
			tl_buf_append_byte(out, (uint8_t)*s);
	}
}

void tdb_prom_family(tl_buf *out, const char *name, const char *type, const char *help)
{
	tl_buf_printf(out, "# HELP %s ", name);
	append_escaped(out, help, 0);
	tl_buf_printf(out, "\n# TYPE %s %s\n", name, type);
}

static void sample_start(tl_buf *out, const char *name, const char *const *labels)
{
	tl_buf_append_str(out, name);
	if (labels == NULL || labels[0] == NULL)
		return;
	tl_buf_append_byte(out, '{');
	for (int i = 0; labels[i] != NULL; i += 2) {
		if (i > 0)
			tl_buf_append_byte(out, ',');
		tl_buf_printf(out, "%s=\"", labels[i]);
		append_escaped(out, labels[i + 1], 1);
		tl_buf_append_byte(out, '"');
	}
	tl_buf_append_byte(out, '}');
}

void tdb_prom_int(tl_buf *out, const char *name, const char *const *labels, int64_t value)
{
	sample_start(out, name, labels);
	tl_buf_printf(out, " %" PRId64 "\n", value);
}

void tdb_prom_double(tl_buf *out, const char *name, const char *const *labels, double value)
{
	sample_start(out, name, labels);
	if (isnan(value))
		tl_buf_append_str(out, " NaN\n");
	else if (isinf(value))
		tl_buf_append_str(out, value > 0 ? " +Inf\n" : " -Inf\n");
	else {
		/* The shorter form when it reads back as the same double, so 0.1 stays 0.1. */
		char text[40];
		snprintf(text, sizeof(text), "%.15g", value);
		if (strtod(text, NULL) != value)
			snprintf(text, sizeof(text), "%.17g", value);
		tl_buf_printf(out, " %s\n", text);
	}
}
