/*
 * RowJson: a Spark row as the JSON row image Postgres' jsonb_populate_record
 * reads back exactly (the form tierdb_upsert takes): numbers stay exact,
 * non-finite floats and bytea travel as the strings their input functions
 * read, and timestamps carry microseconds, with the zone rules of Spark's
 * JDBC source (a TIMESTAMP value is an instant; a Postgres timestamp without
 * zone holds its wall-clock time in the JVM's zone, as Spark's JDBC reader
 * and writer take it).
 */
package io.tierdb.spark;

import java.math.BigDecimal;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

final class RowJson {
    private static final DateTimeFormatter WALL_CLOCK = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSS");
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private RowJson() {
    }

    /**
     * The row as a JSON object; `zoneless` names the Postgres columns of type
     * timestamp without time zone, whose values are written as wall clocks.
     */
    static String image(Row row, StructType schema, java.util.Set<String> zoneless) {
        StringBuilder out = new StringBuilder(64 * schema.size());
        out.append('{');
        StructField[] fields = schema.fields();
        for (int i = 0; i < fields.length; i++) {
            if (i > 0) {
                out.append(',');
            }
            string(out, fields[i].name());
            out.append(':');
            value(out, row.get(i), zoneless.contains(fields[i].name()));
        }
        return out.append('}').toString();
    }

    private static void value(StringBuilder out, Object v, boolean zoneless) {
        if (v == null) {
            out.append("null");
        } else if (v instanceof Boolean || v instanceof Byte || v instanceof Short || v instanceof Integer
                || v instanceof Long) {
            out.append(v);
        } else if (v instanceof Double || v instanceof Float) {
            floating(out, ((Number) v).doubleValue(), v.toString());
        } else if (v instanceof BigDecimal) {
            out.append(((BigDecimal) v).toPlainString());
        } else if (v instanceof String) {
            string(out, (String) v);
        } else if (v instanceof Timestamp) {
            instant(out, ((Timestamp) v).toInstant(), zoneless);
        } else if (v instanceof Instant) {
            instant(out, (Instant) v, zoneless);
        } else if (v instanceof LocalDateTime) {
            string(out, WALL_CLOCK.format((LocalDateTime) v));
        } else if (v instanceof java.sql.Date) {
            string(out, ((java.sql.Date) v).toLocalDate().toString());
        } else if (v instanceof LocalDate) {
            string(out, v.toString());
        } else if (v instanceof byte[]) {
            bytea(out, (byte[]) v);
        } else if (v instanceof Row) {
            Row r = (Row) v;
            out.append(image(r, r.schema(), java.util.Set.of()));
        } else if (v instanceof scala.collection.Seq) {
            array(out, scala.collection.JavaConverters.seqAsJavaList((scala.collection.Seq<?>) v), zoneless);
        } else if (v instanceof List) {
            array(out, (List<?>) v, zoneless);
        } else if (v instanceof scala.collection.Map) {
            object(out, scala.collection.JavaConverters.mapAsJavaMap((scala.collection.Map<?, ?>) v), zoneless);
        } else {
            throw new IllegalArgumentException("tierdb-spark cannot write a value of Java type "
                    + v.getClass().getName() + " (" + v + ") into a row image");
        }
    }

    private static void floating(StringBuilder out, double d, String text) {
        if (Double.isNaN(d) || Double.isInfinite(d)) {
            // float input reads these spellings; JSON has no number for them
            string(out, Double.isNaN(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity");
        } else {
            out.append(text);  // the shortest text that reads back as the same float
        }
    }

    private static void instant(StringBuilder out, Instant t, boolean zoneless) {
        if (zoneless) {
            string(out, WALL_CLOCK.format(LocalDateTime.ofInstant(t, ZoneId.systemDefault())));
        } else {
            string(out, WALL_CLOCK.format(LocalDateTime.ofInstant(t, ZoneOffset.UTC)) + "Z");
        }
    }

    private static void bytea(StringBuilder out, byte[] bytes) {
        StringBuilder hex = new StringBuilder(2 + bytes.length * 2).append("\\x");
        for (byte b : bytes) {
            hex.append(HEX[(b >> 4) & 0xf]).append(HEX[b & 0xf]);
        }
        string(out, hex.toString());
    }

    private static void array(StringBuilder out, List<?> items, boolean zoneless) {
        out.append('[');
        for (int i = 0; i < items.size(); i++) {
            if (i > 0) {
                out.append(',');
            }
            value(out, items.get(i), zoneless);
        }
        out.append(']');
    }

    private static void object(StringBuilder out, Map<?, ?> entries, boolean zoneless) {
        out.append('{');
        boolean first = true;
        for (Map.Entry<?, ?> e : entries.entrySet()) {
            if (!first) {
                out.append(',');
            }
            first = false;
            string(out, String.valueOf(e.getKey()));
            out.append(':');
            value(out, e.getValue(), zoneless);
        }
        out.append('}');
    }

    static void string(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"':
                    out.append("\\\"");
                    break;
                case '\\':
                    out.append("\\\\");
                    break;
                case '\n':
                    out.append("\\n");
                    break;
                case '\r':
                    out.append("\\r");
                    break;
                case '\t':
                    out.append("\\t");
                    break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        out.append('"');
    }
}
