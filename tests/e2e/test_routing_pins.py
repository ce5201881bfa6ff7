"""Read pins are their owner's, and their lifetime is capped (issue 16 items
12 and 14; extension/src/routing.c, tierdb.max_pin_ttl).

A pin holds off folding and snapshot expiry of its table, so no role may
hold one longer than tierdb.max_pin_ttl (a superuser's setting), and only
the role that took a pin (or a superuser) may end it.
"""

from __future__ import annotations

from test_routing import events, scalar  # noqa: F401 (fixture)


def test_a_pin_longer_than_the_cap_is_refused(events):
    db = events
    assert scalar(db, "SHOW tierdb.max_pin_ttl") == "1d"
    err = db.error("SELECT * FROM tierdb_read_begin('events', interval '100 years')")
    assert "ERROR:  22023: a read pin's ttl of 100 years is longer than tierdb.max_pin_ttl (86400 s)" in err, err
    assert "have a superuser raise tierdb.max_pin_ttl" in err, err
    err = db.error("SELECT * FROM tierdb_read_begin('events', interval '1 day 1 second')")
    assert "is longer than tierdb.max_pin_ttl" in err, err
    assert scalar(db, "SELECT count(*) FROM tierdb.read_pins") == "0"
    # the cap itself is allowed, and a superuser may raise it
    assert scalar(db, "SELECT expires_at - now() FROM tierdb_read_begin('events', interval '1 day')") == "1 day"
    assert scalar(db, "SET tierdb.max_pin_ttl = '2d';\n"
                      "SELECT expires_at - now() FROM tierdb_read_begin('events', interval '36 hours')") == "1 day 12:00:00"
    db.psql("DROP ROLE IF EXISTS tdb_pin_reader;\nCREATE ROLE tdb_pin_reader;\nGRANT SELECT ON events TO tdb_pin_reader;")
    try:
        err = db.error("SET ROLE tdb_pin_reader;\nSET tierdb.max_pin_ttl = '100d';")
        assert "ERROR:  42501: permission denied to set parameter \"tierdb.max_pin_ttl\"" in err, err
        err = db.error("SET ROLE tdb_pin_reader;\nSELECT * FROM tierdb_read_begin('events', interval '2 days')")
        assert "is longer than tierdb.max_pin_ttl" in err, err
    finally:
        db.psql("DROP OWNED BY tdb_pin_reader;\nDROP ROLE tdb_pin_reader;")


def test_only_the_owner_or_a_superuser_ends_a_pin(events):
    db = events
    roles = ["tdb_pin_a", "tdb_pin_b"]
    db.psql("".join(f"DROP ROLE IF EXISTS {r};\nCREATE ROLE {r};\nGRANT SELECT ON events TO {r};\n" for r in roles))
    try:
        pin_a = scalar(db, "SET ROLE tdb_pin_a;\nSELECT pin_id FROM tierdb_read_begin('events')")
        assert scalar(db, f"SELECT owner_role::regrole FROM tierdb.read_pins WHERE pin_id = {pin_a}") == "tdb_pin_a"
        # another role with the same privileges may not end it, and learns nothing of its table
        err = db.error(f"SET ROLE tdb_pin_b;\nSELECT tierdb_read_end({pin_a})")
        assert f"ERROR:  42501: read pin {pin_a} belongs to another role" in err, err
        assert scalar(db, f"SELECT count(*) FROM tierdb.read_pins WHERE pin_id = {pin_a}") == "1"
        err = db.error("SELECT tierdb.pin_table(1)")
        assert "function tierdb.pin_table(integer) does not exist" in err, err
        # a pin that does not exist is false for anyone
        assert scalar(db, "SET ROLE tdb_pin_b;\nSELECT tierdb_read_end(987654)") == "f"
        # the owner ends it; then it is gone
        assert scalar(db, f"SET ROLE tdb_pin_a;\nSELECT tierdb_read_end({pin_a})") == "t"
        assert scalar(db, f"SET ROLE tdb_pin_a;\nSELECT tierdb_read_end({pin_a})") == "f"
        # a superuser ends anyone's
        pin_b = scalar(db, "SET ROLE tdb_pin_b;\nSELECT pin_id FROM tierdb_read_begin('events')")
        assert scalar(db, f"SELECT tierdb_read_end({pin_b})") == "t"
        assert scalar(db, "SELECT count(*) FROM tierdb.read_pins") == "0"
    finally:
        db.psql("".join(f"DROP OWNED BY {r};\nDROP ROLE {r};\n" for r in roles))
