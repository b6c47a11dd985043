#!/usr/bin/env bash
# Load benchmark of the release build with wrk, on SQLite and on PostgreSQL:
#   /health, GET /projects/:slug by JWT and by secret key, POST /projects.
# Usage: bench/run.sh [sqlite|postgres ...]   (env: DURATION=10s CONNS=32 THREADS=1)
# Prints a Markdown table of req/s and p50/p99 latency per endpoint and backend.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
CONNS=${CONNS:-32}
THREADS=${THREADS:-1}
PG_ADMIN=${CHURN_BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}
BACKENDS=("$@")
[ ${#BACKENDS[@]} -gt 0 ] || BACKENDS=(sqlite postgres)
command -v wrk >/dev/null || { echo "wrk is required (apt-get install wrk)" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq is required (apt-get install jq)" >&2; exit 1; }

cargo build --release -q -p churn-server
BIN=${CARGO_TARGET_DIR:-target}/release/churn-server

run_wrk() { # name url [wrk args...]
  local name=$1 url=$2; shift 2
  local out
  out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency "$@" "$url")
  local rps p50 p99 non2xx
  rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  non2xx=$(awk '/Non-2xx/ {print $5}' <<<"$out")
  printf '| %s | %s | %s | %s | %s | %s |\n' "$BACKEND" "$name" "$rps" "$p50" "$p99" "${non2xx:-0}"
}

echo "| backend | endpoint | req/s | p50 | p99 | non-2xx |"
echo "|---|---|---|---|---|---|"
for BACKEND in "${BACKENDS[@]}"; do
  WORK=$(mktemp -d)
  DBNAME=""
  if [ "$BACKEND" = postgres ]; then
    DBNAME="churn_bench_$$"
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
  SECRET=$(curl -sf -X POST "$API/auth/onboarding" -H "authorization: Bearer $TOKEN" | jq -r .data.api_keys.secret_key)

  run_wrk "GET /health" "http://$ADDR/health"
  run_wrk "GET /projects/:slug (JWT)" "$API/projects/default" -H "Authorization: Bearer $TOKEN"
  run_wrk "GET /projects/:slug (secret key)" "$API/projects/default" -H "X-API-Key: $SECRET"
  run_wrk "POST /projects (JWT)" "$API/projects" -H "Authorization: Bearer $TOKEN" -s bench/post_project.lua

  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
  [ -n "$DBNAME" ] && psql "$PG_ADMIN" -qc "DROP DATABASE $DBNAME WITH (FORCE)" >/dev/null
  rm -rf "$WORK"
done
