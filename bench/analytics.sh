#!/usr/bin/env bash
# Cohorts and forecast of the release build on a project with LARGE (default 1,000,000) churn
# events spread over the 36 months ending with the current one, on SQLite and on PostgreSQL.
# Both read the monthly aggregates kept by triggers (`churn_cohorts`), so they should not
# depend on the number of events (target: under 100 ms each).
# Usage: bench/analytics.sh [sqlite|postgres ...]   (env: LARGE=1000000 SAMPLES=50)
LARGE=${LARGE:-1000000}
SAMPLES=${SAMPLES:-50}
source "$(dirname "$0")/common.sh"

# seed_<backend> <database> <project id> <count>: <count> events, event n created in month
# n % 36 before the current one; every third recovered (one in ten of those after a sent
# discount email), every fifth of the rest lost. The counts are rebuilt after (see `seed`).
seed_sqlite() {
  sqlite_bulk "$1" <<SQL
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < $3)
INSERT INTO churn_events (id, project_id, customer_email, event_type, reason_code, mrr, currency, status, provider, created_at, updated_at)
SELECT printf('seed-%08d', n), '$2', printf('c%d@example.com', n), 'cancellation', 'too_expensive', 1000 + n % 5000, 'usd',
       CASE WHEN n % 3 = 0 THEN 'recovered' WHEN n % 5 = 0 THEN 'lost' ELSE 'email_sent' END, 'api',
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now', 'start of month', printf('-%d months', n % 36), '+1 day'),
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
FROM g;
WITH RECURSIVE g(n) AS (SELECT 30 UNION ALL SELECT n + 30 FROM g WHERE n + 30 <= $3)
INSERT INTO recovery_variants (id, churn_event_id, project_id, strategy, subject, body, body_text, status, recommended, rank, rank_score, rank_reasons, generator, recipient, sent_at, created_at, updated_at)
SELECT printf('seedv-%08d', n), printf('seed-%08d', n), '$2', 'discount', 'Subject', '<p>Body</p>', 'Body', 'sent', 1, 1, 1.0, '[]',
       'template', printf('c%d@example.com', n), '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z'
FROM g;
SQL
}
seed_postgres() {
  pg_bulk "$1" churn_events recovery_variants <<SQL
INSERT INTO churn_events (id, project_id, customer_email, event_type, reason_code, mrr, currency, status, provider, created_at, updated_at)
SELECT 'seed-' || lpad(n::text, 8, '0'), '$2', 'c' || n || '@example.com', 'cancellation', 'too_expensive', 1000 + n % 5000, 'usd',
       CASE WHEN n % 3 = 0 THEN 'recovered' WHEN n % 5 = 0 THEN 'lost' ELSE 'email_sent' END, 'api',
       to_char(date_trunc('month', now() AT TIME ZONE 'UTC') - make_interval(months => n % 36) + interval '1 day', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
       to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
FROM generate_series(1, $3) n;
INSERT INTO recovery_variants (id, churn_event_id, project_id, strategy, subject, body, body_text, status, recommended, rank, rank_score, rank_reasons, generator, recipient, sent_at, created_at, updated_at)
SELECT 'seedv-' || lpad(n::text, 8, '0'), 'seed-' || lpad(n::text, 8, '0'), '$2', 'discount', 'Subject', '<p>Body</p>', 'Body', 'sent', 1, 1, 1.0, '[]',
       'template', 'c' || n || '@example.com', '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z'
FROM generate_series(30, $3, 30) n;
SQL
}

# latency <path> <key>: p50 and p99 of SAMPLES sequential GETs.
latency() {
  local times=()
  for _ in $(seq 1 "$SAMPLES"); do
    times+=("$(curl -sf -o /dev/null -w '%{time_total}' "$API$1" -H "X-API-Key: $2")")
  done
  printf '%s\n' "${times[@]}" | percentiles
}

echo "| backend | events | request | p50 | p99 |"
echo "|---|---|---|---|---|"
for BACKEND in "${BACKENDS[@]}"; do
  start_server "$BACKEND"
  new_projects large
  key=${KEY[large]}
  seed "${ID[large]}" "$LARGE"
  # Sanity: the aggregates hold every event, and the forecast used a model.
  total=$(curl -sf "$API/projects/large/cohorts?months=36" -H "X-API-Key: $key" | jq '[.data[].total_events] | add')
  method=$(curl -sf "$API/projects/large/forecasting?horizon=12" -H "X-API-Key: $key" | jq -r .data.method)
  [ "$total" = "$LARGE" ] || { echo "cohorts hold $total events, not $LARGE" >&2; exit 1; }
  echo "| $BACKEND | $LARGE | GET cohorts?months=36 | $(latency "/projects/large/cohorts?months=36" "$key") |"
  echo "| $BACKEND | $LARGE | GET forecasting?horizon=12 ($method) | $(latency "/projects/large/forecasting?horizon=12" "$key") |"
  stop_server
done
