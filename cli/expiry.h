/*
 * expiry.h: expiring a tiered table's old lake snapshots and deleting the
 * files only they referenced, never what a pinned reader needs (expiry.c
 * says how).
 */
#ifndef TIERDB_EXPIRY_H
#define TIERDB_EXPIRY_H

#include <libpq-fe.h>

#include "catalog.h"
#include "maintenance.h"
#include "maintenance_policy.h"

/* One expiry run of table t under `policy`; adds what it did to *result. */
int tdb_expire_snapshots(PGconn *c, const tdb_catalog_table *t, const tdb_maintenance_policy *policy,
                         tdb_maintenance_result *result, tl_error *err);

/* Finishes or aborts interrupted expiry runs on the lake's word; how many, or -1. */
int tdb_recover_expiry(PGconn *c, const tdb_catalog_table *t, tl_error *err);

#endif
