"""Reading a lake's files wherever its warehouse is: a local directory (the
default) or S3, when the suite runs with TIERDB_E2E_LAKE=s3 (`make
test-e2e-s3`: conftest.py then starts S3Proxy, points the cluster, the
daemon and this module at it with TIERDB_S3_*, and the `lake` fixture is an
S3Location under the test bucket).

Locations are given as the lake records them: a plain path or file:// URI
locally, s3://bucket/key on S3. Listings return the same forms, so they
compare with what manifests reference.
"""

from __future__ import annotations

import json
import os
import uuid
from functools import lru_cache
from pathlib import Path

ON_S3 = os.environ.get("TIERDB_E2E_LAKE", "local") == "s3"


class S3Location(str):
    """An s3:// URI that joins like a Path (`lake / "public" / "t"`)."""

    def __truediv__(self, name) -> "S3Location":
        return S3Location(self.rstrip("/") + "/" + str(name))


def new_warehouse() -> S3Location:
    """A fresh, empty warehouse prefix in the test bucket."""
    return S3Location(f"s3://{os.environ['TIERDB_S3_TEST_BUCKET']}/lake-{uuid.uuid4().hex[:12]}")


@lru_cache(maxsize=1)
def _s3():
    from pyarrow import fs

    endpoint = os.environ["TIERDB_S3_ENDPOINT"]
    scheme, _, host = endpoint.partition("://")
    return fs.S3FileSystem(access_key=os.environ["TIERDB_S3_ACCESS_KEY"],
                           secret_key=os.environ["TIERDB_S3_SECRET_KEY"],
                           region=os.environ.get("TIERDB_S3_REGION", "us-east-1"),
                           endpoint_override=host, scheme=scheme)


def _is_s3(location) -> bool:
    return str(location).startswith(("s3://", "s3a://"))


def _key(location) -> str:
    return str(location).split("://", 1)[1]


def local(location) -> Path:
    """A local location as a Path (file:// stripped)."""
    text = str(location)
    return Path(text[len("file://"):] if text.startswith("file://") else text)


def read_bytes(location) -> bytes:
    if _is_s3(location):
        with _s3().open_input_stream(_key(location)) as f:
            return f.read()
    return local(location).read_bytes()


def read_text(location) -> str:
    return read_bytes(location).decode()


def read_json(location):
    return json.loads(read_bytes(location))


def exists(location) -> bool:
    if _is_s3(location):
        from pyarrow import fs

        return _s3().get_file_info(_key(location)).type == fs.FileType.File
    return local(location).exists()


def list_files(location, suffix: str = "") -> set:
    """Every file below `location` whose name ends in suffix, as the lake names them."""
    if _is_s3(location):
        from pyarrow import fs

        scheme = str(location).split("://", 1)[0]
        infos = _s3().get_file_info(fs.FileSelector(_key(location).rstrip("/"), recursive=True, allow_not_found=True))
        return {f"{scheme}://{i.path}" for i in infos if i.type == fs.FileType.File and i.path.endswith(suffix)}
    return {str(p) for p in local(location).rglob(f"*{suffix}") if p.is_file()}


def normalize(location) -> str:
    """A recorded location in the form list_files returns."""
    return str(location) if _is_s3(location) else str(local(location))


def remove(location) -> None:
    if _is_s3(location):
        _s3().delete_file(_key(location))
    else:
        local(location).unlink()


def move_tree(source, target) -> None:
    """Moves every file below source to the same place below target (S3 has no rename: copy, then delete)."""
    if not _is_s3(source):
        local(source).rename(local(target))
        return
    for f in list_files(source):
        moved = str(target) + f[len(str(source)):]
        _s3().copy_file(_key(f), _key(moved))
        _s3().delete_file(_key(f))


def duckdb_reach_s3(con) -> None:
    """On S3: loads DuckDB's httpfs extension (the pip-installed build) into
    con and gives it the store's credentials, so iceberg_scan can read the
    lake. Nothing for local lakes."""
    if not ON_S3:
        return
    import glob
    import importlib

    import duckdb

    module = importlib.import_module("duckdb_extension_httpfs")
    root = os.path.join(module.__path__[0], "extensions")
    found = (glob.glob(os.path.join(root, f"v{duckdb.__version__}", "*.duckdb_extension"))
             or glob.glob(os.path.join(root, "*.duckdb_extension")))
    con.execute(f"LOAD '{found[0]}'")
    con.execute("CREATE SECRET lake (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?, URL_STYLE 'path', "
                "USE_SSL false)", [os.environ["TIERDB_S3_ACCESS_KEY"], os.environ["TIERDB_S3_SECRET_KEY"],
                                   os.environ.get("TIERDB_S3_REGION", "us-east-1"),
                                   os.environ["TIERDB_S3_ENDPOINT"].split("://", 1)[1]])
