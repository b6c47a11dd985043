"""The SQLite floor of POST /track: the writer's own statements (JSON rows through json_each,
as crates/churn-core/src/store/{behavior,customers}.rs send them) for batches of 100 events
shaped as bench/track_batch.lua's, 30 batches a transaction, timed per statement kind. Python's
sqlite3 module is C: no HTTP, no JSON parsing of requests, no thread hand-offs.

Usage: track_floor.py <database file> <project id> <all|events> [events]
"""
import json
import sqlite3
import sys
import time

path, project, mode = sys.argv[1], sys.argv[2], sys.argv[3]
total = int(sys.argv[4]) if len(sys.argv) > 4 else 300_000
BATCH, PER_TX = 100, 30

EVENTS = """INSERT INTO behavior_events (project_id, id, customer_email, event, properties,
 occurred_at, received_at, duration_seconds, feature, category, nps_score, expires_at)
 SELECT ?1, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4,
 j.value ->> 5, CAST(j.value ->> 6 AS DOUBLE PRECISION), j.value ->> 7, j.value ->> 8,
 CAST(j.value ->> 9 AS INTEGER), j.value ->> 10 FROM json_each(?2) AS j
 WHERE true ON CONFLICT (project_id, id) DO NOTHING RETURNING id"""
ROLLUPS = """INSERT INTO behavior_daily (project_id, customer_email, day, event, detail, n)
 SELECT ?1, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3,
 CAST(j.value ->> 4 AS BIGINT) FROM json_each(?2) AS j
 WHERE true ON CONFLICT (project_id, customer_email, day, event, detail)
 DO UPDATE SET n = behavior_daily.n + excluded.n"""


def widen(col, first):
    cmp = "<" if first else ">"
    return (f"{col} = CASE WHEN customers.{col} IS NULL OR excluded.{col} {cmp} customers.{col} "
            f"THEN excluded.{col} ELSE customers.{col} END")


def newer(value, at):
    return (f"{value} = CASE WHEN excluded.{at} IS NOT NULL AND (customers.{at} IS NULL OR "
            f"excluded.{at} >= customers.{at}) THEN excluded.{value} ELSE customers.{value} END")


CUSTOMERS = """INSERT INTO customers (project_id, email, first_seen_at, last_seen_at, first_event_at,
 last_event_at, nps_score, nps_at, card_expires_at, card_expiry_at)
 SELECT ?1, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 1, j.value ->> 2,
 CAST(j.value ->> 3 AS INTEGER), j.value ->> 4, j.value ->> 5, j.value ->> 6 FROM json_each(?2) AS j
 WHERE true ON CONFLICT (project_id, email) DO UPDATE SET """ + ", ".join(
    [widen("first_seen_at", True), widen("last_seen_at", False), widen("first_event_at", True),
     widen("last_event_at", False), newer("nps_score", "nps_at"),
     newer("card_expires_at", "card_expiry_at"), newer("nps_at", "nps_at"),
     newer("card_expiry_at", "card_expiry_at")])

db = sqlite3.connect(path, isolation_level=None)
for pragma in ("journal_mode = WAL", "synchronous = NORMAL", "busy_timeout = 5000", "foreign_keys = ON"):
    db.execute(f"PRAGMA {pragma}")
spent = {"events": 0.0, "rollups": 0.0, "customers": 0.0, "commit": 0.0}
start = time.time()
n = 0
while n < total:
    db.execute("BEGIN")
    for _ in range(PER_TX):
        events, rollups, customers = [], [], []
        for i in range(BATCH):
            c = n % 100_000
            at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start + n / 1000)) + ".000Z"
            if i % 3 == 0:
                name, props, detail, duration, feature = "login", {"duration_seconds": 30 + n % 600}, "", 30.0 + n % 600, None
            else:
                name, props, detail, duration, feature = "feature_used", {"feature": f"f{n % 8}"}, f"f{n % 8}", None, f"f{n % 8}"
            email = f"u{c}@example.com"
            events.append([f"b0-{n}", email, name, json.dumps(props), at, at, duration, feature, None, None, None])
            rollups.append([email, at[:10], name, detail, 1])
            customers.append([email, at, at, None, None, None, None])
            n += 1
        events.sort()
        rollups.sort()
        customers.sort()
        t = time.perf_counter()
        db.execute(EVENTS, (project, json.dumps(events))).fetchall()
        spent["events"] += time.perf_counter() - t
        if mode == "all":
            t = time.perf_counter()
            db.execute(ROLLUPS, (project, json.dumps(rollups)))
            spent["rollups"] += time.perf_counter() - t
            t = time.perf_counter()
            db.execute(CUSTOMERS, (project, json.dumps(customers)))
            spent["customers"] += time.perf_counter() - t
    t = time.perf_counter()
    db.execute("COMMIT")
    spent["commit"] += time.perf_counter() - t
per_event = sum(spent.values()) / n
parts = ", ".join(f"{k} {v / n * 1e6:.1f}" for k, v in spent.items() if v)
print(f"| sqlite | {mode} | {n:,} | {per_event * 1e6:.1f} µs ({parts}) | {1 / per_event:,.0f} |")
