#!/usr/bin/env bash
# Payments benchmark of the release build (issue 9), on SQLite and PostgreSQL, each on a fresh
# database with a loopback fake of Stripe's API over HTTPS (bench/payments.py provider,
# certificate from a throw-away CA given as CHURN_EXTRA_CA_FILE; CHURN_WEBHOOK_ALLOW_PRIVATE
# lets `api_base` be loopback):
#  - a dunning run: RECORDS (default 10,000) failing provider-A records with their retry jobs,
#    seeded with SQL due in a day; the dev test clock (CHURN_DEV_MODE) is moved a day on and
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
command -v python3 >/dev/null || { echo "python3 is required" >&2; exit 1; }
command -v openssl >/dev/null || { echo "openssl is required" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "sqlite3 is required (apt-get install sqlite3)" >&2; exit 1; }

TLS=$(mktemp -d)
trap 'rm -rf "$TLS"; [ -n "${FAKE:-}" ] && kill "$FAKE" 2>/dev/null || true' EXIT
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=bench CA" -keyout "$TLS/ca.key" -out "$TLS/ca.pem" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$TLS/leaf.key" -out "$TLS/leaf.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' >"$TLS/ext"
openssl x509 -req -in "$TLS/leaf.csr" -CA "$TLS/ca.pem" -CAkey "$TLS/ca.key" -CAcreateserial -days 2 \
  -extfile "$TLS/ext" -out "$TLS/leaf.pem" 2>/dev/null
python3 bench/payments.py provider --cert "$TLS/leaf.pem" --key "$TLS/leaf.key" >"$TLS/port" &
FAKE=$!
for _ in $(seq 1 50); do [ -s "$TLS/port" ] && break; sleep 0.1; done
PROVIDER="https://localhost:$(cat "$TLS/port")"
export CHURN_DEV_MODE=true CHURN_WEBHOOK_ALLOW_PRIVATE=true CHURN_EXTRA_CA_FILE="$TLS/ca.pem"

# seed <project id> <due>: RECORDS failing provider-A records due at <due>, and their jobs.
seed() {
  local now; now=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
  local gen="WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < $RECORDS)"
  [ "$BACKEND" = postgres ] && gen="WITH g(n) AS (SELECT generate_series(1, $RECORDS))"
  local sql="BEGIN;
$gen INSERT INTO payment_failures (id, project_id, provider, reference, customer_email, amount, currency, status,
  failure_reason, attempts, max_retries, next_retry_at, provider_invoice_id, provider_customer_id, created_at, updated_at)
SELECT 'pf-' || n, '$1', 'stripe', 'in_dun_' || n, 'd' || n || '@example.com', 2900, 'usd', 'failing',
  'card_declined', 0, 4, '$2', 'in_dun_' || n, 'cus_dun_' || n, '$now', '$now' FROM g;
$gen INSERT INTO jobs (id, kind, payload, run_at, status, attempts, max_attempts, created_at, updated_at)
SELECT 'job-dun-' || n, 'dunning_retry', '{\"failure_id\":\"pf-' || n || '\",\"due\":\"$2\"}', '$2', 'queued', 0, 5,
  '$now', '$now' FROM g;
COMMIT;"
  if [ "$BACKEND" = postgres ]; then psql -q "$DB" <<<"$sql; ANALYZE;"; else sqlite3 "$WORK/churn.db" <<<"PRAGMA busy_timeout = 10000; $sql" >/dev/null; fi
}
attempts() {
  local sql="SELECT COUNT(DISTINCT failure_id) FROM payment_attempts"
  if [ "$BACKEND" = postgres ]; then psql -tAq "$DB" -c "$sql"; else sqlite3 "$WORK/churn.db" "PRAGMA busy_timeout = 10000; $sql" | tail -n 1; fi
}
hwm() { awk '/VmHWM/ {printf "%.0f MiB", $2 / 1024}' "/proc/$SERVER/status"; }
# connect <slug>: creates the project, connects Stripe to the fake; sets PUB, PID.
connect() {
  local resp
  resp=$(curl -sf "$API/projects" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d "{\"name\":\"$1\"}")
  PUB=$(jq -r .data.api_keys.public_key <<<"$resp")
  PID=$(jq -r .data.id <<<"$resp")
  curl -sf -X PUT "$API/projects/$1/providers/stripe" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \
    -d "{\"api_key\":\"sk_test_bench\",\"webhook_secret\":\"whsec_bench\",\"api_base\":\"$PROVIDER\"}" >/dev/null
}

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
  seed "$PID" "$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%S.000Z)"
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
