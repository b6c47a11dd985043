#!/usr/bin/env bash
# Instructions the server spends per request, counted by valgrind's callgrind: repeatable for
# one binary whatever else the machine is doing, so two builds can be compared on a busy
# machine where req/s cannot. Counts /health and GET /projects/:slug by JWT and by secret key;
# the background work of an idle server over the same wall time (job polling) is subtracted.
#
#   bench/instructions.sh [sqlite|postgres ...]      (env: N=300 requests each; BIN=a binary
#                                                    to measure instead of this tree's release build)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-300}
PG_ADMIN=${CHURN_BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}
for tool in valgrind callgrind_control jq curl psql; do
  command -v $tool >/dev/null || { echo "$tool is required" >&2; exit 1; }
done
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p churn-server
  BIN=${CARGO_TARGET_DIR:-target}/release/churn-server
fi
BACKENDS=("$@")
[ ${#BACKENDS[@]} -gt 0 ] || BACKENDS=(sqlite postgres)

echo "| backend | request | instructions / request |"
echo "|---|---|---|"
for BACKEND in "${BACKENDS[@]}"; do
  WORK=$(mktemp -d)
  DBNAME=""
  if [ "$BACKEND" = postgres ]; then
    DBNAME="churn_instr_$$_$RANDOM"
    psql "$PG_ADMIN" -qc "CREATE DATABASE $DBNAME" >/dev/null
    DB="${PG_ADMIN%/*}/$DBNAME"
  else
    DB="sqlite://$WORK/churn.db"
  fi
  PORT=$((20000 + RANDOM % 20000))
  CHURN_BIND=127.0.0.1:$PORT CHURN_DATABASE_URL="$DB" CHURN_DATA_DIR="$WORK" CHURN_RATE_LIMITS=off \
    CHURN_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.%p" "$BIN" >"$WORK/server.log" 2>&1 &
  VG=$!
  for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break; sleep 0.5; done
  API="http://127.0.0.1:$PORT/api/v1"
  TOKEN=$(curl -sf "$API/auth/register" -H 'content-type: application/json' \
    -d '{"name":"Bench","email":"bench@example.com","password":"benchmark password"}' | jq -r .data.token)
  SECRET=$(curl -sf -X POST "$API/auth/onboarding" -H "authorization: Bearer $TOKEN" | jq -r .data.api_keys.secret_key)
  total() { grep -h -m1 '^summary:' "$WORK"/cg.$VG.* | tail -n 1 | awk '{print $2}'; }
  # measure <name> <curl args…>: instructions and seconds for N requests (after 5 warm-ups).
  measure() {
    local name=$1; shift
    for _ in 1 2 3 4 5; do curl -s -o /dev/null "$@"; done
    rm -f "$WORK"/cg.$VG.*; callgrind_control -z $VG >/dev/null 2>&1
    local start=$(date +%s.%N)
    if [ "$name" = idle ]; then sleep 20; else for _ in $(seq 1 "$N"); do curl -s -o /dev/null "$@"; done; fi
    local secs=$(echo "$(date +%s.%N) - $start" | bc)
    callgrind_control -d $VG >/dev/null 2>&1
    echo "$(total) $secs"
  }
  read -r idle idle_secs <<<"$(measure idle "http://127.0.0.1:$PORT/health")"
  for spec in "GET /health|http://127.0.0.1:$PORT/health" \
              "GET /projects/:slug (JWT)|$API/projects/default|authorization: Bearer $TOKEN" \
              "GET /projects/:slug (secret key)|$API/projects/default|X-API-Key: $SECRET"; do
    IFS='|' read -r name url header <<<"$spec"
    args=("$url"); [ -n "$header" ] && args+=(-H "$header")
    read -r count secs <<<"$(measure req "${args[@]}")"
    echo "| $BACKEND | $name | $(echo "($count - $idle * $secs / $idle_secs) / $N" | bc) |"
  done
  kill $VG; wait $VG 2>/dev/null || true
  if [ -n "$DBNAME" ]; then psql "$PG_ADMIN" -qc "DROP DATABASE $DBNAME WITH (FORCE)" >/dev/null; fi
  rm -rf "$WORK"
done
