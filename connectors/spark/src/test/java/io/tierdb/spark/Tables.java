/*
 * Tables: the tiered tables the tests read and write, one per tier-key
 * family (SPEC §2): a bigint key with a composite pk whose text part holds
 * the characters the canonical pk text escapes, timestamptz, timestamp and
 * date.  Each keeps an untiered copy <name>_src of its rows, so corrections
 * can be built from rows that have left the heap.  The payload columns
 * cover NULLs, non-ASCII text, negative decimals, NaN and infinities,
 * binaries, uuids, dates and timestamps.
 */
package io.tierdb.spark;

import java.util.Map;

final class Tables {
    static final int ROWS = 3000;

    private static final String PAYLOAD_COLUMNS =
            "note text, amount numeric(12,2), reading float8, ok boolean, uid uuid, blob bytea, day date, seen timestamptz";
    private static final String PAYLOAD_VALUES =
            "CASE WHEN g % 11 = 0 THEN NULL ELSE 'n' || g || repeat('é', g % 3) END,"
            + " CASE WHEN g % 13 = 0 THEN NULL ELSE ((g * 7919) % 2000000 - 1000000) / 100.0 END,"
            + " CASE g % 29 WHEN 0 THEN NULL WHEN 1 THEN 'NaN'::float8 WHEN 2 THEN 'Infinity' WHEN 3 THEN '-Infinity'"
            + "  ELSE (g - 1500) / 7.0::float8 END,"
            + " CASE WHEN g % 7 = 0 THEN NULL ELSE g % 2 = 0 END,"
            + " CASE WHEN g % 19 = 0 THEN NULL ELSE md5(g::text)::uuid END,"
            + " CASE WHEN g % 23 = 0 THEN NULL ELSE substr(decode(md5(g::text) || md5((g + 1)::text), 'hex'), 1, g % 20) END,"
            + " CASE WHEN g % 17 = 0 THEN NULL ELSE date '1999-12-31' + ((g * 37) % 20000 - 10000) END,"
            + " CASE WHEN g % 31 = 0 THEN NULL"
            + "  ELSE timestamptz '1970-01-01 00:00:00+00' + (g - 2000) * interval '1 day 1 hour 1 minute 1.000001 second' END";

    /** One table: its DDL and rows, registration and tiering lag. */
    static final class Fixture {
        final String name;
        final String tierKey;
        final String pk;
        /** SQL of the key tierdb_delete takes, over a row `s` of the table. */
        final String keyJson;
        final String lag;
        final String ddl;

        Fixture(String name, String tierKey, String pk, String keyJson, String lag, String ddl) {
            this.name = name;
            this.tierKey = tierKey;
            this.pk = pk;
            this.keyJson = keyJson;
            this.lag = lag;
            this.ddl = ddl;
        }

        @Override
        public String toString() {
            return name;
        }
    }

    /** Daily partitions from 2024-01-01 of a temporal key of type `type`. */
    private static String daily(String table, String key, String type, String keyValue, int days) {
        return String.format("CREATE TABLE %1$s (id bigint NOT NULL, %2$s %3$s NOT NULL, %4$s) PARTITION BY RANGE (%2$s);%n"
                + "DO $$ BEGIN FOR d IN 0..%6$d LOOP"
                + " EXECUTE format('CREATE TABLE %%I PARTITION OF %1$s FOR VALUES FROM (%%L) TO (%%L)',"
                + " '%1$s_' || to_char(date '2024-01-01' + d, 'YYYYMMDD'),"
                + " (date '2024-01-01' + d)::%3$s, (date '2024-01-01' + d + 1)::%3$s); END LOOP; END $$;%n"
                + "INSERT INTO %1$s SELECT g, %5$s, %7$s FROM generate_series(1, %8$d) g;",
                table, key, type, PAYLOAD_COLUMNS, keyValue, days - 1, PAYLOAD_VALUES, ROWS);
    }

    static final Fixture COMPOSITE = new Fixture("mk", "k", "id,tag",
            "jsonb_build_object('id', s.id, 'tag', s.tag)", "120",
            "CREATE TABLE mk (id bigint NOT NULL, tag text NOT NULL, k bigint NOT NULL, " + PAYLOAD_COLUMNS
                    + ") PARTITION BY RANGE (k);\n"
                    + "DO $$ BEGIN FOR p IN 0..4 LOOP EXECUTE format('CREATE TABLE mk_p%s PARTITION OF mk"
                    + " FOR VALUES FROM (%s) TO (%s)', p * 100, p * 100, p * 100 + 100); END LOOP; END $$;\n"
                    // tags with the characters the canonical pk text escapes: '\' and chr(31)
                    + "INSERT INTO mk SELECT g, CASE g % 4 WHEN 0 THEN 'a\\b' || chr(31) || 'c' || g WHEN 1 THEN 't'"
                    + " WHEN 2 THEN chr(31) ELSE 'x\\' END, g % 450, " + PAYLOAD_VALUES
                    + " FROM generate_series(1, " + ROWS + ") g;");

    static final Fixture TIMESTAMPTZ = new Fixture("ev_tz", "ts", "id", "to_jsonb(s.id)", "2d",
            daily("ev_tz", "ts", "timestamptz",
                    "timestamptz '2024-01-01 00:00:00+00' + (g - 1) * interval '288 seconds' + (g % 1000) * interval '1 microsecond'",
                    10));

    static final Fixture TIMESTAMP = new Fixture("ev_ts", "ts", "id", "to_jsonb(s.id)", "2d",
            daily("ev_ts", "ts", "timestamp",
                    "timestamp '2024-01-01 00:00:00' + (g - 1) * interval '288 seconds' + (g % 1000) * interval '1 microsecond'",
                    10));

    static final Fixture DATE = new Fixture("ev_d", "d", "id", "to_jsonb(s.id)", "2",
            daily("ev_d", "d", "date", "date '2024-01-01' + (g % 10)", 10));

    static final Map<String, Fixture> ALL = Map.of("bigint", COMPOSITE, "timestamptz", TIMESTAMPTZ,
            "timestamp", TIMESTAMP, "date", DATE);

    private Tables() {
    }

    /**
     * Creates the table and its copy, registers it (with `options`, e.g.
     * --keep-heap) and runs one daemon cycle with the fixture's lag.
     */
    static void createTiered(TestEnv.Db db, Fixture f, String... options) {
        db.exec(f.ddl);
        db.exec(String.format("CREATE TABLE %1$s_src AS SELECT * FROM %1$s", f.name));
        db.register("public." + f.name, f.pk, f.tierKey, options);
        db.runOnce(f.lag);
    }

    /**
     * Routed corrections through the extension's functions, as any client
     * writes them: cold upserts in place, a cold row moved to another tier
     * key, a new cold pk, cold tombstones, a hot update, a hot row moved
     * below T, and a hot delete.  Cold rows are those the heap no longer has.
     */
    static void correct(TestEnv.Db db, Fixture f) {
        String t = f.name;
        String cold = String.format("(SELECT s.* FROM %1$s_src s WHERE NOT EXISTS (SELECT FROM %1$s h WHERE h.id = s.id)"
                + " ORDER BY s.id) c", t);
        String hot = String.format("(SELECT s.* FROM %1$s_src s WHERE EXISTS (SELECT FROM %1$s h WHERE h.id = s.id)"
                + " ORDER BY s.id) c", t);
        String coldMin = String.format("(SELECT min(%s) FROM %s_src)", f.tierKey, t);
        String movedKey = String.format("'%s', %s, ", f.tierKey, coldMin);
        upsert(db, f, cold + " LIMIT 3", "'note', 'corrected ' || s.id");
        upsert(db, f, cold + " OFFSET 3 LIMIT 1", movedKey + "'note', 'moved'");
        delete(db, f, cold + " OFFSET 4 LIMIT 4");
        upsert(db, f, cold + " OFFSET 8 LIMIT 1", "'id', 1000000 + s.id, 'note', 'new cold'");
        upsert(db, f, hot + " LIMIT 1", "'note', 'hot update'");
        upsert(db, f, hot + " OFFSET 1 LIMIT 1", movedKey + "'note', 'went cold'");
        delete(db, f, hot + " OFFSET 2 LIMIT 1");
    }

    /** tierdb_upsert of each row s of `rows` with the jsonb_build_object arguments `changes` applied. */
    private static void upsert(TestEnv.Db db, Fixture f, String rows, String changes) {
        db.exec(String.format("SELECT tierdb_upsert('%s', to_jsonb(s) || jsonb_build_object(%s)) FROM (SELECT * FROM %s) s",
                f.name, changes, rows));
    }

    /** tierdb_delete of the key of each row s of `rows`. */
    private static void delete(TestEnv.Db db, Fixture f, String rows) {
        db.exec(String.format("SELECT tierdb_delete('%s', %s, s.%s) FROM (SELECT * FROM %s) s",
                f.name, f.keyJson, f.tierKey, rows));
    }
}
