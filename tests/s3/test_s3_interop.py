"""Parquet objects on a real S3-compatible server (S3Proxy) cross between our
S3 client and other engines' own S3 code: DuckDB (httpfs) and pyarrow
(S3FileSystem) read what our client wrote, and we read what pyarrow wrote,
through the lake library's Parquet reader on ranged GETs.
"""

from __future__ import annotations

import glob
import json
import subprocess
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pafs = pytest.importorskip("pyarrow.fs")

TIMEOUT = 120
# Above the client's 8 MiB part: the upload is multipart.
ROWS = 120_000


def expected_rows(n: int) -> list:
    return [{"id": i, "label": None if i % 13 == 0 else f"label-{i:08d}-{(i * 7919) % 100003:06d}-{'x' * 48}",
             "amount": i * 0.25} for i in range(n)]


def run(args, env, **kw):
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=TIMEOUT, env=env,
                          stdin=subprocess.DEVNULL, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, args))} exited {proc.returncode}: {proc.stderr.strip()}"
    return proc.stdout


def pyarrow_fs(server):
    return pafs.S3FileSystem(access_key=server.access_key, secret_key=server.secret_key, region=server.region,
                             endpoint_override=server.endpoint, scheme="http", allow_bucket_creation=False)


def write_with_our_client(server, pqgen, s3tool, tmp_path: Path, key: str) -> list:
    """pqgen writes the Parquet file with our writer; s3tool puts it through our S3 client."""
    rows = expected_rows(ROWS)
    schema = [{"name": "id", "type": "int64", "required": True, "field_id": 1},
              {"name": "label", "type": "string", "field_id": 2},
              {"name": "amount", "type": "double", "field_id": 3}]
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    with open(tmp_path / "rows.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n")
    local = tmp_path / "ours.parquet"
    run([pqgen, "--schema", tmp_path / "schema.json", "--rows", tmp_path / "rows.jsonl", "--out", local,
         "--codec", "none", "--no-dictionary", "--row-group-rows", "40000"], None)
    assert local.stat().st_size > 8 << 20, "the object must need a multipart upload"
    run([s3tool, "put", local, f"s3://{server.bucket}/{key}", "--if-absent"], server.client_env())
    listing = run([s3tool, "ls", f"s3://{server.bucket}/{key}"], server.client_env())
    assert listing == f"{key}\t{local.stat().st_size}\n"
    return rows


def test_pyarrow_reads_parquet_our_client_wrote(s3_server, pqgen_bin, s3tool_bin, tmp_path):
    key = "interop/ours-for-pyarrow.parquet"
    rows = write_with_our_client(s3_server, pqgen_bin, s3tool_bin, tmp_path, key)
    table = pq.read_table(f"{s3_server.bucket}/{key}", filesystem=pyarrow_fs(s3_server))
    assert table.to_pylist() == rows


def test_put_if_absent_refuses_an_existing_object(s3_server, s3tool_bin, tmp_path):
    local = tmp_path / "small.bin"
    local.write_bytes(b"first")
    uri = f"s3://{s3_server.bucket}/interop/once.bin"
    run([s3tool_bin, "put", local, uri, "--if-absent"], s3_server.client_env())
    local.write_bytes(b"second")
    proc = subprocess.run([str(s3tool_bin), "put", str(local), uri, "--if-absent"], capture_output=True, text=True,
                          timeout=TIMEOUT, env=s3_server.client_env(), stdin=subprocess.DEVNULL)
    assert proc.returncode == 3, proc.stderr
    assert "HTTP 412 PreconditionFailed" in proc.stderr and uri in proc.stderr
    with pyarrow_fs(s3_server).open_input_stream(f"{s3_server.bucket}/interop/once.bin") as f:
        assert f.read() == b"first"


def duckdb_with_httpfs():
    """A DuckDB connection with the httpfs extension from its PyPI package (DuckDB cannot download it here)."""
    duckdb = pytest.importorskip("duckdb")
    module = pytest.importorskip("duckdb_extension_httpfs")
    found = glob.glob(str(Path(module.__path__[0]) / "extensions" / f"v{duckdb.__version__}" / "*.duckdb_extension"))
    if not found:
        found = glob.glob(str(Path(module.__path__[0]) / "extensions" / "*.duckdb_extension"))
    if not found:
        pytest.skip(f"duckdb_extension_httpfs has no build for duckdb {duckdb.__version__}")
    con = duckdb.connect()
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute(f"LOAD '{found[0]}'")
    return con


def test_duckdb_reads_parquet_our_client_wrote(s3_server, pqgen_bin, s3tool_bin, tmp_path):
    con = duckdb_with_httpfs()
    key = "interop/ours-for-duckdb.parquet"
    rows = write_with_our_client(s3_server, pqgen_bin, s3tool_bin, tmp_path, key)
    con.execute("CREATE SECRET lake (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?, URL_STYLE 'path', "
                "USE_SSL false)", [s3_server.access_key, s3_server.secret_key, s3_server.region,
                                   s3_server.host_port])
    got = con.execute(f"SELECT id, label, amount FROM read_parquet('s3://{s3_server.bucket}/{key}') ORDER BY id"
                      ).fetchall()
    con.close()
    assert [dict(zip(("id", "label", "amount"), r)) for r in got] == rows


def test_we_read_parquet_pyarrow_wrote(s3_server, s3tool_bin):
    key = "interop/theirs.parquet"
    rows = expected_rows(50_000)
    table = pa.Table.from_pylist(rows, schema=pa.schema([("id", pa.int64(), False), ("label", pa.string()),
                                                         ("amount", pa.float64())]))
    pq.write_table(table, f"{s3_server.bucket}/{key}", filesystem=pyarrow_fs(s3_server), row_group_size=20_000,
                   compression="zstd")
    out = run([s3tool_bin, "cat", f"s3://{s3_server.bucket}/{key}"], s3_server.client_env())
    got = [json.loads(line) for line in out.splitlines()]
    assert got == rows
