#!/usr/bin/env bash
# Every dashboard page of a project holding LARGE (default 1,000,000) churn events and
# CUSTOMERS (100,000) customers made by `churn demo seed`, beside a project with SMALL (100),
# on SQLite and on PostgreSQL, release build: the seed's time, the server time of each page
# (p50 and p95 of SAMPLES sequential requests, from the server's request log) and the
# overview's first load as a browser fetches it (the HTML and every asset it references,
# `Accept-Encoding: gzip, br`). Targets (decisions §17): p95 ≤ 200 ms per page on SQLite,
# first load ≤ 150 KB. A page not there yet (404) is reported as such.
# Usage: bench/dashboard.sh [sqlite|postgres ...]
#   (env: LARGE=1000000 CUSTOMERS=100000 SMALL=100 SAMPLES=20; BENCH_REUSE=<dir> keeps the
#   seeded databases there and times them again without seeding on the next run: a seed of
#   1,000,000 events takes about half an hour on two cores)
LARGE=${LARGE:-1000000}
CUSTOMERS=${CUSTOMERS:-100000}
SMALL=${SMALL:-100}
SAMPLES=${SAMPLES:-20}
# The request log's `finished processing request` lines carry each request's latency.
BENCH_LOG=${BENCH_LOG:-warn,churn_server=info,tower_http=info}
source "$(dirname "$0")/common.sh"
require sqlite3

# sql <query>: one value from the benchmark's database.
sql() {
  if [ "$BACKEND" = postgres ]; then psql -qtAX "$DB" -c "$1"; else sqlite3 "$WORK/churn.db" "$1"; fi
}

# seed <slug> <events> <customers>: prints the seconds the seed took.
seed() {
  local start=$SECONDS
  "$CLI" --database-url "$DB" --data-dir "$WORK" demo seed --project "$1" --events "$2" --customers "$3" >&2
  echo $((SECONDS - start))
}

# timing <path>: p50 and p95 server time of SAMPLES GETs of the signed-in page, or its status
# when it is not a 200.
timing() {
  local url="http://$ADDR$1" status before
  status=$(curl -s -o /dev/null -w '%{http_code}' -b "$JAR" "$url")
  [ "$status" = 200 ] || { printf '%s | -' "$status"; return; }
  before=$(wc -l <"$WORK/server.log")
  for _ in $(seq 1 "$SAMPLES"); do curl -sf -o /dev/null -b "$JAR" "$url"; done
  tail -n +"$((before + 1))" "$WORK/server.log" | jq -r 'select(.message == "finished processing request") | .latency' |
    awk '{print $1}' | sort -n | awk '{t[NR]=$1} END {printf "%d ms | %d ms", t[int((NR+1)*0.5)], t[int(NR*0.95+0.5)]}'
}

# first_load <path>: bytes on the wire for the page and every asset it references.
first_load() {
  local page total asset
  page=$(mktemp)
  total=$(curl -s -b "$JAR" -H 'Accept-Encoding: gzip, br' -o "$page" -w '%{size_download}' "http://$ADDR$1")
  for asset in $(curl -s -b "$JAR" "http://$ADDR$1" | grep -o '/app/assets/[^"]*' | sort -u); do
    total=$((total + $(curl -s -H 'Accept-Encoding: gzip, br' -o /dev/null -w '%{size_download}' "http://$ADDR$asset")))
  done
  rm -f "$page"
  echo "$total"
}

echo "| backend | project | page | p50 | p95 |"
echo "|---|---|---|---|---|"
for BACKEND in "${BACKENDS[@]}"; do
  start_server "$BACKEND"
  JAR="$WORK/cookies"
  if [ -z "$REUSED" ]; then
    for slug in large small; do
      curl -sf "$API/projects" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \
        -d "{\"name\":\"$slug\"}" >/dev/null
    done
    seconds=$(seed large "$LARGE" "$CUSTOMERS")
    seed small "$SMALL" 50 >/dev/null
    echo "seeded $LARGE events / $CUSTOMERS customers on $BACKEND in $seconds s" >&2
  else
    echo "reusing the seeded database $REUSED on $BACKEND" >&2
  fi
  # After a bulk load, as autovacuum would soon: the visibility map lets counts read the
  # covering indexes alone (index-only scans), and the statistics see the new rows.
  if [ "$BACKEND" = postgres ]; then psql -q "$DB" -c 'VACUUM (ANALYZE)'; fi
  curl -sf -o /dev/null -c "$JAR" --data-urlencode email=bench@example.com \
    --data-urlencode 'password=benchmark password' "http://$ADDR/app/sign-in"
  for slug in large small; do
    PID=$(sql "SELECT id FROM projects WHERE slug = '$slug'")
    EVENT=$(sql "SELECT id FROM churn_events WHERE project_id = '$PID' ORDER BY created_at DESC LIMIT 1")
    EMAIL=$(sql "SELECT email FROM customers WHERE project_id = '$PID' ORDER BY email LIMIT 1")
    PAYMENT=$(sql "SELECT id FROM payment_failures WHERE project_id = '$PID' ORDER BY created_at DESC LIMIT 1")
    P="/app/p/$slug"
    while read -r name path; do
      echo "| $BACKEND | $slug | $name | $(timing "$P$path") |"
    done <<PAGES
overview-7d ?period=7
overview-30d ?period=30
overview-90d ?period=90
events /events
events-search /events?q=ada.adams
events-recovered /events?status=recovered
events-page-50 /events?page=50
event /events/$EVENT
customers /customers
customers-search /customers?q=nora
customer /customers/${EMAIL/@/%40}
risk /risk
payments /payments
payment /payments/$PAYMENT
settings /settings
team /team
analytics /analytics
cancel-flow /cancel-flow
PAGES
    echo "| $BACKEND | $slug | overview first load | $(first_load "$P") bytes | |"
  done
  stop_server
done
