/*
 * fault_alloc.c: the loops of fault_alloc.h.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fault_alloc.h"
#include "test.h"
#include "tierlake/env.h"

/* ------------------------------------------------------------ the fault allocator */

static struct {
	long calls;    /* allocations so far in this run */
	long fail_at;  /* the first allocation to fail (1-based); 0 never */
	bool sticky;   /* fail every allocation from fail_at on */
	long failed;   /* how many were failed */
	long live;     /* allocated and not yet freed */
	bool paused;   /* a workload's setup: nothing fails or counts (fault_pause) */
} fault;

void fault_pause(bool paused)
{
	fault.paused = paused;
}

/* The sanitizers' symbolized stack trace (the C tests run under ASan). */
void __sanitizer_print_stack_trace(void) __attribute__((weak));

static bool should_fail(void)
{
	if (tl_mem_json_loading() || fault.paused)
		return false; /* jansson's lexer cannot take a failure (common/json_load.h) */
	fault.calls++;
	if (fault.fail_at > 0 && (fault.calls == fault.fail_at || (fault.sticky && fault.calls > fault.fail_at))) {
		fault.failed++;
		/* TIERDB_FAULT_TRACE=N shows where allocation N is, to debug the failure a report names. */
		const char *trace = getenv("TIERDB_FAULT_TRACE");
		if (trace != NULL && atol(trace) == fault.calls && __sanitizer_print_stack_trace != NULL)
			__sanitizer_print_stack_trace();
		return true;
	}
	return false;
}

static void *fault_malloc(size_t n, void *arg)
{
	(void)arg;
	if (should_fail())
		return NULL;
	void *p = malloc(n);
	if (p != NULL)
		fault.live++;
	return p;
}

static void *fault_realloc(void *p, size_t n, void *arg)
{
	(void)arg;
	if (should_fail())
		return NULL;
	void *q = realloc(p, n);
	if (q != NULL && p == NULL)
		fault.live++;
	return q;
}

static void fault_free(void *p, void *arg)
{
	(void)arg;
	fault.live--;
	free(p);
}

static const tl_mem_methods fault_methods = {fault_malloc, fault_realloc, fault_free, NULL};

/* ------------------------------------------------------------ the interrupt check */

static struct {
	long calls;
	long fire_at; /* the check answers true from its fire_at-th call on; 0 never */
	bool fired;
} interrupt;

static bool fault_interrupt(void *arg)
{
	(void)arg;
	if (fault.paused)
		return false;
	interrupt.calls++;
	if (interrupt.fire_at > 0 && interrupt.calls >= interrupt.fire_at) {
		interrupt.fired = true;
		return true;
	}
	return false;
}

/* ------------------------------------------------------------ the loop */

#define MAX_RUNS 20000

/*
 * Runs w with allocation N failing (or every allocation from N on, when
 * sticky) for N = 1, 2, ... until a run reaches its end without the fault.
 * Returns the number of runs, or -1 after reporting a failure.
 */
long run_with_faults(const char *name, workload_fn w, bool sticky)
{
	for (long n = 1; n <= MAX_RUNS; n++) {
		tl_error err;
		tl_error_clear(&err);
		fault.calls = fault.failed = fault.live = 0;
		fault.fail_at = n;
		fault.sticky = sticky;
		tl_set_mem_methods(&fault_methods);
		int rc = w(&err);
		tl_set_mem_methods(NULL);
		if (fault.live != 0) {
			tl_test_fail(__FILE__, __LINE__, "%s: %ld allocation(s) leaked when allocation %ld failed%s (rc %d: %s)",
			             name, fault.live, n, sticky ? " (sticky)" : "", rc, err.message);
			return -1;
		}
		if (fault.failed == 0) {
			if (rc != 0) {
				tl_test_fail(__FILE__, __LINE__, "%s failed without an injected fault: %s", name, err.message);
				return -1;
			}
			return n;
		}
		if (rc != 0 && err.code != TL_ERR_NOMEM) {
			tl_test_fail(__FILE__, __LINE__, "%s: allocation %ld failed%s, but the error is %s: %s", name, n,
			             sticky ? " (sticky)" : "", tl_error_code_name(err.code), err.message);
			return -1;
		}
	}
	tl_test_fail(__FILE__, __LINE__, "%s: still failing after %d runs", name, MAX_RUNS);
	return -1;
}

/* As run_with_faults, with the interrupt check firing at its Nth call. */
long run_with_interrupts(const char *name, workload_fn w)
{
	for (long n = 1; n <= MAX_RUNS; n++) {
		tl_error err;
		tl_error_clear(&err);
		interrupt.calls = 0;
		interrupt.fire_at = n;
		interrupt.fired = false;
		fault.calls = fault.failed = fault.live = 0;
		fault.fail_at = 0;
		tl_set_mem_methods(&fault_methods);
		tl_set_interrupt_check(fault_interrupt, NULL);
		int rc = w(&err);
		tl_set_interrupt_check(NULL, NULL);
		tl_set_mem_methods(NULL);
		if (fault.live != 0) {
			tl_test_fail(__FILE__, __LINE__, "%s: %ld allocation(s) leaked when interrupted at check %ld", name,
			             fault.live, n);
			return -1;
		}
		if (!interrupt.fired) {
			if (rc != 0) {
				tl_test_fail(__FILE__, __LINE__, "%s failed without an interrupt: %s", name, err.message);
				return -1;
			}
			return n;
		}
		if (rc != 0 && err.code != TL_ERR_INTERRUPTED) {
			tl_test_fail(__FILE__, __LINE__, "%s: interrupted at check %ld, but the error is %s: %s", name, n,
			             tl_error_code_name(err.code), err.message);
			return -1;
		}
		if (rc != 0 && strcmp(err.message, "interrupted") != 0) {
			tl_test_fail(__FILE__, __LINE__, "%s: interrupted, but the message is \"%s\"", name, err.message);
			return -1;
		}
	}
	tl_test_fail(__FILE__, __LINE__, "%s: still interrupted after %d runs", name, MAX_RUNS);
	return -1;
}

