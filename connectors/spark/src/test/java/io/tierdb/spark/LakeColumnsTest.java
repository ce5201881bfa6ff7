/*
 * LakeColumnsTest: the rule that gives each heap column its lake field at
 * the pinned snapshot (LakeColumns.fieldNamesAt, the contract of
 * extension/sql/0.1/61-columns.sql), on Iceberg schemas alone: by
 * tierdb.columns first, else by name in the current schema among the ids it
 * does not list, then by id in the snapshot's schema.
 */
package io.tierdb.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.iceberg.Schema;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

class LakeColumnsTest {
    private static Schema schema(Object... idsAndNames) {
        Types.NestedField[] fields = new Types.NestedField[idsAndNames.length / 2];
        for (int i = 0; i < fields.length; i++) {
            fields[i] = Types.NestedField.optional((Integer) idsAndNames[2 * i], (String) idsAndNames[2 * i + 1],
                    Types.StringType.get());
        }
        return new Schema(fields);
    }

    @Test
    void withoutChangesEveryColumnIsItsFieldByName() {
        Schema s = schema(1, "id", 2, "ts", 3, "note");
        assertEquals(Map.of("id", "id", "ts", "ts", "note", "note"),
                LakeColumns.fieldNamesAt(s, s, Map.of(), List.of("id", "ts", "note")));
    }

    @Test
    void renamedColumnsFollowTheirIdsBeforeAndAfterTheLakeIsRenamed() {
        // note -> remark, and tag and v swapped, as tierdb.columns records them
        Map<Integer, String> listed = Map.of(3, "remark", 4, "v", 5, "tag");
        List<String> heap = List.of("id", "remark", "tag", "v");
        Schema old = schema(1, "id", 3, "note", 4, "tag", 5, "v");
        Map<String, String> expected = Map.of("id", "id", "remark", "note", "v", "tag", "tag", "v");
        assertEquals(expected, LakeColumns.fieldNamesAt(old, old, listed, heap), "lake not renamed yet");
        Schema renamed = schema(1, "id", 3, "remark", 4, "v", 5, "tag");
        assertEquals(expected, LakeColumns.fieldNamesAt(renamed, old, listed, heap), "snapshot before the rename");
        assertEquals(Map.of("id", "id", "remark", "remark", "v", "v", "tag", "tag"),
                LakeColumns.fieldNamesAt(renamed, renamed, listed, heap), "snapshot after the rename");
    }

    @Test
    void aDroppedFieldIsNeverReadByAColumnOfItsName() {
        Map<Integer, String> listed = new HashMap<>();
        listed.put(3, null);  // note dropped
        Schema old = schema(1, "id", 3, "note");
        // note added again: the lake has not followed (no field), then it has (field 4)
        assertEquals(Map.of("id", "id"), LakeColumns.fieldNamesAt(old, old, listed, List.of("id", "note")));
        Schema followed = schema(1, "id", 4, "note");
        assertEquals(Map.of("id", "id"), LakeColumns.fieldNamesAt(followed, old, listed, List.of("id", "note")),
                "a snapshot before the new field");
        assertEquals(Map.of("id", "id", "note", "note"),
                LakeColumns.fieldNamesAt(followed, followed, listed, List.of("id", "note")));
    }

    @Test
    void aFieldAddedAfterTheSnapshotIsAbsentThere() {
        Schema before = schema(1, "id");
        Schema after = schema(1, "id", 2, "x");
        assertEquals(Map.of("id", "id"), LakeColumns.fieldNamesAt(after, before, Map.of(), List.of("id", "x")));
        assertEquals(Map.of("id", "id"), LakeColumns.fieldNamesAt(before, before, Map.of(), List.of("id", "x")));
    }
}
