#!/usr/bin/env bash
# Churn-event benchmark of the release build with wrk, on SQLite and on PostgreSQL:
# create-event throughput, and list latency on page 1 and on the last page for a project
# holding 100 events and one holding LARGE (default 1,000,000) events, seeded with SQL.
# Usage: bench/events.sh [sqlite|postgres ...]   (env: DURATION=10s CONNS=16 LARGE=1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
CONNS=${CONNS:-16}
LARGE=${LARGE:-1000000}
PG_ADMIN=${CHURN_BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}
BACKENDS=("$@")
[ ${#BACKENDS[@]} -gt 0 ] || BACKENDS=(sqlite postgres)
for tool in wrk jq sqlite3 psql; do command -v $tool >/dev/null || { echo "$tool is required" >&2; exit 1; }; done

cargo build --release -q -p churn-server
BIN=${CARGO_TARGET_DIR:-target}/release/churn-server

row() { # name url [wrk args...]
  local name=$1 url=$2; shift 2
  local out
  out=$(wrk -t1 -c"$CONNS" -d"$DURATION" --latency "$@" "$url")
  printf '| %s | %s | %s | %s | %s | %s |\n' "$BACKEND" "$name" \
    "$(awk '/^Requests\/sec/ {print $2}' <<<"$out")" "$(awk '$1=="50%" {print $2}' <<<"$out")" \
    "$(awk '$1=="99%" {print $2}' <<<"$out")" "$(awk '/Non-2xx/ {print $5}' <<<"$out" | sed 's/^$/0/')"
}

# seed_sql <project id> <count>: INSERT … SELECT of <count> events, one second apart.
seed_sqlite() {
  sqlite3 "$1" <<SQL
PRAGMA busy_timeout = 10000;
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < $3)
INSERT INTO churn_events (id, project_id, customer_email, event_type, reason_code, mrr, currency, status, provider, created_at, updated_at)
SELECT printf('seed-%s-%08d', '$2', n), '$2', printf('c%d@example.com', n), 'cancellation', 'too_expensive', 4900, 'usd', 'new', 'api',
       strftime('%Y-%m-%dT%H:%M:%fZ', '2020-01-01', '+' || n || ' seconds'), strftime('%Y-%m-%dT%H:%M:%fZ', '2020-01-01', '+' || n || ' seconds')
FROM g;
SQL
}
seed_postgres() {
  # One transaction updating one count row a million times is quadratic in PostgreSQL (every
  # update adds a row version), so the bulk load counts once at the end instead.
  psql -q "$1" <<SQL
ALTER TABLE churn_events DISABLE TRIGGER churn_events_counted;
INSERT INTO churn_events (id, project_id, customer_email, event_type, reason_code, mrr, currency, status, provider, created_at, updated_at)
SELECT 'seed-$2-' || lpad(n::text, 8, '0'), '$2', 'c' || n || '@example.com', 'cancellation', 'too_expensive', 4900, 'usd', 'new', 'api',
       to_char(timestamp '2020-01-01' + n * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
       to_char(timestamp '2020-01-01' + n * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
FROM generate_series(1, $3) n;
ALTER TABLE churn_events ENABLE TRIGGER churn_events_counted;
INSERT INTO churn_event_counts (project_id, status, event_type, n, mrr_sum)
SELECT project_id, status, event_type, COUNT(*), SUM(mrr) FROM churn_events WHERE project_id = '$2' GROUP BY 1, 2, 3;
ANALYZE churn_events;
SQL
}

echo "| backend | request | req/s | p50 | p99 | non-2xx |"
echo "|---|---|---|---|---|---|"
for BACKEND in "${BACKENDS[@]}"; do
  WORK=$(mktemp -d)
  DBNAME=""
  if [ "$BACKEND" = postgres ]; then
    DBNAME="churn_bench_events_$$"
    psql "$PG_ADMIN" -qc "CREATE DATABASE $DBNAME" >/dev/null
    DB="${PG_ADMIN%/*}/$DBNAME"
  else
    DB="sqlite://$WORK/churn.db"
  fi
  CHURN_BIND=127.0.0.1:0 CHURN_DATABASE_URL="$DB" CHURN_DATA_DIR="$WORK" CHURN_RATE_LIMITS=off \
    CHURN_LOG="warn,churn_server=info" CHURN_LOG_FORMAT=json "$BIN" 2>"$WORK/server.log" &
  SERVER=$!
  ADDR=""
  for _ in $(seq 1 100); do
    ADDR=$(grep -o '"address":"[^"]*"' "$WORK/server.log" | head -n 1 | cut -d'"' -f4 || true)
    [ -n "$ADDR" ] && break
    sleep 0.1
  done
  API="http://$ADDR/api/v1"
  TOKEN=$(curl -sf "$API/auth/register" -H 'content-type: application/json' \
    -d '{"name":"Bench","email":"bench@example.com","password":"benchmark password"}' | jq -r .data.token)
  declare -A KEY ID
  for p in small large; do
    RESP=$(curl -sf "$API/projects" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d "{\"name\":\"$p\"}")
    KEY[$p]=$(jq -r .data.api_keys.secret_key <<<"$RESP")
    ID[$p]=$(jq -r .data.id <<<"$RESP")
  done
  for p in small large; do
    n=100; [ $p = large ] && n=$LARGE
    if [ "$BACKEND" = postgres ]; then seed_postgres "$DB" "${ID[$p]}" "$n"; else seed_sqlite "$WORK/churn.db" "${ID[$p]}" "$n"; fi
  done

  for p in small large; do
    n=100; [ $p = large ] && n=$LARGE
    last=$(( (n + 19) / 20 ))
    row "list $p ($n events), page 1" "$API/projects/$p/churn-events" -H "X-API-Key: ${KEY[$p]}"
    row "list $p ($n events), page $last (last)" "$API/projects/$p/churn-events?page=$last" -H "X-API-Key: ${KEY[$p]}"
  done
  row "create event" "$API/projects/small/churn-events" -H "X-API-Key: ${KEY[small]}" -s bench/create_event.lua

  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
  [ -n "$DBNAME" ] && psql "$PG_ADMIN" -qc "DROP DATABASE $DBNAME WITH (FORCE)" >/dev/null
  rm -rf "$WORK"
done
