-- The churn-risk alert log (decisions §9). `attempts` holds the JSON array of delivery
-- attempts; `next_attempt_at` is set while a delivery is pending.
CREATE TABLE risk_alerts (
    id              TEXT PRIMARY KEY,
    project_id      TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    opaque_id       TEXT NOT NULL UNIQUE,
    customer_email  TEXT NOT NULL,
    risk_score      INTEGER NOT NULL,
    risk_level      TEXT NOT NULL,
    signals         TEXT NOT NULL,
    channel         TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        TEXT NOT NULL,
    next_attempt_at TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX risk_alerts_by_customer ON risk_alerts (project_id, customer_email, created_at);
CREATE INDEX risk_alerts_by_time ON risk_alerts (project_id, created_at, id);
