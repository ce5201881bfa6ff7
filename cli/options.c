/*
 * options.c: subcommand dispatch and the option parser every `tierdb`
 * command shares, with the conventions described in cli.h.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ------------------------------------------------------------ dispatch */

static void print_dispatch_usage(FILE *out, const char *path, void (*describe)(FILE *out),
                                 const cli_command *const *cmds, int n)
{
	int width = 0;
	for (int i = 0; i < n; i++)
		if ((int)strlen(cmds[i]->name) > width)
			width = (int)strlen(cmds[i]->name);
	fprintf(out, "Usage: %s <command> [options]\n\n", path);
	describe(out);
	fputs("\nCommands:\n", out);
	for (int i = 0; i < n; i++)
		fprintf(out, "  %-*s  %s\n", width, cmds[i]->name, cmds[i]->summary);
	fprintf(out, "\nRun '%s <command> --help' for a command's options.\n", path);
}

int cli_dispatch(const char *path, void (*describe)(FILE *out), const cli_command *const *cmds, int n,
                 int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "%s: a command is required\n\n", path);
		print_dispatch_usage(stderr, path, describe, cmds, n);
		return CLI_EXIT_USAGE;
	}
	const char *name = argv[1];
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
		print_dispatch_usage(stdout, path, describe, cmds, n);
		return CLI_EXIT_OK;
	}
	for (int i = 0; i < n; i++)
		if (strcmp(cmds[i]->name, name) == 0)
			return cmds[i]->run(argc - 1, argv + 1);
	fprintf(stderr, "%s: unknown %s '%s'\n\n", path, name[0] == '-' ? "option" : "command", name);
	print_dispatch_usage(stderr, path, describe, cmds, n);
	return CLI_EXIT_USAGE;
}

/* ------------------------------------------------------------ messages */

int cli_usage_error(const char *command, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", command);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", command);
	return CLI_EXIT_USAGE;
}

int cli_fail(const char *fmt, ...)
{
	va_list ap;
	fputs("tierdb: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CLI_EXIT_FAILURE;
}

/* ------------------------------------------------------------ options */

void cli_parser_init(cli_parser *p, const char *command, void (*usage)(FILE *out), const cli_option *options,
                     int argc, char **argv)
{
	memset(p, 0, sizeof(*p));
	p->command = command;
	p->usage = usage;
	p->options = options;
	p->argc = argc;
	p->argv = argv;
	p->next = 1;
}

int cli_help(const cli_parser *p)
{
	p->usage(stdout);
	return CLI_EXIT_OK;
}

int cli_next(cli_parser *p)
{
	p->option = NULL;
	p->value = NULL;
	if (p->next >= p->argc)
		return CLI_END;
	const char *arg = p->argv[p->next++];

	/* "-" alone is an argument by convention (standard input). */
	if (p->options_done || arg[0] != '-' || arg[1] == '\0') {
		p->value = arg;
		return CLI_POSITIONAL;
	}
	if (strcmp(arg, "--") == 0) {
		p->options_done = true;
		return cli_next(p);
	}
	if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
		return CLI_HELP;
	if (arg[1] != '-') {
		cli_usage_error(p->command, "unknown option '%s'", arg);
		return CLI_ERROR;
	}

	const char *name = arg + 2;
	const char *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const cli_option *opt = NULL;
	for (const cli_option *o = p->options; o && o->name; o++)
		if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) {
			opt = o;
			break;
		}
	if (opt == NULL) {
		cli_usage_error(p->command, "unknown option '--%.*s'", (int)len, name);
		return CLI_ERROR;
	}
	p->option = opt->name;
	if (!opt->has_value) {
		if (eq) {
			cli_usage_error(p->command, "option '--%s' takes no value", opt->name);
			return CLI_ERROR;
		}
		return opt->id;
	}
	if (eq)
		p->value = eq + 1;
	else if (p->next < p->argc)
		p->value = p->argv[p->next++];
	else {
		cli_usage_error(p->command, "option '--%s' needs a value", opt->name);
		return CLI_ERROR;
	}
	return opt->id;
}

int cli_parse_int(const cli_parser *p, int64_t min, int64_t max, int64_t *out)
{
	const char *text = p->value;
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (text[0] == '\0' || *end != '\0' || isspace((unsigned char)text[0]) || errno == ERANGE || v < min || v > max) {
		if (max == INT64_MAX)
			cli_usage_error(p->command, "option '--%s' needs an integer of at least %lld, not '%s'", p->option,
			                (long long)min, text);
		else
			cli_usage_error(p->command, "option '--%s' needs an integer from %lld to %lld, not '%s'", p->option,
			                (long long)min, (long long)max, text);
		return -1;
	}
	*out = v;
	return 0;
}
