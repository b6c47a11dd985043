#!/usr/bin/env bash
# The storage floor of POST /track (issue 8): how fast each database alone writes what a batch
# of tracked events writes, with no HTTP, request parsing or server in the way, into a fresh
# database migrated by the release server (one project per row, each into empty tables).
#  - SQLite: bench/track_floor.py runs the writer's own statements through Python's sqlite3.
#  - PostgreSQL: bench/track_floor.sql writes the same rows inside the server.
# Each backend writes TOTAL (default 300,000) events as batches of 100 (30 a transaction),
# first the events alone, then events, daily rollups and customers, as /track keeps them.
# Usage: bench/track_floor.sh [sqlite|postgres ...]   (env: TOTAL=300000)
TOTAL=${TOTAL:-300000}
source "$(dirname "$0")/common.sh"
command -v python3 >/dev/null || { echo "python3 is required" >&2; exit 1; }

echo "| backend | writes | events | per event | events/s, one core |"
echo "|---|---|---|---|---|"
for BACKEND in "${BACKENDS[@]}"; do
  start_server "$BACKEND"
  for what in events all; do
    project=$(curl -sf "$API/projects" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \
      -d "{\"name\":\"floor $what\"}" | jq -r .data.id)
    if [ "$BACKEND" = sqlite ]; then
      python3 bench/track_floor.py "$WORK/churn.db" "$project" "$what" "$TOTAL"
    else
      psql -q "$DB" -f bench/track_floor.sql
      start=$(date +%s.%N)
      psql -q "$DB" -c "CALL track_floor('$project', $TOTAL, '$what')"
      secs=$(echo "$(date +%s.%N) - $start" | bc)
      printf '| postgres | %s | %s | %.1f µs | %.0f |\n' "$what" "$TOTAL" \
        "$(echo "$secs * 1000000 / $TOTAL" | bc -l)" "$(echo "$TOTAL / $secs" | bc -l)"
    fi
  done
  stop_server
done
