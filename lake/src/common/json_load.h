/*
 * json_load.h: the library's one way to parse JSON with jansson, and to
 * print it.
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

#endif
