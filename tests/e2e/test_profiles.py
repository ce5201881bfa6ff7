"""`tierdb profile list | create | drop | set-default` (SPEC §4 storage_profiles,
§8) against a real cluster: what each writes to the catalog, every validation
error (nothing written), at most one default, drop refused while a table uses
the profile, and `tierdb register --profile P` placing the lake under P's
warehouse. The S3 side (credentials by reference, the server's credentials
file, a table tiered to and read back from S3) is test_profiles_s3.py."""

from __future__ import annotations

import json
from pathlib import Path

EVENTS_DDL = """
CREATE TABLE public.events (id bigint NOT NULL, v text) PARTITION BY RANGE (id);
CREATE TABLE public.events_p0 PARTITION OF public.events FOR VALUES FROM (0) TO (1000);
CREATE TABLE public.events_p1 PARTITION OF public.events FOR VALUES FROM (1000) TO (2000);
"""


def ok(proc):
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    return proc.stdout


def fails(proc, *phrases, code=1):
    assert proc.returncode == code, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    for phrase in phrases:
        assert phrase in proc.stderr, f"{phrase!r} not in stderr:\n{proc.stderr}"
    return proc.stderr


def profiles(db):
    """{name: (warehouse, lake_config, credential_ref, is_default)} from the catalog."""
    rows = db.query(
        "SELECT profile_name, warehouse, lake_config::text, coalesce(credential_ref, '<null>'), is_default"
        " FROM tierdb.storage_profiles ORDER BY profile_name"
    )
    return {name: (wh, json.loads(cfg), ref if ref != "<null>" else None, d == "t") for name, wh, cfg, ref, d in rows}


def listed(tierdb):
    return {p["profile"]: p for p in json.loads(ok(tierdb("profile list --json")))}


def test_seeded_default_is_listed(db, tierdb):
    out = ok(tierdb("profile list"))
    header, *rows = out.splitlines()
    assert header.split() == ["profile", "default", "warehouse", "settings", "credentials", "tables"]
    assert rows[0].split()[:3] == ["default", "t", "(TIERDB_WAREHOUSE)"]
    (p,) = listed(tierdb).values()
    assert p == {"profile": "default", "default": True, "warehouse": "(TIERDB_WAREHOUSE)", "settings": {},
                 "credentials": None, "tables": 0}


def test_create_local_and_s3_profiles(db, tierdb, lake):
    out = ok(tierdb(["profile", "create", "--name", "local", "--warehouse", str(lake / "wh")]))
    assert out == "created storage profile 'local'\n"
    ok(tierdb(["profile", "create", "--name", "s3lake", "--warehouse", "s3://bucket/prefix/wh",
               "--config", "endpoint=http://127.0.0.1:9000;region=eu-west-1;addressing=path",
               "--credentials", "PROD_LAKE"]))
    got = profiles(db)
    assert got["local"] == (str(lake / "wh"), {}, None, False)
    assert got["s3lake"] == ("s3://bucket/prefix/wh",
                             {"endpoint": "http://127.0.0.1:9000", "region": "eu-west-1", "addressing": "path"},
                             "PROD_LAKE", False)
    assert got["default"][3] is True
    p = listed(tierdb)["s3lake"]
    assert p["credentials"] == "PROD_LAKE" and p["default"] is False and p["tables"] == 0


def test_relative_local_warehouse_is_made_absolute(db, tierdb, lake):
    proc = tierdb(["profile", "create", "--name", "rel", "--warehouse", "./some/dir/"])
    ok(proc)
    warehouse = profiles(db)["rel"][0]
    assert Path(warehouse).is_absolute() and warehouse.endswith("/some/dir")


def test_create_refuses_bad_input_and_writes_nothing(db, tierdb, lake):
    cases = [
        (["--name", "p", "--warehouse", "s3://b/wh", "--config", "endpiont=http://x"],
         ["--config: unknown storage profile setting 'endpiont'", "endpoint, region and addressing"]),
        (["--name", "p", "--warehouse", "s3://b/wh", "--config", "addressing=sideways"], ["use path or virtual"]),
        (["--name", "p", "--warehouse", "s3://b/wh", "--config", "endpoint"], ["'endpoint' is not key=value"]),
        (["--name", "p", "--warehouse", "s3://b/wh", "--config", "region=a;region=b"], ["sets 'region' twice"]),
        (["--name", "p", "--warehouse", "s3://b/wh", "--credentials", "my-ref"], ["'my-ref' is not a reference"]),
        (["--name", "p", "--warehouse", "s3://b/wh", "--credentials", "AKIA;secret"], ["is not a reference"]),
        (["--name", "p", "--warehouse", "s3://"], ["names no bucket"]),
        (["--name", "p", "--warehouse", "s3://b/wh/"], ["trailing '/'"]),
        (["--name", "p", "--warehouse", "gs://b/wh"], ["neither an absolute local path"]),
        (["--name", "p", "--warehouse", ""], ["--warehouse is empty"]),
        (["--name", "p", "--warehouse", str(lake), "--credentials", "R"], ["apply to s3:// warehouses"]),
        (["--name", "p", "--warehouse", str(lake), "--config", "region=x"], ["apply to s3:// warehouses"]),
        (["--name", "bad name", "--warehouse", str(lake)], ["is not a profile name"]),
        (["--name", "default", "--warehouse", str(lake)], ["'default' already exists"]),
    ]
    for args, phrases in cases:
        fails(tierdb(["profile", "create", *args]), "cannot create storage profile", *phrases)
    assert list(profiles(db)) == ["default"]
    fails(tierdb("profile create --warehouse /x"), "--name is required", code=2)
    fails(tierdb("profile create --name x"), "--warehouse is required", code=2)
    fails(tierdb("profile create --name x --warehouse /x --colour red"), "unknown option '--colour'", code=2)
    fails(tierdb("profile frobnicate"), "unknown command 'frobnicate'", code=2)
    # Two profiles cannot share a warehouse (the longer prefix could not tell them apart).
    ok(tierdb(["profile", "create", "--name", "one", "--warehouse", "s3://b/wh"]))
    fails(tierdb(["profile", "create", "--name", "two", "--warehouse", "s3://b/wh"]), "'one' already uses")


def test_at_most_one_default(db, tierdb, lake):
    ok(tierdb(["profile", "create", "--name", "a", "--warehouse", str(lake / "a"), "--default"]))
    assert [n for n, p in profiles(db).items() if p[3]] == ["a"]
    ok(tierdb(["profile", "create", "--name", "b", "--warehouse", str(lake / "b")]))
    assert [n for n, p in profiles(db).items() if p[3]] == ["a"]
    assert ok(tierdb("profile set-default --name b")) == "storage profile 'b' is the default now\n"
    assert [n for n, p in profiles(db).items() if p[3]] == ["b"]
    ok(tierdb("profile set-default --name default"))
    assert [n for n, p in profiles(db).items() if p[3]] == ["default"]
    # Setting the default again, or to a missing profile, leaves exactly one.
    ok(tierdb("profile set-default --name default"))
    fails(tierdb("profile set-default --name nope"), "storage profile 'nope' does not exist")
    assert [n for n, p in profiles(db).items() if p[3]] == ["default"]
    # The catalog itself refuses a second default row.
    err = db.error("UPDATE tierdb.storage_profiles SET is_default = true WHERE profile_name = 'a'")
    assert "storage_profiles_one_default" in err


def test_register_with_profile_and_drop_refused_while_used(db, tierdb, lake):
    db.psql(EVENTS_DDL)
    warehouse = lake / "elsewhere"
    ok(tierdb(["profile", "create", "--name", "other", "--warehouse", str(warehouse)]))
    out = ok(tierdb("register --table public.events --pk id --tier-key id --profile other"))
    location = str(warehouse / "public" / "events")
    assert location in out
    (row,) = db.query("SELECT storage_profile, lake_table_ref FROM tierdb.tables")
    assert row == ("other", location)
    assert (Path(location) / "metadata" / "v1.metadata.json").is_file()
    assert listed(tierdb)["other"]["tables"] == 1

    fails(tierdb("profile drop --name other"), "cannot drop storage profile 'other'",
          "used by 1 registered table (public.events); unregister it first")
    assert "other" in profiles(db)
    fails(tierdb("profile drop --name default"), "'default' is the default; make another one the default first")
    fails(tierdb("profile drop --name nope"), "storage profile 'nope' does not exist")
    fails(tierdb("register --table public.events --pk id --tier-key id --profile nope"),
          "storage profile 'nope' does not exist")

    ok(tierdb("unregister --table public.events"))
    assert ok(tierdb("profile drop --name other")) == "dropped storage profile 'other'\n"
    assert list(profiles(db)) == ["default"]


def test_register_uses_the_default_profile(db, tierdb, lake):
    db.psql(EVENTS_DDL)
    ok(tierdb(["profile", "create", "--name", "main", "--warehouse", str(lake / "main"), "--default"]))
    ok(tierdb("register --table public.events --pk id --tier-key id"))
    (row,) = db.query("SELECT storage_profile, lake_table_ref FROM tierdb.tables")
    assert row == ("main", str(lake / "main" / "public" / "events"))


def test_profile_commands_need_admin_rights(db, tierdb, lake):
    db.psql("CREATE ROLE profile_reader LOGIN")
    try:
        env = {"PGUSER": "profile_reader"}
        fails(tierdb(["profile", "create", "--name", "x", "--warehouse", str(lake)], env=env), "permission denied")
        db.psql("GRANT tierdb_admin TO profile_reader")
        ok(tierdb(["profile", "create", "--name", "x", "--warehouse", str(lake)], env=env))
        ok(tierdb("profile list", env=env))
        ok(tierdb("profile drop --name x", env=env))
    finally:
        db.psql("DROP OWNED BY profile_reader; DROP ROLE profile_reader")


def test_credentials_file_setting(db):
    """tierdb.credentials_file: a reload-time setting, relative to the data
    directory by default, that ordinary roles can neither set nor read."""
    assert db.query("SELECT setting, context FROM pg_settings WHERE name = 'tierdb.credentials_file'") == [
        ("tierdb_credentials", "sighup")]
    assert "cannot be changed now" in db.error("SET tierdb.credentials_file = '/tmp/x'")
    db.psql("CREATE ROLE creds_peeker LOGIN")
    try:
        err = db.error("SET ROLE creds_peeker; SHOW tierdb.credentials_file")
        assert "permission denied" in err or "must be superuser" in err, err
    finally:
        db.psql("DROP ROLE creds_peeker")
