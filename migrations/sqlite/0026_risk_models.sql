-- The learned churn-risk model of each project (decisions §9). No row: the default weights hold.
-- Each scoring run with enough labelled customers refits it and replaces the row.
CREATE TABLE risk_models (
    project_id TEXT PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    -- The score of a customer with no feature present, in score points.
    base       INTEGER NOT NULL,
    -- JSON array of {feature, weight}, the weights in score points.
    weights    TEXT NOT NULL,
    trained_at TEXT NOT NULL,
    -- Labelled customers used, the held-out fifth included.
    customers  INTEGER NOT NULL,
    -- On the held-out fifth.
    auc        REAL NOT NULL
);
