/*
 * fault_alloc.h: the allocation-failure and interrupt loops of the lake
 * library's fault tests (test_nomem.c, s3/test_s3_nomem.c), in the manner
 * of SQLite's malloc fault tests: a workload runs under an allocator that
 * fails its Nth allocation (or every one from N on), for N = 1, 2, ...
 * until a run completes without reaching N; every run must fail with
 * TL_ERR_NOMEM or succeed, and free all it allocated. The interrupt loop
 * does the same with the interrupt check answering true at its Nth call.
 */
#ifndef TIERLAKE_TEST_FAULT_ALLOC_H
#define TIERLAKE_TEST_FAULT_ALLOC_H

#include <stdbool.h>

#include "tierlake/error.h"

typedef int (*workload_fn)(tl_error *err);

/* Runs until a run completes; returns the number of runs, or -1 after reporting a failure. */
long run_with_faults(const char *name, workload_fn w, bool sticky);
long run_with_interrupts(const char *name, workload_fn w);

/*
 * Pauses the faults (and the interrupt check) while a workload builds what
 * it then works on, so the loops spend their runs on the part under test.
 * Allocations made meanwhile are still counted as live.
 */
void fault_pause(bool paused);

#endif
