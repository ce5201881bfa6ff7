"""Page CRCs of the lake's data files, end to end: the files the daemon writes
carry a CRC in every page header, pyarrow verifies them, and one flipped bit
inside a page of a tiered file makes the cold scan in Postgres fail with
data_corrupted (XX001) naming the file, the row group, the column and the
page, instead of returning an altered value.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from test_tiering import cutline, make_events, run_once


def _data_files(ref: str):
    return sorted(Path(ref).rglob("*.parquet"))


def test_tiered_files_carry_crcs_and_a_flipped_bit_is_refused(db, tierdb):
    make_events(db)
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "2d")
    state = cutline(db, "events")
    files = _data_files(state["ref"])
    assert files
    scan = f"SELECT count(*) FROM tierdb.lake_scan(NULL::events, {state['S']})"
    rows = int(db.query(scan)[0][0])
    assert rows > 0
    for f in files:
        # pyarrow checks every page's CRC; a page without one would pass
        # unchecked, so the last-byte flip below is what proves they are there
        pq.read_table(f, page_checksum_verification=True)

    # The last byte of a column chunk is the last byte of its last page's body.
    victim = max(files, key=lambda p: p.stat().st_size)
    meta = pq.ParquetFile(victim).metadata
    column = meta.row_group(0).column(0)
    start = column.dictionary_page_offset if column.has_dictionary_page else column.data_page_offset
    at = start + column.total_compressed_size - 1
    data = bytearray(victim.read_bytes())
    data[at] ^= 0x04
    victim.write_bytes(bytes(data))

    err = db.error(scan)
    assert "XX001" in err, err
    assert f'{victim}: row group 0, column "{column.path_in_schema}", page ' in err, err
    assert "page CRC does not match its contents" in err, err
    assert "HINT:  The file is damaged" in err, err
