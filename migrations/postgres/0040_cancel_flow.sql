-- The cancel-flow configuration of a project (JSON text; a project without a row has the
-- default flow), and every widget open for a known customer: a churn-risk input
-- (`cancel_page_views`).

CREATE TABLE cancel_flows (
    project_id TEXT PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    flow       TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE cancel_flow_opens (
    project_id     TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    customer_email TEXT NOT NULL,
    opened_at      TEXT NOT NULL
);
CREATE INDEX cancel_flow_opens_customer ON cancel_flow_opens (project_id, customer_email, opened_at);
