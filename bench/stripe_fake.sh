# Shared by the payment benchmarks (webhooks.sh, pay_page.sh): a loopback fake of Stripe's API
# over HTTPS (bench/payments.py provider, certificate from bench/tls.sh's throw-away CA), a project
# connected to it, and failing records seeded with SQL. Source it after common.sh.
command -v python3 >/dev/null || { echo "python3 is required" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "sqlite3 is required (apt-get install sqlite3)" >&2; exit 1; }
source "$(dirname "${BASH_SOURCE[0]}")/tls.sh"

python3 bench/payments.py provider --cert "$TLS/leaf.pem" --key "$TLS/leaf.key" >"$TLS/port" &
FAKE=$!
for _ in $(seq 1 50); do [ -s "$TLS/port" ] && break; sleep 0.1; done
PROVIDER="https://localhost:$(cat "$TLS/port")"
export CHURN_DEV_MODE=true

# seed_failures <project id> <due> <count> [jobs]: <count> failing provider-A records due at
# <due>, each with its own invoice, customer and subscription (ids `<project id>-<n>`); with
# `jobs`, each record's dunning retry job too.
seed_failures() {
  local now; now=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
  local gen="WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < $3)"
  [ "$BACKEND" = postgres ] && gen="WITH g(n) AS (SELECT generate_series(1, $3))"
  local sql="BEGIN;
$gen INSERT INTO payment_failures (id, project_id, provider, reference, customer_email, amount, currency, status,
  failure_reason, attempts, max_retries, next_retry_at, provider_invoice_id, provider_customer_id,
  provider_subscription_id, created_at, updated_at)
SELECT '$1-' || n, '$1', 'stripe', 'in_dun_' || n, 'd' || n || '@example.com', 2900, 'usd', 'failing',
  'card_declined', 0, 4, '$2', 'in_dun_' || n, 'cus_dun_' || n, 'sub_dun_' || n, '$now', '$now' FROM g;"
  if [ "${4:-}" = jobs ]; then
    sql="$sql
$gen INSERT INTO jobs (id, kind, payload, run_at, status, attempts, max_attempts, created_at, updated_at)
SELECT 'job-dun-' || n, 'dunning_retry', '{\"failure_id\":\"$1-' || n || '\",\"due\":\"$2\"}', '$2', 'queued', 0, 5,
  '$now', '$now' FROM g;"
  fi
  sql="$sql
COMMIT;"
  if [ "$BACKEND" = postgres ]; then psql -q "$DB" <<<"$sql; ANALYZE;"; else sqlite3 "$WORK/churn.db" <<<"PRAGMA busy_timeout = 10000; $sql" >/dev/null; fi
}

# connect <slug>: creates the project, connects Stripe to the fake; sets PUB, PID.
connect() {
  local resp
  resp=$(curl -sf "$API/projects" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d "{\"name\":\"$1\"}")
  PUB=$(jq -r .data.api_keys.public_key <<<"$resp")
  PID=$(jq -r .data.id <<<"$resp")
  curl -sf -X PUT "$API/projects/$1/providers/stripe" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \
    -d "{\"api_key\":\"sk_test_bench\",\"webhook_secret\":\"whsec_bench\",\"api_base\":\"$PROVIDER\"}" >/dev/null
}
