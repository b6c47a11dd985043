-- Outcome webhooks (decisions §19). An endpoint's `secret` is sealed with the service
-- encryption key; `event_types` is a JSON array; `enabled` is 0 or 1 (one type on both
-- backends). `failing_since` is the time of the first failed attempt since the last success:
-- an endpoint failing for 5 days is disabled (`disabled_reason` says why).
CREATE TABLE webhook_endpoints (
    id              TEXT PRIMARY KEY,
    project_id      TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    url             TEXT NOT NULL,
    description     TEXT NOT NULL,
    event_types     TEXT NOT NULL,
    enabled         INTEGER NOT NULL,
    format          TEXT NOT NULL,
    secret          TEXT NOT NULL,
    failing_since   TEXT,
    disabled_reason TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX webhook_endpoints_by_project ON webhook_endpoints (project_id, created_at, id);

-- One row per message and endpoint, written in the transaction of the change it reports
-- (with its first `deliver_webhook` job), so a message exists exactly when its change does.
-- `body` holds the exact bytes posted; `attempts` the JSON array of attempts, as the alert
-- log's.
CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    project_id      TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    message_id      TEXT NOT NULL,
    event_type      TEXT NOT NULL,
    body            TEXT NOT NULL,
    status          TEXT NOT NULL,
    reason          TEXT,
    attempts        TEXT NOT NULL,
    next_attempt_at TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, created_at, id);
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (endpoint_id, message_id);
