# Shared by the benchmark scripts: settings, the release build, a server per backend on a
# fresh database, and wrk rows for the Markdown tables. Source it; do not run it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DURATION=${DURATION:-10s}
CONNS=${CONNS:-32}
THREADS=${THREADS:-1}
PG_ADMIN=${CHURN_BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}
# require <tool>…: stops unless each is installed.
require() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "$tool is required (apt-get install $tool)" >&2; exit 1; }
  done
}
require wrk jq curl psql
# BENCH_BIN: an already built server instead of the release build (a quick look, not a figure).
if [ -n "${BENCH_BIN:-}" ]; then
  BIN=$BENCH_BIN
else
  cargo build --release -q -p churn-server
  BIN=${CARGO_TARGET_DIR:-target}/release/churn-server
fi
# BENCH_CLI: likewise for the CLI, which rebuilds the kept counts after a seed.
if [ -n "${BENCH_CLI:-}" ]; then
  CLI=$BENCH_CLI
else
  cargo build --release -q -p churn-cli
  CLI=${CARGO_TARGET_DIR:-target}/release/churn
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

# percentiles: `<p50> ms | <p99> ms` of the times in seconds on stdin, one a line.
percentiles() {
  sort -n | awk '{t[NR]=$1} END {printf "%.1f ms | %.1f ms", t[int(NR*0.5)]*1000, t[int(NR*0.99)]*1000}'
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

# new_projects <name>…: a project of each name; its secret key in KEY[<name>], its id in ID[<name>].
new_projects() {
  declare -gA KEY ID
  local name resp
  for name in "$@"; do
    resp=$(curl -sf "$API/projects" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d "{\"name\":\"$name\"}")
    KEY[$name]=$(jq -r .data.api_keys.secret_key <<<"$resp")
    ID[$name]=$(jq -r .data.id <<<"$resp")
  done
}

# seed <project id> <count>: the script's seed_<backend> on the running server's database, then
# every kept count rebuilt from the rows by `churn doctor --repair` (the rules' one home), so a
# seed writes only base rows and never the counts' own SQL.
seed() {
  if [ "$BACKEND" = postgres ]; then seed_postgres "$DB" "$@"; else seed_sqlite "$WORK/churn.db" "$@"; fi
  "$CLI" --database-url "$DB" --data-dir "$WORK" doctor --repair >/dev/null
  if [ "$BACKEND" = postgres ]; then psql -q "$DB" -c "VACUUM ANALYZE"; fi
}

# sqlite_bulk <database>: the SQL on stdin in one transaction, waiting out the server's writes.
sqlite_bulk() {
  require sqlite3
  { echo "PRAGMA busy_timeout = 10000;"; echo "BEGIN;"; cat; echo "COMMIT;"; } | sqlite3 "$1" >/dev/null
}

# pg_bulk <database> <table>…: the SQL on stdin in one transaction with the tables' triggers
# off: counting a bulk load row by row is quadratic on PostgreSQL (every update of a count row
# adds a row version); `seed` rebuilds the counts once after.
pg_bulk() {
  local db=$1 table
  shift
  {
    echo "BEGIN;"
    for table in "$@"; do echo "ALTER TABLE $table DISABLE TRIGGER USER;"; done
    cat
    for table in "$@"; do echo "ALTER TABLE $table ENABLE TRIGGER USER;"; done
    echo "COMMIT;"
  } | psql -q "$db"
}

# small_and_large <count>: projects `small` and `large` (see new_projects) seeded with 100 and
# <count> rows; SIZE[<name>] says how many.
small_and_large() {
  new_projects small large
  declare -gA SIZE=([small]=100 [large]=$1)
  local p
  for p in small large; do seed "${ID[$p]}" "${SIZE[$p]}"; done
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
