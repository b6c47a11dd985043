-- A project's churn-risk configuration (decisions §9); no row means the defaults.
-- `enabled` is 0 or 1 (one type on both backends).
CREATE TABLE risk_configs (
    project_id           TEXT PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    enabled              INTEGER NOT NULL,
    delivery_mode        TEXT NOT NULL,
    risk_threshold       INTEGER NOT NULL,
    webhook_url          TEXT,
    email_tone           TEXT NOT NULL,
    check_interval_hours INTEGER NOT NULL,
    updated_at           TEXT NOT NULL
);
