#!/usr/bin/env bash
# Load benchmark of the release build with wrk, on SQLite and on PostgreSQL:
#   /health, GET /projects/:slug by JWT and by secret key, POST /projects.
# Usage: bench/run.sh [sqlite|postgres ...]   (env: DURATION=10s CONNS=32 THREADS=1)
# Prints a Markdown table of req/s and p50/p99 latency per endpoint and backend.
source "$(dirname "$0")/common.sh"

echo "| backend | endpoint | req/s | p50 | p99 | non-2xx |"
echo "|---|---|---|---|---|---|"
for BACKEND in "${BACKENDS[@]}"; do
  start_server "$BACKEND"
  SECRET=$(curl -sf -X POST "$API/auth/onboarding" -H "authorization: Bearer $TOKEN" | jq -r .data.api_keys.secret_key)
  row "GET /health" "http://$ADDR/health"
  row "GET /projects/:slug (JWT)" "$API/projects/default" -H "Authorization: Bearer $TOKEN"
  row "GET /projects/:slug (secret key)" "$API/projects/default" -H "X-API-Key: $SECRET"
  row "POST /projects (JWT)" "$API/projects" -H "Authorization: Bearer $TOKEN" -s bench/post_project.lua
  stop_server
done
