# Shared by the benchmark scripts: settings, the release build, a server per backend on a
# fresh database, and wrk rows for the Markdown tables. Source it; do not run it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DURATION=${DURATION:-10s}
CONNS=${CONNS:-32}
THREADS=${THREADS:-1}
PG_ADMIN=${CHURN_BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}
for tool in wrk jq curl psql; do
  command -v $tool >/dev/null || { echo "$tool is required (apt-get install $tool)" >&2; exit 1; }
done
# BENCH_BIN: an already built server instead of the release build (a quick look, not a figure).
if [ -n "${BENCH_BIN:-}" ]; then
  BIN=$BENCH_BIN
else
  cargo build --release -q -p churn-server
  BIN=${CARGO_TARGET_DIR:-target}/release/churn-server
fi

# row <name> <url> [wrk args…]: one table row with req/s, p50, p99 and non-2xx answers.
row() {
  local name=$1 url=$2; shift 2
  local out
  out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency "$@" "$url")
  printf '| %s | %s | %s | %s | %s | %s |\n' "$BACKEND" "$name" \
    "$(awk '/^Requests\/sec/ {print $2}' <<<"$out")" "$(awk '$1=="50%" {print $2}' <<<"$out")" \
    "$(awk '$1=="99%" {print $2}' <<<"$out")" "$(awk '/Non-2xx/ {n=$5} END {print n+0}' <<<"$out")"
}

# start_server <sqlite|postgres>: a release server on a fresh database with rate limits off
# and a signed-up user. BENCH_LOG: its log filter (keep `churn_server=info`, which says the address;
# `sqlx::query=debug` logs every statement
# with its time); BENCH_KEEP_LOG=<path>: its log is kept as <path>.<backend>.
# BENCH_REUSE=<dir>: a database kept from an earlier run is used instead of a fresh one
# (SQLite: <dir>/churn.db with its encryption.key, copied in; PostgreSQL: the database named in
# <dir>/postgres, kept, with its key <dir>/postgres.key). Sets WORK, DB, DBNAME, REUSED, SERVER, ADDR, API and TOKEN.
start_server() {
  WORK=$(mktemp -d)
  DBNAME=""
  REUSED=""
  if [ "$1" = postgres ]; then
    if [ -n "${BENCH_REUSE:-}" ] && [ -f "$BENCH_REUSE/postgres" ]; then
      REUSED=$(cat "$BENCH_REUSE/postgres")
      DB="${PG_ADMIN%/*}/$REUSED"
      cp "$BENCH_REUSE/postgres.key" "$WORK/encryption.key"
    else
      DBNAME="churn_bench_$$_$RANDOM"
      psql "$PG_ADMIN" -qc "CREATE DATABASE $DBNAME" >/dev/null
      DB="${PG_ADMIN%/*}/$DBNAME"
    fi
  else
    DB="sqlite://$WORK/churn.db"
    if [ -n "${BENCH_REUSE:-}" ] && [ -f "$BENCH_REUSE/churn.db" ]; then
      REUSED=$BENCH_REUSE/churn.db
      cp "$BENCH_REUSE/churn.db" "$WORK/churn.db"
      cp "$BENCH_REUSE/encryption.key" "$WORK/encryption.key"
    fi
  fi
  CHURN_BIND=127.0.0.1:0 CHURN_DATABASE_URL="$DB" CHURN_DATA_DIR="$WORK" CHURN_RATE_LIMITS=off \
    CHURN_LOG="${BENCH_LOG:-warn,churn_server=info}" CHURN_LOG_FORMAT=json "$BIN" 2>"$WORK/server.log" &
  SERVER=$!
  ADDR=""
  for _ in $(seq 1 100); do
    ADDR=$(grep -o '"address":"[^"]*"' "$WORK/server.log" | head -n 1 | cut -d'"' -f4 || true)
    [ -n "$ADDR" ] && break
    sleep 0.1
  done
  [ -n "$ADDR" ] || { cat "$WORK/server.log" >&2; exit 1; }
  API="http://$ADDR/api/v1"
  if [ -n "$REUSED" ]; then
    TOKEN=$(curl -sf "$API/auth/login" -H 'content-type: application/json' \
      -d '{"email":"bench@example.com","password":"benchmark password"}' | jq -r .data.token)
  else
    TOKEN=$(curl -sf "$API/auth/register" -H 'content-type: application/json' \
      -d '{"name":"Bench","email":"bench@example.com","password":"benchmark password"}' | jq -r .data.token)
  fi
}

# keep_database: with BENCH_REUSE set, keeps the fresh database just filled for the next run
# (the server is stopped first: the SQLite copy is taken at rest).
keep_database() {
  [ -n "${BENCH_REUSE:-}" ] && [ -z "$REUSED" ] || return 0
  mkdir -p "$BENCH_REUSE"
  # The secrets in the database are sealed with the data folder's key: kept beside it.
  if [ -n "$DBNAME" ]; then
    echo "$DBNAME" >"$BENCH_REUSE/postgres"
    cp "$WORK/encryption.key" "$BENCH_REUSE/postgres.key"
    DBNAME=""
  else
    cp "$WORK/churn.db" "$BENCH_REUSE/churn.db"
    cp "$WORK/encryption.key" "$BENCH_REUSE/encryption.key"
  fi
}

stop_server() {
  kill "$SERVER"
  wait "$SERVER" 2>/dev/null || true
  keep_database
  if [ -n "$DBNAME" ]; then psql "$PG_ADMIN" -qc "DROP DATABASE $DBNAME WITH (FORCE)" >/dev/null; fi
  if [ -n "${BENCH_KEEP_LOG:-}" ]; then cp "$WORK/server.log" "$BENCH_KEEP_LOG.$BACKEND"; fi
  rm -rf "$WORK"
}

BACKENDS=("$@")
[ ${#BACKENDS[@]} -gt 0 ] || BACKENDS=(sqlite postgres)
