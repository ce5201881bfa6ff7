/*
 * test.h: the lake library's unit-test harness.
 *
 * TEST(name) { ... } defines a test that registers itself; CHECK fails the
 * current test and returns from it. The runner (tests/main.c) runs every test,
 * or those whose name contains argv[1], and ends with "N passed, N failed".
 */
#ifndef TIERLAKE_TEST_H
#define TIERLAKE_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

typedef void (*tl_test_fn)(void);
void tl_test_register(const char *name, tl_test_fn fn);
/* Records a failure of the running test; returns so CHECK can `return`. */
void tl_test_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int tl_test_failed(void);

struct tl_buf;
struct tl_error;
/* Replaces out's contents with the file at path (relative to the repository root); 0 or -1 with err set. */
int tl_test_load(const char *path, struct tl_buf *out, struct tl_error *err);

#define TEST(name)                                                              \
	static void name(void);                                                     \
	__attribute__((constructor)) static void register_##name(void)              \
	{                                                                           \
		tl_test_register(#name, name);                                          \
	}                                                                           \
	static void name(void)

#define CHECK(cond)                                                             \
	do {                                                                        \
		if (!(cond)) {                                                          \
			tl_test_fail(__FILE__, __LINE__, "%s", #cond);                      \
			return;                                                             \
		}                                                                       \
	} while (0)

#define CHECK_INT(a, b)                                                         \
	do {                                                                        \
		long long a_ = (long long)(a), b_ = (long long)(b);                     \
		if (a_ != b_) {                                                         \
			tl_test_fail(__FILE__, __LINE__, "%s == %s (%lld != %lld)", #a, #b, a_, b_); \
			return;                                                             \
		}                                                                       \
	} while (0)

#define CHECK_STR(a, b)                                                         \
	do {                                                                        \
		const char *a_ = (a), *b_ = (b);                                        \
		if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) {                  \
			tl_test_fail(__FILE__, __LINE__, "%s == %s (\"%s\" != \"%s\")", #a, #b, \
			             a_ ? a_ : "(null)", b_ ? b_ : "(null)");               \
			return;                                                             \
		}                                                                       \
	} while (0)

/* For calls returning 0/-1 with a tl_error: fails with the error's message. */
#define CHECK_OK(call, err)                                                     \
	do {                                                                        \
		if ((call) < 0) {                                                       \
			tl_test_fail(__FILE__, __LINE__, "%s failed: %s", #call, (err)->message); \
			return;                                                             \
		}                                                                       \
	} while (0)

#endif
