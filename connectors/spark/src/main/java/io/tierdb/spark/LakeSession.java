/*
 * LakeSession: checks that the Spark session can load the lake by path.
 * Iceberg's Spark runtime resolves even a path-based table through a
 * catalog configured on the session; without one the failure surfaces deep
 * inside Spark, so the seam read says up front which settings to add.
 */
package io.tierdb.spark;

import java.util.Map;

import org.apache.spark.sql.SparkSession;

import scala.collection.JavaConverters;

final class LakeSession {
    private static final String CATALOG_PREFIX = "spark.sql.catalog.";

    private LakeSession() {
    }

    static void requireIcebergCatalog(SparkSession spark, String location) {
        Map<String, String> conf = JavaConverters.mapAsJavaMap(spark.conf().getAll());
        for (Map.Entry<String, String> e : conf.entrySet()) {
            String key = e.getKey();
            if (key.startsWith(CATALOG_PREFIX) && key.indexOf('.', CATALOG_PREFIX.length()) < 0
                    && isIcebergCatalog(e.getValue())) {
                return;
            }
        }
        throw new IllegalStateException(String.format(
                "the Spark session has no Iceberg catalog, which the Iceberg runtime needs to load the lake table "
                        + "at %s even by path. Add one to the session, e.g.%n"
                        + "  .config(\"spark.sql.catalog.default_iceberg\", \"org.apache.iceberg.spark.SparkCatalog\")%n"
                        + "  .config(\"spark.sql.catalog.default_iceberg.type\", \"hadoop\")%n"
                        + "  .config(\"spark.sql.catalog.default_iceberg.warehouse\", \"<the lake's warehouse>\")%n"
                        + "or name the lake table through a configured catalog with SeamOptions.lakeTable(...).",
                location));
    }

    private static boolean isIcebergCatalog(String className) {
        return "org.apache.iceberg.spark.SparkCatalog".equals(className)
                || "org.apache.iceberg.spark.SparkSessionCatalog".equals(className);
    }
}
