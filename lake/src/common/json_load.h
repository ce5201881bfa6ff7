/*
 * json_load.h: the library's one way to parse JSON with jansson, to print
 * it, and to make a new object.
 *
 * jansson 2.14's lexer does not survive a failed allocation: lex_save()
 * ignores a failure to grow its string buffer, and lex_scan_string() then
 * copies the token up to a closing quote that was never saved, past the end
 * of its allocation. So a parse must not see an allocation fail. Every
 * parse goes through tl_json_loadb, which marks the region
 * (tl_mem_json_loading in env.h): an allocator that fails on purpose, such
 * as the fault tests', leaves allocations there alone. A real out-of-memory
 * inside jansson's lexer remains jansson's bug; outside it, every jansson
 * failure is reported as TL_ERR_NOMEM.
 */
#ifndef TIERLAKE_JSON_LOAD_H
#define TIERLAKE_JSON_LOAD_H

#include <jansson.h>
#include <stddef.h>

/* json_loadb (text need not be NUL-terminated), inside the marked region. */
json_t *tl_json_loadb(const char *text, size_t len, size_t flags, json_error_t *error);

/*
 * json_dumps, or NULL when an allocation failed during it: jansson 2.14's
 * printer may carry on past a failed allocation and return text with a
 * key missing (`{:`), which must never reach a file.
 */
char *tl_json_dumps(const json_t *json, size_t flags);

/*
 * A new, empty JSON object: json_object(), but not called by that name.
 * A process that loads the library may export a json_object of its own
 * (the Postgres server does: its SQL function of that name), and the
 * dynamic linker binds the library's calls to the first one it finds;
 * json_pack's own call to it stays inside jansson, bound at its link.
 */
static inline json_t *tl_json_object(void)
{
	return json_pack("{}");
}

/* Calls of json_object() by name do not compile here: tl_json_object. */
#define json_object() tl_json_object_instead_of_json_object

#endif
