"""Storage profiles on S3 (issue 17 §3) against a real S3-compatible server
(S3Proxy, scripts/s3-server.sh) and a real cluster: a profile with its own
endpoint and a credentials reference; the daemon and the command find the
credentials as TIERDB_CREDENTIALS_<REF> in their environment (no TIERDB_S3_*
credentials anywhere), the server in its credentials file. A table registered
with --profile is tiered to the profile's bucket prefix, verified, and read
back transparently by Postgres. Missing or wrong credentials fail with errors
that name the profile and the reference and never contain a secret, in the
command's output and in the server log alike."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pg_cluster import REPO_ROOT

SERVER_SCRIPT = REPO_ROOT / "scripts" / "s3-server.sh"
WRONG_SECRET = "Wr0ngSecret/ThatMustNotLeak+42"

EVENTS_DDL = """
CREATE TABLE public.events (id bigint NOT NULL, v text) PARTITION BY RANGE (id);
CREATE TABLE public.events_p0 PARTITION OF public.events FOR VALUES FROM (0) TO (1000);
CREATE TABLE public.events_p1 PARTITION OF public.events FOR VALUES FROM (1000) TO (2000);
CREATE TABLE public.events_p2 PARTITION OF public.events FOR VALUES FROM (2000) TO (3000);
INSERT INTO public.events SELECT g, 'v' || g FROM generate_series(0, 2499) g;
"""


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """The running server's settings, from the env file the script writes."""
    directory = tmp_path_factory.mktemp("s3-server")
    subprocess.run([str(SERVER_SCRIPT), "start", str(directory)], check=True, stdout=subprocess.DEVNULL,
                   stdin=subprocess.DEVNULL, timeout=180)
    settings = {"directory": directory}
    for line in (directory / "env").read_text().splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        settings[name] = value
    try:
        yield settings
    finally:
        subprocess.run([str(SERVER_SCRIPT), "stop", str(directory)], check=False, timeout=60)


def no_s3_env():
    """Overrides that blank every S3 credential the environment could supply."""
    return {k: "" for k in ("TIERDB_S3_ENDPOINT", "TIERDB_S3_ACCESS_KEY", "TIERDB_S3_SECRET_KEY", "AWS_ACCESS_KEY_ID",
                            "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL")}


def ok(proc):
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    return proc.stdout


def credentials(s3, secret=None):
    return f"access_key_id={s3['TIERDB_S3_ACCESS_KEY']};secret_access_key={secret or s3['TIERDB_S3_SECRET_KEY']}"


def create_profile(tierdb, s3, name, prefix, ref="LAKE_R"):
    ok(tierdb(["profile", "create", "--name", name,
               "--warehouse", f"s3://{s3['TIERDB_S3_TEST_BUCKET']}/{prefix}",
               "--config", f"endpoint={s3['TIERDB_S3_ENDPOINT']};region={s3['TIERDB_S3_REGION']};addressing=path",
               "--credentials", ref]))


@pytest.fixture
def credentials_file(pg):
    """Writes the server's credentials file (the default tierdb.credentials_file,
    in the data directory) owned by the server's user; removed afterwards."""
    data = pg.directory / "data"
    path = data / "tierdb_credentials"
    owner = data.stat()

    def write(text, mode=0o600):
        path.write_text(text)
        os.chown(path, owner.st_uid, owner.st_gid)
        path.chmod(mode)
        return path

    yield write
    path.unlink(missing_ok=True)


def server_log(pg):
    return pg.log.read_text(errors="replace")


def test_missing_credentials_name_profile_and_reference(db, tierdb, s3):
    db.psql(EVENTS_DDL)
    create_profile(tierdb, s3, "s3lake", "missing-creds")
    proc = tierdb("register --table public.events --pk id --tier-key id --profile s3lake",
                  env={**no_s3_env(), "TIERDB_CREDENTIALS_LAKE_R": ""})
    # An empty variable is a malformed one; an absent one is missing: both name the profile and reference.
    assert proc.returncode == 1, proc.stderr
    assert "storage profile 's3lake' (credentials LAKE_R)" in proc.stderr
    env = {k: v for k, v in no_s3_env().items()}
    proc = tierdb("register --table public.events --pk id --tier-key id --profile s3lake", env=env)
    assert proc.returncode == 1, proc.stderr
    assert "storage profile 's3lake' (credentials LAKE_R)" in proc.stderr, proc.stderr
    assert ("storage profile 's3lake' (credentials LAKE_R): credentials LAKE_R are not in the environment of this"
            " tierdb process: add TIERDB_CREDENTIALS_LAKE_R=access_key_id=...;secret_access_key=... there"
            in proc.stderr), proc.stderr
    assert db.query("SELECT count(*) FROM tierdb.tables") == [("0",)]


def test_wrong_credentials_never_leak_the_secret(db, tierdb, s3, pg):
    db.psql(EVENTS_DDL)
    create_profile(tierdb, s3, "s3lake", "wrong-creds")
    env = {**no_s3_env(), "TIERDB_CREDENTIALS_LAKE_R": credentials(s3, WRONG_SECRET)}
    proc = tierdb("register --table public.events --pk id --tier-key id --profile s3lake", env=env)
    assert proc.returncode == 1, proc.stderr
    assert "storage profile 's3lake' (credentials LAKE_R)" in proc.stderr, proc.stderr
    assert "403" in proc.stderr, proc.stderr
    assert WRONG_SECRET not in proc.stderr + proc.stdout
    # A malformed value: the part that could be a secret is not echoed either.
    env["TIERDB_CREDENTIALS_LAKE_R"] = f"access_key_id=x;{WRONG_SECRET}"
    proc = tierdb("register --table public.events --pk id --tier-key id --profile s3lake", env=env)
    assert proc.returncode == 1
    assert "TIERDB_CREDENTIALS_LAKE_R" in proc.stderr and "s3lake" in proc.stderr
    assert WRONG_SECRET not in proc.stderr + proc.stdout
    # Registered with the right credentials, then a daemon run with the wrong ones: its log names the
    # profile and the reference, and the table's tiering fails without the secret in any line.
    env["TIERDB_CREDENTIALS_LAKE_R"] = credentials(s3)
    ok(tierdb("register --table public.events --pk id --tier-key id --profile s3lake", env=env))
    env["TIERDB_CREDENTIALS_LAKE_R"] = credentials(s3, WRONG_SECRET)
    proc = tierdb(["run", "--once"], env={**env, "TIERDB_TIERING_LAG": "1000"})
    assert proc.returncode == 1
    assert "storage profile 's3lake' (credentials LAKE_R)" in proc.stderr and "403" in proc.stderr, proc.stderr
    assert WRONG_SECRET not in proc.stderr + proc.stdout
    assert db.query("SELECT lake_snapshot_id FROM tierdb.cutline") == [(None,)]
    assert WRONG_SECRET not in server_log(pg)


def test_profile_on_s3_end_to_end(db, tierdb, s3, pg, credentials_file):
    """Register with --profile, tier with the daemon, verify, and read the
    tiered rows in Postgres from S3 with the credentials file's keys."""
    db.psql(EVENTS_DDL)
    create_profile(tierdb, s3, "s3lake", "wh-e2e")
    # Only the reference's variable carries credentials: TIERDB_S3_* are blank.
    env = {**no_s3_env(), "TIERDB_CREDENTIALS_LAKE_R": credentials(s3)}
    out = ok(tierdb("register --table public.events --pk id --tier-key id --profile s3lake", env=env))
    location = f"s3://{s3['TIERDB_S3_TEST_BUCKET']}/wh-e2e/public/events"
    assert location in out
    assert db.query("SELECT storage_profile, lake_table_ref FROM tierdb.tables") == [("s3lake", location)]

    ok(tierdb(["run", "--once"], env={**env, "TIERDB_TIERING_LAG": "1000"}))
    (t, s) = db.query("SELECT tier_key_hi, lake_snapshot_id FROM tierdb.cutline")[0]
    assert int(t) == 1000 and s is not None, "the daemon did not tier events_p0 to the profile's bucket"
    assert "verify public.events: ok" in ok(tierdb("verify --table public.events", env=env))

    # The server reads the lake with the credentials file's keys.
    credentials_file(f"# TierDB\nTIERDB_CREDENTIALS_LAKE_R={credentials(s3)}\n")
    assert db.query("SELECT count(*), min(id), max(id) FROM public.events") == [("2500", "0", "2499")]
    assert db.query("SELECT v FROM public.events WHERE id = 7") == [("v7",)]

    # A group- or world-readable file is refused, naming the file; the rows below T are not served from it.
    credentials_file(f"TIERDB_CREDENTIALS_LAKE_R={credentials(s3)}\n", mode=0o644)
    err = db.error("SELECT count(*) FROM public.events")
    assert "storage profile 's3lake' (credentials LAKE_R)" in err, err
    assert "group or world access" in err and "tierdb_credentials" in err, err
    assert s3["TIERDB_S3_SECRET_KEY"] not in err

    # A file without the reference: the error says which reference is missing from which file.
    credentials_file("TIERDB_CREDENTIALS_OTHER=access_key_id=a;secret_access_key=b\n")
    err = db.error("SELECT count(*) FROM public.events")
    assert "storage profile 's3lake' (credentials LAKE_R)" in err and "TIERDB_CREDENTIALS_LAKE_R=" in err, err

    # A wrong secret in the file: the store's refusal, with the profile, never the secret.
    credentials_file(f"TIERDB_CREDENTIALS_LAKE_R={credentials(s3, WRONG_SECRET)}\n")
    err = db.error("SELECT count(*) FROM public.events")
    assert "storage profile 's3lake' (credentials LAKE_R)" in err and "403" in err, err
    assert WRONG_SECRET not in err

    # Fixed again: read as before (the backend notices the file changed).
    credentials_file(f"TIERDB_CREDENTIALS_LAKE_R={credentials(s3)}\n")
    assert db.query("SELECT count(*) FROM public.events WHERE id < 1000") == [("1000",)]
    log = server_log(pg)
    assert WRONG_SECRET not in log and s3["TIERDB_S3_SECRET_KEY"] not in log


def test_two_profiles_two_prefixes(db, tierdb, s3, credentials_file):
    """Two tables under two S3 profiles with different references: each lake
    lands under its own profile's prefix, and each reference serves its own."""
    db.psql(EVENTS_DDL + EVENTS_DDL.replace("events", "orders"))
    create_profile(tierdb, s3, "lake_a", "wh-a", ref="A")
    create_profile(tierdb, s3, "lake_b", "wh-b", ref="B")
    env = {**no_s3_env(), "TIERDB_CREDENTIALS_A": credentials(s3), "TIERDB_CREDENTIALS_B": credentials(s3)}
    ok(tierdb("register --table public.events --pk id --tier-key id --profile lake_a", env=env))
    ok(tierdb("register --table public.orders --pk id --tier-key id --profile lake_b", env=env))
    refs = dict(db.query("SELECT table_name, lake_table_ref FROM tierdb.tables"))
    bucket = s3["TIERDB_S3_TEST_BUCKET"]
    assert refs == {"events": f"s3://{bucket}/wh-a/public/events", "orders": f"s3://{bucket}/wh-b/public/orders"}
    # B's credentials missing from the daemon: A's table tiers, B's fails naming B.
    proc = tierdb(["run", "--once"], env={**env, "TIERDB_CREDENTIALS_B": "", "TIERDB_TIERING_LAG": "1000"})
    assert "storage profile 'lake_b' (credentials B)" in proc.stderr, proc.stderr
    tiered = dict(db.query("SELECT t.table_name, c.lake_snapshot_id IS NOT NULL FROM tierdb.cutline c"
                           " JOIN tierdb.tables t USING (table_id)"))
    assert tiered == {"events": "t", "orders": "f"}
    ok(tierdb(["run", "--once"], env={**env, "TIERDB_TIERING_LAG": "1000"}))
    credentials_file(f"TIERDB_CREDENTIALS_A={credentials(s3)}\nTIERDB_CREDENTIALS_B={credentials(s3)}\n")
    assert db.query("SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM orders)") == [("2500", "2500")]
    listed = {p["profile"]: p["tables"] for p in json.loads(ok(tierdb("profile list --json")))}
    assert listed == {"default": 0, "lake_a": 1, "lake_b": 1}


def test_a_connected_session_follows_the_file_and_new_profiles(db, tierdb, s3, credentials_file):
    """A backend checks the profiles and the credentials file once per
    transaction: a session that stays connected sees the file fixed, broken
    and a profile created after it connected."""
    import psycopg

    db.psql(EVENTS_DDL)
    env = {**no_s3_env(), "TIERDB_CREDENTIALS_LAKE_R": credentials(s3)}
    with psycopg.connect(db.dsn, autocommit=True) as conn:
        # Connected, and reading, before the profile exists.
        assert conn.execute("SELECT count(*) FROM public.events").fetchone() == (2500,)
        create_profile(tierdb, s3, "s3lake", "wh-session")
        ok(tierdb("register --table public.events --pk id --tier-key id --profile s3lake", env=env))
        ok(tierdb(["run", "--once"], env={**env, "TIERDB_TIERING_LAG": "1000"}))
        with pytest.raises(psycopg.Error) as failure:
            conn.execute("SELECT count(*) FROM public.events").fetchone()
        assert "storage profile 's3lake' (credentials LAKE_R)" in str(failure.value)
        credentials_file(f"TIERDB_CREDENTIALS_LAKE_R={credentials(s3)}\n")
        assert conn.execute("SELECT count(*) FROM public.events").fetchone() == (2500,)
        credentials_file(f"TIERDB_CREDENTIALS_LAKE_R={credentials(s3)}\n", mode=0o640)
        with pytest.raises(psycopg.Error) as failure:
            conn.execute("SELECT count(*) FROM public.events").fetchone()
        assert "group or world access" in str(failure.value)
        credentials_file(f"TIERDB_CREDENTIALS_LAKE_R={credentials(s3)}\n")
        assert conn.execute("SELECT count(*) FROM public.events WHERE id < 1000").fetchone() == (1000,)


def test_daemon_credentials_file(db, tierdb, s3, tmp_path):
    """TIERDB_CREDENTIALS_FILE: the command and the daemon find a reference
    missing from their environment in that file (the server's format), which
    must be theirs alone."""
    db.psql(EVENTS_DDL)
    create_profile(tierdb, s3, "s3lake", "wh-file")
    path = tmp_path / "creds"
    path.write_text(f"# for the daemon\nexport TIERDB_CREDENTIALS_LAKE_R={credentials(s3)}\n")
    path.chmod(0o644)
    env = {**no_s3_env(), "TIERDB_CREDENTIALS_FILE": str(path)}
    proc = tierdb("register --table public.events --pk id --tier-key id --profile s3lake", env=env)
    assert proc.returncode == 1
    assert "storage profile 's3lake' (credentials LAKE_R)" in proc.stderr, proc.stderr
    assert "with no group or world access" in proc.stderr and str(path) in proc.stderr, proc.stderr
    path.chmod(0o600)
    ok(tierdb("register --table public.events --pk id --tier-key id --profile s3lake", env=env))
    ok(tierdb(["run", "--once"], env={**env, "TIERDB_TIERING_LAG": "1000"}))
    assert db.query("SELECT lake_snapshot_id IS NOT NULL FROM tierdb.cutline") == [("t",)]
    # The environment wins over the file: a wrong secret there is what is used (and refused).
    proc = tierdb("verify --table public.events",
                  env={**env, "TIERDB_CREDENTIALS_LAKE_R": credentials(s3, WRONG_SECRET)})
    assert proc.returncode == 1 and "403" in proc.stderr and "s3lake" in proc.stderr, proc.stderr
    assert WRONG_SECRET not in proc.stderr + proc.stdout
    assert "verify public.events: ok" in ok(tierdb("verify --table public.events", env=env))
    # --drop-lake deletes the lake's objects through the profile's storage; then the profile can go.
    objects = s3["directory"] / "data" / s3["TIERDB_S3_TEST_BUCKET"] / "wh-file" / "public" / "events"
    assert any(p.is_file() for p in objects.rglob("*"))
    ok(tierdb("unregister --table public.events --drop-lake", env=env))
    assert not objects.exists() or not any(p.is_file() for p in objects.rglob("*"))
    ok(tierdb("profile drop --name s3lake"))
