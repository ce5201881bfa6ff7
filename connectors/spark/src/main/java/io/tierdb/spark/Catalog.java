/*
 * Catalog: the library's JDBC conversations with Postgres about a table:
 * which table a name means, its TierDB registration and cut-line (through
 * the extension's own tierdb.routing_state, so a Spark job sees exactly
 * what routed writes see), and the read pins of SPEC §5 steps 1 and 6
 * (tierdb_read_begin / tierdb_read_end).  Every SQL error is turned into
 * an exception that says what to do.
 */
package io.tierdb.spark;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

final class Catalog {
    /** SQLSTATE of "schema does not exist" / "function does not exist": the extension is missing. */
    private static final List<String> NO_EXTENSION_STATES = List.of("3F000", "42883");

    private Catalog() {
    }

    /**
     * A connection for the library's own statements, not in autocommit, with
     * the extension's transparent reads off: the library reads the heap and
     * the lake separately and must never get the union back from a heap query.
     */
    static Connection connect(SeamOptions options) {
        try {
            Connection conn = PgDriver.connect(options.jdbcUrl(), options.connectionProperties());
            try (Statement st = conn.createStatement()) {
                st.execute(SeamPlan.SESSION_SETUP);
            }
            conn.setAutoCommit(false);
            return conn;
        } catch (SQLException e) {
            throw new IllegalStateException("tierdb-spark could not connect to " + options.jdbcUrl() + ": "
                    + e.getMessage() + " (check jdbcUrl, user and password of the SeamOptions)", e);
        }
    }

    /** The registration of options.table() with the cut-line as of now; lock holds the cut-line until commit. */
    static Registration registration(Connection conn, SeamOptions options, boolean lock) throws SQLException {
        long oid = resolve(conn, options.table());
        String sql = "SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname), st ->> 'mode',"
                + " ARRAY(SELECT jsonb_array_elements_text(st -> 'pk_cols')), st ->> 'tier_key_col',"
                + " st ->> 'tier_key_type', coalesce((st ->> 'keep_heap')::boolean, false),"
                + " (st ->> 'T')::bigint, (st ->> 'R')::bigint, st IS NULL,"
                + " st -> 'heap_retention_lag' <> 'null'::jsonb"
                + " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace,"
                + " LATERAL tierdb.routing_state(c.oid::regclass, ?) st WHERE c.oid = ?";
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setBoolean(1, lock);
            ps.setLong(2, oid);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                String name = rs.getString(1);
                if (rs.getBoolean(9)) {
                    throw new IllegalArgumentException(String.format(
                            "table %s is not registered with TierDB: tierdb-spark reads and writes only registered "
                                    + "tables. Register it first: tierdb register --table %s --pk <column>[,<column>] "
                                    + "--tier-key <column>",
                            name, name));
                }
                return new Registration(oid, name, textArray(rs.getArray(3)), rs.getString(4), rs.getString(5),
                        rs.getString(2), rs.getBoolean(6), rs.getBoolean(10), nullableLong(rs, 7), nullableLong(rs, 8));
            }
        } catch (SQLException e) {
            throw explain(e, options);
        }
    }

    /** The table's oid; unknown tables are an error naming the table. */
    private static long resolve(Connection conn, String table) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("SELECT to_regclass(?)::oid::bigint")) {
            ps.setString(1, table);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                long oid = rs.getLong(1);
                if (rs.wasNull()) {
                    throw new IllegalArgumentException(String.format(
                            "table \"%s\" does not exist in the database (SeamOptions.table). Name an existing "
                                    + "table as schema.table; an unqualified name is looked up on the search_path.",
                            table));
                }
                return oid;
            }
        } catch (SQLException e) {
            // to_regclass raises only for malformed names
            throw new IllegalArgumentException("\"" + table + "\" is not a valid table name: " + e.getMessage(), e);
        }
    }

    /** A live pin: SPEC §5 step 1, the extension's tierdb_read_begin. */
    static final class Pin {
        final long pinId;
        final Long cutline;
        final Long snapshotId;
        final String metadataLocation;
        final Timestamp expiresAt;

        Pin(long pinId, Long cutline, Long snapshotId, String metadataLocation, Timestamp expiresAt) {
            this.pinId = pinId;
            this.cutline = cutline;
            this.snapshotId = snapshotId;
            this.metadataLocation = metadataLocation;
            this.expiresAt = expiresAt;
        }
    }

    static Pin beginRead(Connection conn, Registration reg, Duration ttl) throws SQLException {
        String sql = "SELECT pin_id, tier_key_hi, lake_snapshot_id, metadata_location, expires_at"
                + " FROM tierdb_read_begin(?::oid::regclass, make_interval(secs => ?))";
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setLong(1, reg.tableId);
            ps.setDouble(2, ttl.toMillis() / 1000.0);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Pin(rs.getLong(1), nullableLong(rs, 2), nullableLong(rs, 3), rs.getString(4),
                        rs.getTimestamp(5));
            }
        }
    }

    /**
     * A hybrid read of a mirrored table (the seed's hybrid, hybridLag,
     * mirrorWait): the pin with the capture's split as its cut-line and the
     * mirror's snapshot below it, or the pin as it was (a heap read) when the
     * mirror did not catch up within the wait.
     */
    static Pin beginHybrid(Connection conn, Registration reg, Pin pin, long lag, Duration wait) throws SQLException {
        String sql = "SELECT split, lake_snapshot_id, metadata_location FROM tierdb.hybrid_read_begin(?::oid::regclass, ?, ?)";
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setLong(1, reg.tableId);
            ps.setLong(2, lag);
            ps.setInt(3, (int) Math.min(Integer.MAX_VALUE, wait.toMillis()));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                Long split = nullableLong(rs, 1);
                if (split == null) {
                    return pin;
                }
                return new Pin(pin.pinId, split, rs.getLong(2), rs.getString(3), pin.expiresAt);
            }
        }
    }

    /** SPEC §5 step 6; false when the pin was already gone (closed twice, or swept after expiry). */
    static boolean endRead(Connection conn, long pinId) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("SELECT tierdb_read_end(?)")) {
            ps.setLong(1, pinId);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    /** Canonical tier keys rendered as SQL literals of the key's type, by the extension's own codec. */
    static List<String> tierKeyLiterals(Connection conn, Registration reg, List<Long> keys) throws SQLException {
        String sql = "SELECT tierdb.tier_key_literal(k, ?) FROM unnest(?::bigint[]) WITH ORDINALITY AS u(k, n) ORDER BY n";
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setString(1, reg.tierKeyType);
            ps.setArray(2, conn.createArrayOf("bigint", keys.toArray()));
            List<String> out = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1));
                }
            }
            return out;
        }
    }

    /** A canonical tier key as text in its type (for messages), e.g. 2024-01-08 00:00:00+00. */
    static String tierKeyText(Connection conn, Registration reg, long key) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("SELECT tierdb.tier_key_text(?, ?)")) {
            ps.setLong(1, key);
            ps.setString(2, reg.tierKeyType);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    /** An SQLException as an exception that says what happened and what to do. */
    static RuntimeException explain(SQLException e, SeamOptions options) {
        if (NO_EXTENSION_STATES.contains(e.getSQLState()) && String.valueOf(e.getMessage()).contains("tierdb")) {
            return new IllegalStateException("the tierdb extension is not installed in the database of "
                    + options.jdbcUrl() + " (" + e.getMessage() + "): run CREATE EXTENSION tierdb there, "
                    + "with shared_preload_libraries = 'tierdb'", e);
        }
        return new IllegalStateException("tierdb-spark: Postgres refused a statement on " + options.table() + ": "
                + e.getMessage(), e);
    }

    private static Long nullableLong(ResultSet rs, int column) throws SQLException {
        long v = rs.getLong(column);
        return rs.wasNull() ? null : v;
    }

    private static List<String> textArray(Array a) throws SQLException {
        return a == null ? List.of() : Arrays.asList((String[]) a.getArray());
    }
}
