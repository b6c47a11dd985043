#!/usr/bin/env bash
# Issue 24's two figures, release build, on SQLite and PostgreSQL:
#  - outcome fan-out: EVENTS (default 10,000) churn events created through the API, each
#    `churn_event.created` sent to 3 endpoints on a loopback HTTPS receiver (bench/outcomes.py,
#    bench/tls.sh): deliveries received, and p50 / p99 / max latency from the message's
#    `created_at` (set in the transaction that records the event) to its arrival;
#  - the widget's configuration (`GET /cancel-flow/config/:publicKey`, wrk) for a project with
#    its default flow only and for one with 49 segmented flows beside it, none matching, so
#    every flow is looked at.
# Usage: bench/outcomes.sh [sqlite|postgres ...]   (env: EVENTS=10000 DURATION=10s CONNS=32)
EVENTS=${EVENTS:-10000}
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/tls.sh"

ORIGIN=https://shop.example
for BACKEND in "${BACKENDS[@]}"; do
  start_server "$BACKEND"
  keys=$(curl -sf -X POST "$API/auth/onboarding" -H "authorization: Bearer $TOKEN")
  SECRET=$(jq -r .data.api_keys.secret_key <<<"$keys")
  PUBLIC=$(jq -r .data.api_keys.public_key <<<"$keys")
  auth=(-H "authorization: Bearer $TOKEN" -H 'content-type: application/json')

  received="$WORK/received"
  : >"$received"
  python3 bench/outcomes.py receive "$received" "$TLS/leaf.pem" "$TLS/leaf.key" >"$WORK/port" &
  FAKE=$!
  until [ -s "$WORK/port" ]; do sleep 0.1; done
  for path in a b c; do
    curl -sf "${auth[@]}" "$API/projects/default/webhook-endpoints" \
      -d "{\"url\":\"https://localhost:$(cat "$WORK/port")/$path\",\"event_types\":[\"churn_event.created\"]}" >/dev/null
  done
  start=$(date +%s.%N)
  python3 bench/outcomes.py create "$API" "$SECRET" "$EVENTS"
  created=$(echo "$(date +%s.%N) - $start" | bc)
  echo "| backend | events created (s) | deliveries received | p50 | p99 | max |"
  echo "|---|---|---|---|---|---|"
  echo "| $BACKEND | $created | $(python3 bench/outcomes.py report "$received" $((EVENTS * 3))) |"
  kill "$FAKE"

  curl -sf -X PUT "${auth[@]}" "$API/projects/default/allowed-origins" -d "{\"allowed_origins\":[\"$ORIGIN\"]}" >/dev/null
  echo "| backend | widget config | req/s | p50 | p99 | non-2xx |"
  echo "|---|---|---|---|---|---|"
  url="http://$ADDR/api/v1/cancel-flow/config/$PUBLIC?plan_name=pro&mrr=4900"
  row "default flow only" "$url" -H "Origin: $ORIGIN"
  for i in $(seq 1 49); do
    curl -sf "${auth[@]}" "$API/projects/default/cancel-flows" \
      -d "{\"name\":\"flow $i\",\"priority\":$i,\"segment\":{\"plans\":[\"plan-$i\"]},\"reasons\":[{\"code\":\"too_expensive\",\"label\":\"Too expensive\"},{\"code\":\"other\",\"label\":\"Other\"}]}" >/dev/null
  done
  row "49 segmented flows, none matching" "$url" -H "Origin: $ORIGIN"
  stop_server
done
