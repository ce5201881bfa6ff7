/*
 * fault.h: named fault points, so tests can kill the daemon at every
 * journal phase boundary and prove that nothing is lost or duplicated
 * (ARCHITECTURE decision 7).
 *
 * TIERDB_FAULT=<point> makes the daemon kill itself with SIGKILL the first
 * time it reaches that point: no cleanup, no atexit handlers, no flushing,
 * no ROLLBACK sent to the server, exactly like `kill -9` from outside. An
 * unset or empty TIERDB_FAULT disables every point; an unknown name is
 * refused when the daemon starts (tdb_fault_check_env), listing the known
 * ones, so a typo in a test cannot silently test nothing.
 *
 * The points of a tiering run (tiering.c), in the order a run passes them,
 * with the state a crash there leaves and what recovery (recovery.c) does:
 *
 *   tiering-before-seal       the operation is journaled (phase 'sealing')
 *                             but its partitions are not sealed. Rolled back.
 *   tiering-after-seal        the seal committed (partitions 'sealing', both
 *                             seal triggers installed, op phase 'writing'),
 *                             nothing written yet. Rolled back.
 *   tiering-mid-copy          the first batch of rows was handed to the lake
 *                             writer; data files are half written and not
 *                             yet recorded in the journal. Rolled back (the
 *                             unrecorded partial files stay as orphans for
 *                             lake maintenance to remove).
 *   tiering-before-commit     every data file written and recorded in
 *                             op_log.details "files"; no lake commit. Rolled
 *                             back, the recorded files deleted.
 *   tiering-after-commit      the lake snapshot stamped with the op id
 *                             landed, the journal still says 'writing', the
 *                             cut-line is not published. Adopted.
 *   tiering-after-commit-recorded
 *                             as above with the journal at 'committed'.
 *                             Adopted.
 *   tiering-after-publish     (T, S, lake_props) advanced and the
 *                             partitions 'tiered' (phase 'published'); no
 *                             heap partition dropped. The drop step finishes.
 *   tiering-mid-drop          the first of several tiered partitions
 *                             dropped. The drop step finishes.
 *   tiering-mid-keep          --keep-heap: the first of several tiered
 *                             partitions kept (unsealed, its mirror trigger
 *                             on), the others still sealed. The keep step
 *                             finishes.
 *
 * The points of a fold (fold.c), settled by the fold step itself:
 *
 *   fold-before-commit        equality-delete and data files written and
 *                             recorded in op_log.details "files"; no lake
 *                             commit. Rolled back, the recorded files deleted.
 *   fold-after-commit         the snapshot stamped with the op id landed, the
 *                             journal still says 'writing', S not published.
 *                             Adopted.
 *   fold-after-commit-recorded
 *                             as above with the journal at 'committed'.
 *                             Adopted.
 *
 * The points of a retention run (retention.c), settled by the recovery
 * step and the retention step (tdb_recover_retention):
 *
 *   retention-before-commit   the run is journaled (phase 'committing', the
 *                             files it removes in details); no lake commit.
 *                             Rolled back (marked aborted; it wrote nothing).
 *   retention-after-commit    the DELETE snapshot stamped with the op id
 *                             landed, the journal still says 'committing',
 *                             neither S nor R published. Adopted.
 *   retention-after-commit-recorded
 *                             as above with the journal at 'committed'.
 *                             Adopted.
 *   retention-before-publish-commit
 *                             the publishing transaction (S, R, delta rows
 *                             below R, phase 'done') is sent but not
 *                             committed; the kill rolls it back. Adopted
 *                             (or rolled back when no file was removed).
 *
 * The points of a mirrored table's copy chunk or pump batch (mirror.c),
 * settled by the mirror recovery step (tdb_recover_mirror):
 *
 *   mirror-before-commit      the operation is journaled with its files
 *                             written; no lake commit. Rolled back; the
 *                             chunk is copied again, the batch streamed again.
 *   mirror-after-commit       its snapshot landed; neither S nor the copy's
 *                             progress or F published. Adopted.
 *   mirror-after-commit-recorded
 *                             as above with the journal at 'committed'.
 *                             Adopted.
 *   mirror-after-publish      a batch's S and F are published, the slot not
 *                             yet told: the stream starts at F again, the
 *                             published changes are not sent twice.
 *
 * The points of retiring a mirrored table's old partitions under
 * --heap-retention (tdb_retire_heap_window, tiering.c), settled by tiering
 * recovery:
 *
 *   heap-retention-after-seal     the partitions are sealed, T not moved:
 *                                 no lake commit, so the run is undone
 *                                 (unsealed) and retried.
 *   heap-retention-after-publish  T is past them and they are tiered: the
 *                                 drop step drops them.
 *
 * The points of an ingest (`tierdb ingest`, prefix "ingest") and of Stream
 * Load's cold volume (prefix "load"), ingest.c, settled by
 * tdb_recover_ingests (the daemon's recovery step, or the next ingest):
 *
 *   ingest-before-commit      files written and journaled, no lake commit:
 *                             the files are deleted, the op aborted.
 *   ingest-after-commit       the snapshot landed, the journal says
 *   ingest-after-commit-recorded   'writing' / 'committed', S not
 *                             published: adopted (published).
 *   load-before-commit        as ingest-before-commit; the label 'failed'.
 *   load-after-commit         the snapshot landed but the load's hot rows
 *   load-after-commit-recorded     died with its session: the lake is
 *                             rolled back to S, the label 'failed'.
 *
 * The points of a Stream Load trickle (load.c: rows routed with
 * tierdb_upsert in one transaction with the label's 'committed'), settled
 * when the label is sent again:
 *
 *   load-trickle-before-commit    rows routed and the label marked in the
 *                                 open transaction, COMMIT not sent: the
 *                                 kill rolls it back; the label, 'staged'
 *                                 with its lock gone, is failed.
 *   load-trickle-after-commit     committed, no answer sent: the label
 *                                 answers its result again.
 */
#ifndef TIERDB_FAULT_H
#define TIERDB_FAULT_H

#include "tierlake/error.h"

/*
 * Checks TIERDB_FAULT: 0 when unset, empty or a known point; -1 with err
 * naming the known points otherwise. The daemon calls it at startup.
 */
int tdb_fault_check_env(tl_error *err);

/*
 * Kills the process with SIGKILL if TIERDB_FAULT names `point` (a name
 * listed above; anything else is a programming error and aborts). Logs
 * one line first, so a test's stderr shows where the daemon died.
 */
void tdb_fault(const char *point);

#endif
