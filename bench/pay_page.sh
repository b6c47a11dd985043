#!/usr/bin/env bash
# The card-update page (decisions §18, issue 23) of the release build, on SQLite and
# PostgreSQL: a project connected to a loopback fake of Stripe (bench/stripe_fake.sh) holding
# RECORDS (default 100,000) failing records seeded with SQL; SAMPLES (default 200) of them,
# spread over the table, have their page found the way the in-app banner finds it
# (`GET /customer-status/:publicKey` with the customer's hash, decisions §16), and each page is
# then opened twice, in turn: the server time of those GETs (p50, p95, max, from the server's
# request log). Target: p95 ≤ 20 ms.
# Usage: bench/pay_page.sh [sqlite|postgres ...]   (env: RECORDS=100000 SAMPLES=200)
RECORDS=${RECORDS:-100000}
SAMPLES=${SAMPLES:-200}
# The request log's `finished processing request` lines carry each request's latency.
BENCH_LOG=${BENCH_LOG:-warn,churn_server=info,tower_http=info}
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/stripe_fake.sh"

echo "| backend | records | pages opened | p50 | p95 | max |"
echo "|---|---|---|---|---|---|"
for BACKEND in "${BACKENDS[@]}"; do
  start_server "$BACKEND"
  connect pages
  seed_failures "$PID" "$(date -u -d '+3 days' +%Y-%m-%dT%H:%M:%S.000Z)" "$RECORDS"
  secret=$(curl -sf "$API/projects/pages/identity-secret" -H "authorization: Bearer $TOKEN" | jq -r .data.identity_secret)
  step=$((RECORDS / SAMPLES))
  paths=$(mktemp)
  for i in $(seq 1 "$SAMPLES"); do echo "d$((i * step))@example.com"; done |
    python3 bench/payments.py hashes --secret "$secret" |
    while IFS=$'\t' read -r email hash; do
      curl -sf "$API/customer-status/$PUB?customer_email=$email&customer_hash=$hash" |
        jq -r '.data.update_url' | sed -E 's#^https?://[^/]+##'
    done >"$paths"
  [ "$(grep -c '^/pay/' "$paths")" = "$SAMPLES" ] || { echo "$BACKEND: not every sample has a page" >&2; exit 1; }
  before=$(wc -l <"$WORK/server.log")
  for _ in 1 2; do
    while read -r path; do
      [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$ADDR$path")" = 200 ] || { echo "$path did not answer 200" >&2; exit 1; }
    done <"$paths"
  done
  tail -n +"$((before + 1))" "$WORK/server.log" |
    jq -r 'select(.message == "finished processing request") | .latency' | awk '{print $1}' | sort -n |
    awk -v b="$BACKEND" -v r="$RECORDS" '{t[NR]=$1} END {printf "| %s | %s | %d | %d ms | %d ms | %d ms |\n", b, r, NR, t[int((NR+1)*0.5)], t[int(NR*0.95+0.5)], t[NR]}'
  rm -f "$paths"
  stop_server
done
