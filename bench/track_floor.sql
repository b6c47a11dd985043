-- The PostgreSQL floor of POST /track: the rows /track writes, written inside the server by a
-- procedure (no client, no round trips, no JSON): 100 a statement, 30 statements a
-- transaction, shaped as bench/track_batch.lua's (100,000 customers in turn). `what`:
-- 'events' (behavior_events alone) or 'all' (with the daily rollups and the customers upsert,
-- whose triggers keep the counts).
CREATE OR REPLACE PROCEDURE track_floor(project TEXT, total INT, what TEXT) LANGUAGE plpgsql AS $$
DECLARE
    base BIGINT := 0;
    at TEXT := to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
BEGIN
    WHILE base < total LOOP
        FOR b IN 1..30 LOOP
            INSERT INTO behavior_events (project_id, id, customer_email, event, properties,
                                         occurred_at, received_at, duration_seconds, feature)
            SELECT project, 'b0-' || n, 'u' || n % 100000 || '@example.com',
                   CASE WHEN n % 3 = 0 THEN 'login' ELSE 'feature_used' END,
                   CASE WHEN n % 3 = 0 THEN '{"duration_seconds":' || 30 + n % 600 || '}'
                        ELSE '{"feature":"f' || n % 8 || '"}' END,
                   at, at, CASE WHEN n % 3 = 0 THEN 30 + n % 600 END,
                   CASE WHEN n % 3 <> 0 THEN 'f' || n % 8 END
            FROM generate_series(base, base + 99) n ORDER BY 2
            ON CONFLICT (project_id, id) DO NOTHING;
            IF what = 'all' THEN
                INSERT INTO behavior_daily (project_id, customer_email, day, event, detail, n)
                SELECT project, 'u' || n % 100000 || '@example.com', substr(at, 1, 10),
                       CASE WHEN n % 3 = 0 THEN 'login' ELSE 'feature_used' END,
                       CASE WHEN n % 3 = 0 THEN '' ELSE 'f' || n % 8 END, 1
                FROM generate_series(base, base + 99) n ORDER BY 2, 3, 4, 5
                ON CONFLICT (project_id, customer_email, day, event, detail)
                DO UPDATE SET n = behavior_daily.n + excluded.n;
                INSERT INTO customers (project_id, email, first_seen_at, last_seen_at,
                                       first_event_at, last_event_at)
                SELECT project, 'u' || n % 100000 || '@example.com', at, at, at, at
                FROM generate_series(base, base + 99) n ORDER BY 2
                ON CONFLICT (project_id, email) DO UPDATE SET
                    last_seen_at = GREATEST(customers.last_seen_at, excluded.last_seen_at),
                    last_event_at = GREATEST(customers.last_event_at, excluded.last_event_at);
            END IF;
            base := base + 100;
        END LOOP;
        COMMIT;
    END LOOP;
END;
$$;
