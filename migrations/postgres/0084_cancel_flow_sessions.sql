-- Cancel-flow sessions (decisions §19): one per widget open with a valid customer hash.
-- `status` holds the steps reached (`opened`, `reason`, `offer_shown`, `saved`,
-- `cancelled`); `abandoned` is never stored but read from the clock (24 hours after
-- `opened_at` without an outcome). `offer_kind` is the kind of the offer the customer was
-- shown (null: none); `churn_event_id` the cancellation the outcome recorded. No foreign
-- key to the flow: a session keeps naming a deleted flow, as churn events do.
CREATE TABLE cancel_flow_sessions (
    id             TEXT PRIMARY KEY,
    project_id     TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    customer_email TEXT NOT NULL,
    flow_id        TEXT,
    variant        TEXT,
    reason         TEXT,
    offer_kind     TEXT,
    status         TEXT NOT NULL,
    churn_event_id TEXT,
    opened_at      TEXT NOT NULL,
    ended_at       TEXT
);
-- The list, newest first, and the funnel's window of `opened_at`.
CREATE INDEX cancel_flow_sessions_by_opened
    ON cancel_flow_sessions (project_id, opened_at, id);
-- The list filtered by a stored status (`abandoned` reads the open statuses by `opened_at`).
CREATE INDEX cancel_flow_sessions_by_status
    ON cancel_flow_sessions (project_id, status, opened_at, id);
