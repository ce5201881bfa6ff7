/*
 * LakeFiles: one Spark task of a direct write (DirectWrite): writes its
 * rows of the batch as lake files, one data file and one equality-delete
 * file per lake partition the rows fall in, and returns their Iceberg
 * descriptions for the driver to commit.
 *
 * The rows arrive already in the lake's shape (DirectWrite.lakeRows): one
 * column per field of the lake's current schema, in order, of the Spark
 * type Iceberg reads that field as.  Every row written is also a key
 * deleted: an equality delete on the merge key in the row's own partition
 * removes the key's older row (a delete applies only to data files of
 * older sequence numbers, never to the rows committed with it).  A delete
 * batch (`deletesOnly`) writes the deletes alone.
 *
 * Iceberg's generic writers (GenericAppenderFactory) write the files with
 * the table's own properties (Parquet, its compression, its field ids),
 * at names the table's location provider gives, stamped with the op id.
 */
package io.tierdb.spark;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.sql.Date;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericAppenderFactory;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.deletes.EqualityDeleteWriter;
import org.apache.iceberg.encryption.EncryptedOutputFile;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.Row;

final class LakeFiles implements FlatMapFunction<Iterator<Row>, byte[]> {
    private static final long serialVersionUID = 1L;

    /** What one task wrote, sent to the driver serialized (Iceberg's file descriptions are Serializable). */
    static final class Written implements Serializable {
        private static final long serialVersionUID = 1L;
        final List<DataFile> data = new ArrayList<>();
        final List<DeleteFile> deletes = new ArrayList<>();
        long rows;

        static Written of(byte[] bytes) {
            try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes))) {
                return (Written) in.readObject();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
        }

        byte[] bytes() {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try (ObjectOutputStream o = new ObjectOutputStream(out)) {
                o.writeObject(this);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return out.toByteArray();
        }
    }

    private final Broadcast<Table> table;
    private final List<Integer> keyFieldIds;
    private final String opId;
    private final boolean deletesOnly;

    LakeFiles(Broadcast<Table> table, List<Integer> keyFieldIds, String opId, boolean deletesOnly) {
        this.table = table;
        this.keyFieldIds = keyFieldIds;
        this.opId = opId;
        this.deletesOnly = deletesOnly;
    }

    /** The files of one partition of the lake. */
    private static final class Partition {
        DataWriter<Record> data;
        EqualityDeleteWriter<Record> deletes;
        final List<String> paths = new ArrayList<>();
    }

    @Override
    public Iterator<byte[]> call(Iterator<Row> rows) throws IOException {
        Table t = table.value();
        Schema schema = t.schema();
        Schema keySchema = schema.select(keyNames(schema));
        int[] keyPositions = keyFieldIds.stream().mapToInt(id -> schema.columns().indexOf(schema.findField(id)))
                .toArray();
        GenericAppenderFactory files = new GenericAppenderFactory(schema, t.spec(),
                keyFieldIds.stream().mapToInt(Integer::intValue).toArray(), keySchema, null);
        files.setAll(t.properties()); // the table's codec, row-group size, ... (else Iceberg's defaults, GZIP)
        TaskContext task = TaskContext.get();
        OutputFileFactory names = OutputFileFactory.builderFor(t, task.partitionId(), task.taskAttemptId())
                .format(FileFormat.PARQUET).operationId(opId).build();
        // the partition of a row is that of its key: the spec partitions by the tier key, part of the key
        PartitionKey key = new PartitionKey(t.spec(), keySchema);
        InternalRecordWrapper wrapper = new InternalRecordWrapper(keySchema.asStruct());
        Map<PartitionKey, Partition> open = new HashMap<>();
        Written written = new Written();
        try {
            while (rows.hasNext()) {
                Row row = rows.next();
                Record keyRecord = GenericRecord.create(keySchema);
                for (int i = 0; i < keyPositions.length; i++) {
                    keyRecord.set(i, value(keySchema.columns().get(i).type(), row.get(keyPositions[i])));
                }
                key.partition(wrapper.wrap(keyRecord));
                Partition p = open.get(key);
                if (p == null) {
                    PartitionKey copy = key.copy();
                    p = new Partition();
                    open.put(copy, p);
                    EncryptedOutputFile deletes = names.newOutputFile(t.spec(), copy);
                    p.paths.add(deletes.encryptingOutputFile().location());
                    p.deletes = files.newEqDeleteWriter(deletes, FileFormat.PARQUET, copy);
                    if (!deletesOnly) {
                        EncryptedOutputFile data = names.newOutputFile(t.spec(), copy);
                        p.paths.add(data.encryptingOutputFile().location());
                        p.data = files.newDataWriter(data, FileFormat.PARQUET, copy);
                    }
                }
                p.deletes.write(keyRecord);
                if (!deletesOnly) {
                    p.data.write(record(schema, row));
                }
                written.rows++;
            }
            for (Partition p : open.values()) {
                p.deletes.close();
                written.deletes.add(p.deletes.toDeleteFile());
                if (p.data != null) {
                    p.data.close();
                    written.data.add(p.data.toDataFile());
                }
            }
        } catch (IOException | RuntimeException e) {
            // a failed task leaves none of its files: a retried attempt writes its own
            for (Partition p : open.values()) {
                abort(t, p);
            }
            throw e;
        }
        return List.of(written.bytes()).iterator();
    }

    private static void abort(Table t, Partition p) {
        for (java.io.Closeable writer : new java.io.Closeable[] {p.deletes, p.data}) {
            try {
                if (writer != null) {
                    writer.close();
                }
            } catch (IOException | RuntimeException ignored) {
                // closing only to delete: the file goes either way
            }
        }
        for (String path : p.paths) {
            try {
                t.io().deleteFile(path);
            } catch (RuntimeException ignored) {
                // an orphan the lake's sweep removes
            }
        }
    }

    private List<String> keyNames(Schema schema) {
        List<String> names = new ArrayList<>();
        for (int id : keyFieldIds) {
            names.add(schema.findField(id).name());
        }
        return names;
    }

    private static Record record(Schema schema, Row row) {
        Record r = GenericRecord.create(schema);
        List<Types.NestedField> fields = schema.columns();
        for (int i = 0; i < fields.size(); i++) {
            r.set(i, value(fields.get(i).type(), row.get(i)));
        }
        return r;
    }

    /** A Spark value of the lake field's Spark type as Iceberg's generic writers take it. */
    static Object value(Type type, Object v) {
        if (v == null) {
            return null;
        }
        switch (type.typeId()) {
            case DECIMAL:
                return ((BigDecimal) v).setScale(((Types.DecimalType) type).scale());
            case DATE:
                return v instanceof Date ? ((Date) v).toLocalDate() : (LocalDate) v;
            case TIMESTAMP: {
                if (v instanceof LocalDateTime) {
                    return v;  // timestamp without zone: Spark's TIMESTAMP_NTZ
                }
                Instant at = v instanceof Timestamp ? ((Timestamp) v).toInstant() : (Instant) v;
                return ((Types.TimestampType) type).shouldAdjustToUTC() ? at.atOffset(ZoneOffset.UTC)
                        : LocalDateTime.ofInstant(at, ZoneOffset.UTC);
            }
            case BINARY:
                return ByteBuffer.wrap((byte[]) v);
            case UUID:
                return UUID.fromString((String) v);
            default:
                return v;  // booleans, numbers and strings are Java's own
        }
    }
}
