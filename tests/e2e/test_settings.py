"""The SPEC §7 settings of hybrid reads of mirrored tables:
tierdb.mirrored_reads, tierdb.mirror_wait_ms and tierdb.hybrid_lag (what
they do: test_hybrid_reads.py; tierdb.transparent_writes:
test_transparent_inserts.py).

SHOW gives the SPEC default, any role can SET them in its session and per
database, values of the wrong type or out of range are refused as for any
setting, and each one's description says what it does for a hybrid read.
"""

from __future__ import annotations

import pytest

# name: (pg_settings.vartype, SHOW of the default, pg_settings.setting of the default, a value to set, SHOW of it, a bad value)
HYBRID_SETTINGS = {
    "tierdb.mirrored_reads": ("enum", "heap", "heap", "hybrid", "hybrid", "mirror"),
    "tierdb.mirror_wait_ms": ("integer", "5s", "5000", "250", "250ms", "-1"),
    "tierdb.hybrid_lag": ("integer", "0", "0", "86400", "86400", "-5"),
}


@pytest.mark.parametrize("name", sorted(HYBRID_SETTINGS))
def test_setting_is_defined_with_its_default(db, name):
    vartype, shown, setting, *_ = HYBRID_SETTINGS[name]
    assert db.query(f"SHOW {name}") == [(shown,)]
    row = db.query(f"SELECT vartype, context, boot_val, setting, short_desc FROM pg_settings WHERE name = '{name}'")
    assert row and row[0][:4] == (vartype, "user", setting, setting)
    assert "hybrid" in row[0][4], row[0][4]


def test_mirrored_reads_offers_heap_and_hybrid(db):
    assert db.query("SELECT enumvals FROM pg_settings WHERE name = 'tierdb.mirrored_reads'") == [("{heap,hybrid}",)]


@pytest.mark.parametrize("name", sorted(HYBRID_SETTINGS))
def test_any_role_sets_the_setting(db, name):
    value, shown = HYBRID_SETTINGS[name][3:5]
    role = "settings_user_" + name.split(".")[1]
    db.psql(f"CREATE ROLE {role} LOGIN")
    try:
        out = db.query(f"SET ROLE {role}; SET {name} = '{value}'; SHOW {name}")
        assert out == [(shown,)]
        # per database too, as a configuration would (each query is a new session)
        db.psql(f"ALTER DATABASE \"{db}\" SET {name} = '{value}'")
        assert db.query(f"SHOW {name}") == [(shown,)]
        db.psql(f"ALTER DATABASE \"{db}\" RESET {name}")
        assert db.query(f"SHOW {name}") == [(HYBRID_SETTINGS[name][1],)]
    finally:
        db.psql(f"ALTER DATABASE \"{db}\" RESET {name}; DROP ROLE {role}")


@pytest.mark.parametrize("name", sorted(HYBRID_SETTINGS))
def test_a_bad_value_is_refused(db, name):
    bad = HYBRID_SETTINGS[name][5]
    err = db.error(f"SET {name} = '{bad}'")
    assert "22023" in err and name in err, err
