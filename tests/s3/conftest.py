"""Fixtures for the S3 interop tests: a private S3Proxy on 127.0.0.1
(scripts/s3-server.sh, started once per session) and the programs under
test, built by `make` (build/tools/s3tool, build/tools/pqgen).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_DIR = Path(os.environ.get("TIERDB_BUILD_DIR", REPO_ROOT / "build"))
SERVER_SCRIPT = REPO_ROOT / "scripts" / "s3-server.sh"


class S3Server:
    """The running server: its endpoint, credentials and test bucket (from DIR/env)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.env = {}
        for line in (directory / "env").read_text().splitlines():
            name, _, value = line.removeprefix("export ").partition("=")
            self.env[name] = value
        self.endpoint = self.env["TIERDB_S3_ENDPOINT"]
        self.access_key = self.env["TIERDB_S3_ACCESS_KEY"]
        self.secret_key = self.env["TIERDB_S3_SECRET_KEY"]
        self.region = self.env["TIERDB_S3_REGION"]
        self.bucket = self.env["TIERDB_S3_TEST_BUCKET"]

    @property
    def host_port(self) -> str:
        return self.endpoint.removeprefix("http://")

    def client_env(self) -> dict:
        """The environment for our programs: the server's variables, no stray AWS ones."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "TIERDB_S3_"))}
        env.update(self.env)
        return env


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("s3-server")
    subprocess.run([str(SERVER_SCRIPT), "start", str(directory)], check=True, stdout=subprocess.DEVNULL,
                   stdin=subprocess.DEVNULL, timeout=120)
    try:
        yield S3Server(directory)
    finally:
        subprocess.run([str(SERVER_SCRIPT), "stop", str(directory)], check=False, timeout=60)


def _program(relative: str) -> Path:
    path = BUILD_DIR / relative
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"{path} is missing: run `make` in {REPO_ROOT} first", pytrace=False)
    return path


@pytest.fixture(scope="session")
def s3tool_bin() -> Path:
    return _program("tools/s3tool")


@pytest.fixture(scope="session")
def pqgen_bin() -> Path:
    return _program("tools/pqgen")
