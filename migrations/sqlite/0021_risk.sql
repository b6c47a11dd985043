-- Churn-risk scoring (decisions §9): one score per customer and UTC day, kept 90 days, and the
-- next scoring run of each project.

CREATE TABLE risk_scores (
    project_id     TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    customer_email TEXT NOT NULL,
    day            TEXT NOT NULL,
    -- Null with insufficient data.
    score          INTEGER,
    level          TEXT,
    -- JSON array of {name, weight}.
    signals        TEXT NOT NULL,
    model          TEXT NOT NULL,
    scored_at      TEXT NOT NULL,
    PRIMARY KEY (project_id, customer_email, day)
);
CREATE INDEX risk_scores_by_day ON risk_scores (project_id, day);

-- The day of the customer's latest score (its row in risk_scores).
ALTER TABLE customers ADD COLUMN risk_day TEXT;
CREATE INDEX customers_by_risk ON customers (project_id, risk_score);

-- When the project's next scheduled scoring run is due. Created with the first tracked event;
-- only the job due at exactly this time moves it on and enqueues the next, so each project has
-- one chain of scoring jobs however often a job is retried.
CREATE TABLE risk_schedules (
    project_id  TEXT PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    next_run_at TEXT NOT NULL
);
