#!/usr/bin/env python3
"""The Stream Load benchmark: rows/s of Stream Load (POST /api/load, JSON
lines, docs/stream-load.md) against COPY of the same rows into a plain
table with the same shape, both over TCP to 127.0.0.1, at 1, 4 and 16
concurrent clients.

    stream_load.py [--rows N] [--batch B] [--clients 1,4,16] [--cold-share F] [--repeat R] [--dir DIR] [--bin build/tierdb]

In one run: a private PostgreSQL 15 cluster (bench/seam_reads.py's
settings), `events` (the tiering benchmark's shape, daily partitions)
registered with TierDB and tiered so that T sits before the last two days,
and `plain`, the same table unregistered. A daemon serves Stream Load with
TIERDB_LOAD_THREADS = the most clients. For each client count C, N new rows
are split among C clients; each client sends its share in requests of B
rows (Stream Load) or COPY statements of B rows (the peer), each request or
COPY its own transaction, timed from the first client's start to the last
one's end. --cold-share puts that share of the rows below T (they then go
to the delta when a request holds at most TIERDB_LOAD_DELTA_ROWS of them,
else to the lake). After each run both tables are counted: each must hold
exactly the rows sent. Best of R runs.

This is a measurement, not a test: nothing asserts a timing. It exits 1 if
a load fails or either table holds other than what was sent.
"""

import argparse
import datetime as dt
import http.client
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiering_peer  # noqa: E402
from seam_reads import SETTINGS  # noqa: E402

# Routed rows hold a lock each until their load commits (docs/stream-load.md): 16 loads of 5,000 rows need 80,000.
LOCK_SETTINGS = ["max_locks_per_transaction=1024"]
from tiering_peer import TOP, clean_env, fail, free_port, positive_int  # noqa: E402

DEFAULT_ROWS = 20_000
DAYS = 6
BASE = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
TOKEN = "stream-load-bench-token-0123456789abcdef"
COLUMNS = ("id", "ts", "device_id", "value", "event", "user")


def say(message):
    print(f"stream-load-bench: {message}", flush=True)


def make_tables(conn):
    conn.execute("SET TimeZone = 'UTC'")
    conn.execute("CREATE EXTENSION IF NOT EXISTS tierdb")
    for table in ("events", "plain"):
        conn.execute(f'CREATE TABLE {table} (id bigint NOT NULL, ts timestamptz NOT NULL, device_id int NOT NULL,'
                     f' value float8 NOT NULL, event text NOT NULL, "user" text) PARTITION BY RANGE (ts)')
        for d in range(DAYS):
            lo, hi = BASE + dt.timedelta(days=d), BASE + dt.timedelta(days=d + 1)
            conn.execute(f"CREATE TABLE {table}_{d} PARTITION OF {table} FOR VALUES FROM ('{lo}') TO ('{hi}')")
        # a row a day, so that tiering has partitions to move
        conn.execute(f"INSERT INTO {table} SELECT -d, timestamptz '{BASE}' + d * interval '1 day', 0, 0, 'seed', NULL"
                     f" FROM generate_series(0, {DAYS - 1}) d")


def rows_for(first_id, n, cold_share):
    """n rows with ids from first_id: the cold share on days 0-2 (below T), the rest on days 4-5 (hot)."""
    out = []
    cold = int(n * cold_share)
    for i in range(n):
        day = (i % 3) if i < cold else 4 + (i % 2)
        ts = BASE + dt.timedelta(days=day, microseconds=(i * 7919) % 86_400_000_000)
        out.append((first_id + i, ts.isoformat(), i % 10000, (i % 100000) / 100.0, "click",
                    None if i % 3 else f"user-{i}"))
    return out


def jsonl(rows):
    return "".join(json.dumps(dict(zip(COLUMNS, r))) + "\n" for r in rows).encode()


def copy_text(rows):
    lines = []
    for id_, ts, device, value, event, user in rows:
        lines.append(f"{id_}\t{ts}\t{device}\t{value}\t{event}\t{user if user is not None else chr(92) + 'N'}\n")
    return "".join(lines)


def run_clients(n_clients, work_of):
    """Runs work_of(i) in n_clients threads; (seconds, first error or None)."""
    errors = []

    def run(i):
        try:
            work_of(i)
        except Exception as e:  # reported after the run
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n_clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start, (errors[0] if errors else None)


def stream_load_client(port, batches):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    for label, body in batches:
        conn.request("POST", "/api/load/public.events", body,
                     {"Authorization": f"Bearer {TOKEN}", "X-TierDB-Label": label,
                      "Content-Type": "application/x-ndjson"})
        resp = conn.getresponse()
        answer = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"load {label}: {resp.status} {answer[:500]!r}")
        if resp.getheader("Connection", "").lower() == "close":
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.close()


def copy_client(dsn, chunks):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        for text in chunks:
            with conn.cursor() as cur, cur.copy('COPY plain (id, ts, device_id, value, event, "user") FROM STDIN') as cp:
                cp.write(text)


def measure(args, work, dsn, port):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        make_tables(conn)
    env = clean_env(TIERDB_PG_URL=dsn, TIERDB_WAREHOUSE=str(work / "lake"), TIERDB_TIERING_LAG="1d")
    reg = subprocess.run([args.bin, "register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"],
                         env=env, capture_output=True, text=True)
    if reg.returncode != 0:
        fail(f"tierdb register failed:\n{reg.stderr}")
    once = subprocess.run([args.bin, "run", "--once"], env=env, capture_output=True, text=True)
    if once.returncode != 0:
        fail(f"tierdb run --once failed:\n{once.stderr}")
    with psycopg.connect(dsn) as conn:
        t = conn.execute("SELECT to_timestamp(tier_key_hi / 1e6) FROM tierdb.cutline").fetchone()[0]
    say(f"T is {t}; loads are {1 - args.cold_share:.0%} hot rows, {args.cold_share:.0%} below T")

    load_port = free_port()
    most = max(args.clients)
    log = open(work / "daemon.err", "w")
    daemon = subprocess.Popen([args.bin, "run"], env={**env, "TIERDB_LOAD_TOKEN": TOKEN,
                                                     "TIERDB_LOAD_PORT": str(load_port),
                                                     "TIERDB_LOAD_THREADS": str(most),
                                                     "TIERDB_CYCLE_INTERVAL_SECONDS": "86400"},
                              stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", load_port, timeout=5)
                c.request("GET", "/api/load/public.events")
                c.getresponse().read()
                break
            except OSError:
                if daemon.poll() is not None or time.monotonic() > deadline:
                    fail(f"the Stream Load endpoint did not come up; see {work / 'daemon.err'}")
                time.sleep(0.1)

        next_id = 1_000_000
        results = []
        for clients in args.clients:
            best = {"stream_load": None, "copy": None}
            for r in range(args.repeat):
                per_client = args.rows // clients
                for side in ("stream_load", "copy"):
                    first = next_id
                    next_id += per_client * clients
                    work_items = []
                    for i in range(clients):
                        rows = rows_for(first + i * per_client, per_client, args.cold_share)
                        chunks = [rows[k:k + args.batch] for k in range(0, len(rows), args.batch)]
                        if side == "stream_load":
                            work_items.append([(f"c{clients}-r{r}-{i}-{k}", jsonl(ch)) for k, ch in enumerate(chunks)])
                        else:
                            work_items.append([copy_text(ch) for ch in chunks])
                    if side == "stream_load":
                        seconds, error = run_clients(clients, lambda i: stream_load_client(load_port, work_items[i]))
                        table = "events"
                    else:
                        seconds, error = run_clients(clients, lambda i: copy_client(dsn, work_items[i]))
                        table = "plain"
                    if error is not None:
                        fail(f"{side} with {clients} clients: {error}")
                    with psycopg.connect(dsn) as conn:
                        got = conn.execute(f"SELECT count(*) FROM {table} WHERE id >= %s AND id < %s",
                                           (first, first + per_client * clients)).fetchone()[0]
                    if got != per_client * clients:
                        fail(f"{side} with {clients} clients: {table} holds {got} of the {per_client * clients} rows sent")
                    rate = per_client * clients / seconds
                    if best[side] is None or rate > best[side]:
                        best[side] = rate
            results.append((clients, best["stream_load"], best["copy"]))
            say(f"{clients:>2} clients: Stream Load {best['stream_load']:>10,.0f} rows/s, COPY {best['copy']:>10,.0f}"
                f" rows/s, Stream Load / COPY = {best['stream_load'] / best['copy']:.3f}")
        return results
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
        log.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=positive_int, default=int(os.environ.get("BENCH_ROWS", DEFAULT_ROWS)))
    p.add_argument("--batch", type=positive_int, default=5000, help="rows per request or COPY (5000)")
    p.add_argument("--clients", default="1,4,16", help="client counts, comma-separated (1,4,16)")
    p.add_argument("--cold-share", type=float, default=0.0, help="share of rows below T (0)")
    p.add_argument("--repeat", type=positive_int, default=int(os.environ.get("BENCH_REPEAT", 3)))
    p.add_argument("--dir", default=os.environ.get("BENCH_DIR") or None,
                   help="keep the cluster, lake and logs in DIR/stream-load (default: a temporary directory)")
    p.add_argument("--bin", default=str(TOP / "build/tierdb"))
    args = p.parse_args()
    args.clients = [positive_int(c) for c in args.clients.split(",")]
    args.days = DAYS
    results = tiering_peer.run_in_private_cluster(args, "stream-load", SETTINGS + LOCK_SETTINGS,
                                                  lambda work, dsn, port: measure(args, work, dsn, port), say=say)
    print(json.dumps({"benchmark": "stream_load", "rows": args.rows, "batch": args.batch,
                      "cold_share": args.cold_share,
                      "results": [{"clients": c, "stream_load_rows_per_s": round(s), "copy_rows_per_s": round(p),
                                   "ratio": round(s / p, 4)} for c, s, p in results]}))


if __name__ == "__main__":
    main()
