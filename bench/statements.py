#!/usr/bin/env python3
"""Sums the statements of a server log written with BENCH_LOG=warn,sqlx::query=debug: per
statement (its first words), how often, the time it took in all and the rows it touched."""
import collections
import json
import sys

totals = collections.defaultdict(lambda: [0, 0.0, 0])
for line in open(sys.argv[1]):
    if '"sqlx::query"' not in line:
        continue
    entry = json.loads(line)
    t = totals[entry.get("summary", "")[:70]]
    t[0] += 1
    t[1] += entry.get("elapsed_secs", 0)
    t[2] += entry.get("rows_affected", 0) + entry.get("rows_returned", 0)
print(f"{'seconds':>8} {'count':>7} {'rows':>9}  statement")
for summary, (n, secs, rows) in sorted(totals.items(), key=lambda kv: -kv[1][1])[:20]:
    print(f"{secs:8.3f} {n:7d} {rows:9d}  {summary}")
