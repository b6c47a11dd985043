#!/usr/bin/env bash
# Payments benchmark of the release build (issue 9), on SQLite and PostgreSQL, each on a fresh
# database with a loopback fake of Stripe's API over HTTPS (bench/stripe_fake.sh):
#  - a dunning run: RECORDS (default 10,000) failing provider-A records with their retry jobs,
#    seeded with SQL due in a day, on the project's default schedule (smart) with
#    `final_action: cancel_subscription`; the dev test clock (CHURN_DEV_MODE) is moved a day on and
#    `POST /dev/jobs/run` runs every due job (the background worker takes some too); timed
#    until every record has its attempt, with the server's peak RSS (VmHWM);
#  - webhook intake: wrk posts signed `invoice.payment_failed` deliveries (distinct events,
#    signed right before the run by payments.py sign) into one project.
# Usage: bench/webhooks.sh [sqlite|postgres ...]   (env: DURATION=10s CONNS=32 RECORDS=10000
#        DELIVERIES=80000: signed bodies made; more than the run can post, so none repeats;
#        INTAKE_ONLY=1: skip the dunning run)
RECORDS=${RECORDS:-10000}
DELIVERIES=${DELIVERIES:-80000}
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/stripe_fake.sh"

attempts() {
  local sql="SELECT COUNT(DISTINCT failure_id) FROM payment_attempts"
  if [ "$BACKEND" = postgres ]; then psql -tAq "$DB" -c "$sql"; else sqlite3 "$WORK/churn.db" "PRAGMA busy_timeout = 10000; $sql" | tail -n 1; fi
}
hwm() { awk '/VmHWM/ {printf "%.0f MiB", $2 / 1024}' "/proc/$SERVER/status"; }
# WAITS: on PostgreSQL, what the project's backends wait on while wrk runs (sampled every
# 0.1 s by one psql session; a psql started per sample took a fifth of this 2-core machine):
# row locks (`Lock`) would mean deliveries queue on shared rows such as counts.
WAITS="SELECT COALESCE(wait_event_type, 'on CPU') || ':' || COALESCE(wait_event, '-')
  FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid() \\watch 0.1"

for BACKEND in "${BACKENDS[@]}"; do
  start_server "$BACKEND"
  if [ -n "${INTAKE_ONLY:-}" ]; then
    echo "| backend | request | req/s | p50 | p99 | non-2xx |"
    echo "|---|---|---|---|---|---|"
  else
  connect dunning
  # The default schedule of a new project (smart), ending in a final action at the fake.
  curl -sf -X PUT "$API/projects/dunning/dunning-config" -H "authorization: Bearer $TOKEN" \
    -H 'content-type: application/json' -d '{"final_action":"cancel_subscription"}' >/dev/null
  seed_failures "$PID" "$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%S.000Z)" "$RECORDS" jobs
  before=$(hwm)
  echo "$BACKEND: dunning run starts; uptime: $(uptime)" >&2
  start=$(date +%s.%N)
  curl -sf "$API/dev/clock" -H 'content-type: application/json' -d '{"advance_seconds": 86460}' >/dev/null
  ran=$(curl -sf -X POST "$API/dev/jobs/run" | jq .data.ran)
  until [ "$(attempts)" -ge "$RECORDS" ]; do sleep 0.05; done
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  stats=$(curl -sf "$API/projects/dunning/payment-failures/stats" -H "authorization: Bearer $TOKEN")
  echo "| backend | records | jobs run by the call | recovered / abandoned / failing | run time | records/s | peak RSS before | peak RSS after |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '| %s | %s | %s | %s / %s / %s | %.2f s | %.0f | %s | %s |\n' "$BACKEND" "$RECORDS" "$ran" \
    "$(jq .data.recovered <<<"$stats")" "$(jq .data.abandoned <<<"$stats")" "$(jq .data.active <<<"$stats")" \
    "$secs" "$(echo "$RECORDS / $secs" | bc -l)" "$before" "$(hwm)"
  echo "$BACKEND: dunning run done; uptime: $(uptime)" >&2
  echo "| backend | request | req/s | p50 | p99 | non-2xx |"
  echo "|---|---|---|---|---|---|"
  fi

  connect intake
  # The dev clock moved a day on: sign with its time, not the wall clock's.
  python3 bench/payments.py sign --secret whsec_bench --count "$DELIVERIES" --out "$TLS/bodies" \
    --now "$(curl -sf "$API/dev/clock" | jq -r .data.now)"
  if [ "$BACKEND" = postgres ]; then psql -tAq "$DB" <<<"$WAITS" >"$TLS/waits" 2>/dev/null & SAMPLER=$!; fi
  WEBHOOK_BODIES="$TLS/bodies" WEBHOOK_PATH="/api/v1/webhooks/stripe/$PUB" WEBHOOK_THREADS=$THREADS \
    row "POST /webhooks/stripe (invoice.payment_failed, $CONNS connections)" "http://$ADDR" -s bench/webhook.lua
  if [ "$BACKEND" = postgres ]; then
    kill "$SAMPLER"
    echo "$BACKEND: backends seen waiting on (samples): $(grep -v "^$" "$TLS/waits" | sort | uniq -c | sort -rn | awk '{n = $1; $1 = ""; printf "%s %s, ", substr($0, 2), n}')" >&2
  fi
  stats=$(curl -sf "$API/projects/intake/payment-failures/stats" -H "authorization: Bearer $TOKEN")
  echo "$BACKEND: $(jq .data.total_failures <<<"$stats") payment failures created by the intake; uptime: $(uptime)" >&2
  stop_server
done
