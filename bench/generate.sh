#!/usr/bin/env bash
# Generation latency of the release build against the project's send history, on SQLite and on
# PostgreSQL: `generate` on fresh events of a project with 100 sent variants and of one with
# LARGE (default 300,000), seeded with SQL. Ranking reads per-strategy outcome counts, so the
# two should be close (target: within 2x).
# Usage: bench/generate.sh [sqlite|postgres ...]   (env: LARGE=300000 SAMPLES=200)
LARGE=${LARGE:-300000}
SAMPLES=${SAMPLES:-200}
source "$(dirname "$0")/common.sh"

STRATEGIES="'discount','downgrade_offer','feedback_request','founder_email','pain_point_fix','pause_option','social_proof','unused_feature','value_recap'"

# seed_<backend> <database> <project id> <count>: <count> emailed events, one sent variant
# each (strategies in turn, every third event recovered).
seed_sqlite() {
  sqlite_bulk "$1" <<SQL
CREATE TEMP TABLE s(i INTEGER PRIMARY KEY, name TEXT);
INSERT INTO s(name) VALUES (${STRATEGIES//,/),(});
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < $3)
INSERT INTO churn_events (id, project_id, customer_email, event_type, reason_code, mrr, currency, status, provider, created_at, updated_at)
SELECT printf('seed-%s-%08d', '$2', n), '$2', printf('c%d@example.com', n), 'cancellation', 'too_expensive', 4900, 'usd',
       CASE WHEN n % 3 = 0 THEN 'recovered' ELSE 'email_sent' END, 'api',
       '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z'
FROM g;
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < $3)
INSERT INTO recovery_variants (id, churn_event_id, project_id, strategy, subject, body, body_text, status, recommended, rank, rank_score, rank_reasons, generator, recipient, sent_at, created_at, updated_at)
SELECT printf('seedv-%s-%08d', '$2', n), printf('seed-%s-%08d', '$2', n), '$2', (SELECT name FROM s WHERE i = 1 + n % 9),
       'Subject', '<p>Body</p>', 'Body', 'sent', 1, 1, 1.0, '[]', 'template', printf('c%d@example.com', n),
       '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z'
FROM g;
SQL
}
seed_postgres() {
  pg_bulk "$1" churn_events recovery_variants <<SQL
INSERT INTO churn_events (id, project_id, customer_email, event_type, reason_code, mrr, currency, status, provider, created_at, updated_at)
SELECT 'seed-$2-' || lpad(n::text, 8, '0'), '$2', 'c' || n || '@example.com', 'cancellation', 'too_expensive', 4900, 'usd',
       CASE WHEN n % 3 = 0 THEN 'recovered' ELSE 'email_sent' END, 'api',
       '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z'
FROM generate_series(1, $3) n;
INSERT INTO recovery_variants (id, churn_event_id, project_id, strategy, subject, body, body_text, status, recommended, rank, rank_score, rank_reasons, generator, recipient, sent_at, created_at, updated_at)
SELECT 'seedv-$2-' || lpad(n::text, 8, '0'), 'seed-$2-' || lpad(n::text, 8, '0'), '$2', (ARRAY[$STRATEGIES])[1 + n % 9],
       'Subject', '<p>Body</p>', 'Body', 'sent', 1, 1, 1.0, '[]', 'template', 'c' || n || '@example.com',
       '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z'
FROM generate_series(1, $3) n;
SQL
}

# latency <slug> <key>: p50 and p99 of `generate` over SAMPLES fresh events, one at a time.
latency() {
  local times=()
  for i in $(seq 1 "$SAMPLES"); do
    local id
    id=$(curl -sf "$API/projects/$1/churn-events" -H "X-API-Key: $2" -H 'content-type: application/json' \
      -d "{\"customer_email\":\"new$i@example.com\",\"cancel_reason\":\"too expensive\",\"mrr\":4900}" | jq -r .data.id)
    times+=("$(curl -sf -o /dev/null -w '%{time_total}' -X POST "$API/projects/$1/churn-events/$id/generate" -H "X-API-Key: $2")")
  done
  printf '%s\n' "${times[@]}" | percentiles
}

echo "| backend | project | generate p50 | generate p99 |"
echo "|---|---|---|---|"
for BACKEND in "${BACKENDS[@]}"; do
  start_server "$BACKEND"
  small_and_large "$LARGE"
  for p in small large; do
    n=${SIZE[$p]}
    echo "| $BACKEND | $n sent variants | $(latency "$p" "${KEY[$p]}") |"
  done
  stop_server
done
