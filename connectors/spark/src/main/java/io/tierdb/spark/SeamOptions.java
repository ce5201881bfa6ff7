/*
 * SeamOptions: what a seam read, write or delete of one TierDB table needs:
 * where Postgres is, which table, how long a read may hold its pin, and the
 * knobs of modes this version does not serve yet (hybrid reads of mirrored
 * tables), which it keeps so callers can already pass them.
 */
package io.tierdb.spark;

import java.io.Serializable;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Properties;

/** Immutable options of {@link TierDBSpark} calls; build them with {@link #builder()}. */
public final class SeamOptions implements Serializable {
    private static final long serialVersionUID = 1L;

    /** How long an abandoned read pin lives (SPEC §5 step 1). */
    public static final Duration DEFAULT_PIN_TTL = Duration.ofMinutes(15);
    /** How long a hybrid read waits for the mirror frontier. */
    public static final Duration DEFAULT_MIRROR_WAIT = Duration.ofSeconds(5);

    private final String jdbcUrl;
    private final String table;
    private final Duration pinTtl;
    private final String lakeTable;
    private final boolean hybrid;
    private final long hybridLag;
    private final Duration mirrorWait;
    private final Map<String, String> jdbcProperties;
    private final Integer numPartitions;

    private SeamOptions(Builder b) {
        this.jdbcUrl = b.jdbcUrl;
        this.table = b.table;
        this.pinTtl = b.pinTtl;
        this.lakeTable = b.lakeTable;
        this.hybrid = b.hybrid;
        this.hybridLag = b.hybridLag;
        this.mirrorWait = b.mirrorWait;
        this.jdbcProperties = Collections.unmodifiableMap(new LinkedHashMap<>(b.jdbcProperties));
        this.numPartitions = b.numPartitions;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String jdbcUrl() {
        return jdbcUrl;
    }

    /** The table as the user named it, e.g. {@code public.events} or {@code events}. */
    public String table() {
        return table;
    }

    public Duration pinTtl() {
        return pinTtl;
    }

    /** The Spark identifier of the lake table, or null to load it by the path the catalog stores. */
    public String lakeTable() {
        return lakeTable;
    }

    public boolean hybrid() {
        return hybrid;
    }

    /** Seconds (or key units) a hybrid read keeps on the heap side. */
    public long hybridLag() {
        return hybridLag;
    }

    public Duration mirrorWait() {
        return mirrorWait;
    }

    /** The JDBC properties given with user, password and jdbcProperty, read-only. */
    public Map<String, String> jdbcProperties() {
        return jdbcProperties;
    }

    /** The hot branch's partition count, empty for spark.default.parallelism. */
    public OptionalInt numPartitions() {
        return numPartitions == null ? OptionalInt.empty() : OptionalInt.of(numPartitions);
    }

    /** A fresh Properties copy for the driver and Spark's JDBC source. */
    Properties connectionProperties() {
        Properties p = new Properties();
        p.putAll(jdbcProperties);
        return p;
    }

    @Override
    public String toString() {
        // the password stays out of logs and error messages
        return "SeamOptions{jdbcUrl=" + jdbcUrl + ", table=" + table + ", pinTtl=" + pinTtl
                + ", lakeTable=" + lakeTable + ", hybrid=" + hybrid + ", numPartitions=" + numPartitions + "}";
    }

    /** Collects options; {@link #build()} checks them. */
    public static final class Builder {
        private String jdbcUrl;
        private String table;
        private Duration pinTtl = DEFAULT_PIN_TTL;
        private String lakeTable;
        private boolean hybrid;
        private long hybridLag;
        private Duration mirrorWait = DEFAULT_MIRROR_WAIT;
        private final Map<String, String> jdbcProperties = new LinkedHashMap<>();
        private Integer numPartitions;

        private Builder() {
        }

        /** A {@code jdbc:postgresql://} URL; it may carry user and password itself. */
        public Builder jdbcUrl(String url) {
            this.jdbcUrl = url;
            return this;
        }

        /** The registered table, {@code schema.table} or an unqualified name found on the search_path. */
        public Builder table(String name) {
            this.table = name;
            return this;
        }

        /** How long the read pin outlives a reader that never closes it (default 15 minutes). */
        public Builder pinTtl(Duration ttl) {
            this.pinTtl = ttl;
            return this;
        }

        /** A Spark identifier for the lake table when its stored path cannot be loaded directly. */
        public Builder lakeTable(String identifier) {
            this.lakeTable = identifier;
            return this;
        }

        /** Split a mirrored table's scan at the seam (not supported yet: reads refuse it). */
        public Builder hybrid(boolean enabled) {
            this.hybrid = enabled;
            return this;
        }

        /** What a hybrid read keeps on the heap side, in seconds for temporal keys. */
        public Builder hybridLag(long lag) {
            this.hybridLag = lag;
            return this;
        }

        /** The bound on a hybrid read's wait for the mirror frontier (default 5 seconds). */
        public Builder mirrorWait(Duration wait) {
            this.mirrorWait = wait;
            return this;
        }

        public Builder user(String user) {
            return jdbcProperty("user", user);
        }

        public Builder password(String password) {
            return jdbcProperty("password", password);
        }

        /** Any pgjdbc connection property (sslmode, options, ...), for every connection the library opens. */
        public Builder jdbcProperty(String key, String value) {
            jdbcProperties.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
            return this;
        }

        /** How many parallel JDBC partitions read the heap branch (default spark.default.parallelism). */
        public Builder numPartitions(int n) {
            this.numPartitions = n;
            return this;
        }

        public SeamOptions build() {
            if (jdbcUrl == null || !jdbcUrl.startsWith("jdbc:postgresql:")) {
                throw new IllegalArgumentException("SeamOptions needs jdbcUrl(\"jdbc:postgresql://host:port/db\"), got "
                        + (jdbcUrl == null ? "none" : "\"" + jdbcUrl + "\""));
            }
            if (table == null || table.isBlank()) {
                throw new IllegalArgumentException("SeamOptions needs table(\"schema.table\"): the TierDB table to read or write");
            }
            requirePositive(pinTtl, "pinTtl");
            requirePositive(mirrorWait, "mirrorWait");
            if (hybridLag < 0) {
                throw new IllegalArgumentException("hybridLag must be 0 or more, not " + hybridLag);
            }
            if (numPartitions != null && numPartitions < 1) {
                throw new IllegalArgumentException("numPartitions must be at least 1, not " + numPartitions);
            }
            return new SeamOptions(this);
        }

        private static void requirePositive(Duration d, String name) {
            if (d == null || d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(name + " must be a positive duration, not " + d);
            }
            if (d.toMillis() < 1000 && name.equals("pinTtl")) {
                throw new IllegalArgumentException("pinTtl must be at least one second, not " + d);
            }
        }
    }
}
