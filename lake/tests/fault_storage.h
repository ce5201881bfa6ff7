/*
 * fault_storage.h: a tl_storage for tests that forwards to another one and
 * fails one chosen call with TL_ERR_IO (or every call from it on), so a
 * test can walk a workload through an I/O error at each of its calls.
 * Every storage operation counts, and so does every read, write and
 * finish of the inputs and outputs it hands out.
 */
#ifndef TIERLAKE_TEST_FAULT_STORAGE_H
#define TIERLAKE_TEST_FAULT_STORAGE_H

#include <stdbool.h>

#include "tierlake/storage.h"

typedef struct fault_storage {
	tl_storage base;
	tl_storage *inner;
	long calls;      /* calls seen so far */
	long fail_at;    /* the call (1-based) that fails; 0: none */
	bool sticky;     /* every call after fail_at fails too (the storage went away) */
	long injected;   /* failures returned */
} fault_storage;

/* A fault storage over `inner`, failing nothing yet. */
void fault_storage_init(fault_storage *fs, tl_storage *inner);

/* Counts from zero again and fails call `fail_at` (0: none). */
void fault_storage_arm(fault_storage *fs, long fail_at, bool sticky);

#endif
