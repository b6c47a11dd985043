#!/usr/bin/env bash
# Churn-event benchmark of the release build with wrk, on SQLite and on PostgreSQL:
# create-event throughput, and list latency on page 1 and on the last page for a project
# holding 100 events and one holding LARGE (default 1,000,000) events, seeded with SQL.
# Usage: bench/events.sh [sqlite|postgres ...]   (env: DURATION=10s CONNS=16 LARGE=1000000)
CONNS=${CONNS:-16}
LARGE=${LARGE:-1000000}
source "$(dirname "$0")/common.sh"

# seed_<backend> <database> <project id> <count>: <count> events, one second apart.
seed_sqlite() {
  sqlite_bulk "$1" <<SQL
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < $3)
INSERT INTO churn_events (id, project_id, customer_email, event_type, reason_code, mrr, currency, status, provider, created_at, updated_at)
SELECT printf('seed-%s-%08d', '$2', n), '$2', printf('c%d@example.com', n), 'cancellation', 'too_expensive', 4900, 'usd', 'new', 'api',
       strftime('%Y-%m-%dT%H:%M:%fZ', '2020-01-01', '+' || n || ' seconds'), strftime('%Y-%m-%dT%H:%M:%fZ', '2020-01-01', '+' || n || ' seconds')
FROM g;
SQL
}
seed_postgres() {
  pg_bulk "$1" churn_events <<SQL
INSERT INTO churn_events (id, project_id, customer_email, event_type, reason_code, mrr, currency, status, provider, created_at, updated_at)
SELECT 'seed-$2-' || lpad(n::text, 8, '0'), '$2', 'c' || n || '@example.com', 'cancellation', 'too_expensive', 4900, 'usd', 'new', 'api',
       to_char(timestamp '2020-01-01' + n * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
       to_char(timestamp '2020-01-01' + n * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
FROM generate_series(1, $3) n;
SQL
}

echo "| backend | request | req/s | p50 | p99 | non-2xx |"
echo "|---|---|---|---|---|---|"
for BACKEND in "${BACKENDS[@]}"; do
  start_server "$BACKEND"
  small_and_large "$LARGE"

  for p in small large; do
    n=${SIZE[$p]}
    last=$(( (n + 19) / 20 ))
    row "list $p ($n events), page 1" "$API/projects/$p/churn-events" -H "X-API-Key: ${KEY[$p]}"
    row "list $p ($n events), page $last (last)" "$API/projects/$p/churn-events?page=$last" -H "X-API-Key: ${KEY[$p]}"
  done
  row "create event" "$API/projects/small/churn-events" -H "X-API-Key: ${KEY[small]}" -s bench/create_event.lua

  stop_server
done
