/*
 * lake_catalog.h: how the daemon and the CLI reach a registered table's lake
 * table: by its location (path-based, the default), or through the Iceberg
 * REST catalog it was registered in (docs/rest-catalog.md).
 *
 * A table registered while TIERDB_CATALOG_URI was set is created through
 * that catalog, at the location a path-based registration would use; its
 * cut-line's lake_props record {"rest_catalog": {"uri", "namespace",
 * "table"}} (no credential). Every later open goes through the catalog so
 * that commits go through its updateTable; lake_table_ref stays the table's
 * location and lake_props' metadata_location is still pinned with S, so the
 * extension reads the table exactly as a path-based one.
 */
#ifndef TIERDB_LAKE_CATALOG_H
#define TIERDB_LAKE_CATALOG_H

#include "catalog.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/rest_catalog.h"

/*
 * Opens t's lake table: through the REST catalog t's lake_props name (the
 * environment must point TIERDB_CATALOG_URI at that catalog, with its
 * credentials), else by t->lake_table_ref.
 */
tl_ice_table *tdb_lake_open(const tdb_catalog_table *t, tl_error *err);

/* Drops t's lake table from its REST catalog (its files stay); 0 for a path-based table or one already gone. */
int tdb_lake_drop_from_catalog(const tdb_catalog_table *t, tl_error *err);

/* The REST catalog registration should create tables in: NULL (no error) when TIERDB_CATALOG_URI is unset. */
tl_rest_catalog *tdb_lake_catalog_from_env(tl_error *err);

/* The namespace a table of Postgres schema `schema` goes to: TIERDB_CATALOG_NAMESPACE, else the schema. */
const char *tdb_lake_catalog_namespace(const char *schema);

/* The lake_props entry naming the table in catalog c (a new JSON object text, free()), or NULL. */
char *tdb_lake_catalog_props(const tl_rest_catalog *c, const char *ns, const char *table);

#endif
