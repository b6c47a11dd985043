-- Projects holding demo data (`churn demo seed`): the seed and what it made. The rows
-- themselves are recognised by their ids, `demo-<project id>-…` (never a UUID, which every
-- other id is), and their customers' emails, `…@demo.invalid` (a reserved domain no real
-- customer has), so `churn demo clear` removes them and nothing the founder created.
-- `cancel_flow_at`: when the seed stored the project's cancel flow (it had none); the flow is
-- cleared only while it is still that one.
CREATE TABLE demo_data (
    project_id     TEXT PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    seed           BIGINT NOT NULL,
    events         BIGINT NOT NULL,
    customers      BIGINT NOT NULL,
    cancel_flow_at TEXT,
    created_at     TEXT NOT NULL
);

-- Indexes the dashboard needs at the scale `bench/dashboard.sh` seeds.
-- The overview at a million events (`store::overview`): its period figures read ranges of
-- recoveries and losses, and the events never resolved, instead of every event of the
-- project; its reasons read the period's events from the index alone.
CREATE INDEX churn_events_by_recovered ON churn_events (project_id, recovered_at, lost_at, created_at, mrr);
CREATE INDEX churn_events_by_lost ON churn_events (project_id, lost_at, recovered_at, created_at);
CREATE INDEX churn_events_by_reason ON churn_events (project_id, created_at, reason_code, mrr);
-- A customer's latest event (the MRR that `at_risk` and "Needs you" count for a customer):
-- without it SQLite walks the project's events by creation date for every risky customer.
CREATE INDEX churn_events_by_customer_latest ON churn_events (project_id, customer_email, created_at, id);
