-- Tracked behaviour (POST /track) and the customers it describes.

-- A customer is a (project, email) pair, upserted by tracking, churn events, cancel-flow
-- submissions and provider events. The tracked-history span (first/last_event_at), the latest
-- NPS answer and card expiry are kept here, read by scoring without touching raw events; so is
-- the latest risk score, which the customer lists sort by.
CREATE TABLE customers (
    project_id         TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    email              TEXT NOT NULL,
    first_seen_at      TEXT NOT NULL,
    last_seen_at       TEXT NOT NULL,
    first_event_at     TEXT,
    last_event_at      TEXT,
    nps_score          INTEGER,
    nps_at             TEXT,
    card_expires_at    TEXT,
    card_expiry_at     TEXT,
    risk_score         INTEGER,
    risk_level         TEXT,
    PRIMARY KEY (project_id, email)
);
CREATE INDEX customers_by_last_seen ON customers (project_id, last_seen_at, email);
CREATE INDEX customers_by_last_event ON customers (project_id, last_event_at);

-- Raw tracked events. The caller's `id` (or a generated one) is the key, so a repeated id is
-- refused by the constraint, not by a read before the write. The properties scoring reads are
-- extracted into typed columns at ingestion.
CREATE TABLE behavior_events (
    project_id       TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    id               TEXT NOT NULL,
    customer_email   TEXT NOT NULL,
    event            TEXT NOT NULL,
    properties       TEXT NOT NULL,
    occurred_at      TEXT NOT NULL,
    received_at      TEXT NOT NULL,
    duration_seconds REAL,
    feature          TEXT,
    category         TEXT,
    nps_score        INTEGER,
    expires_at       TEXT,
    PRIMARY KEY (project_id, id)
);
CREATE INDEX behavior_events_by_customer ON behavior_events (project_id, customer_email, occurred_at);
CREATE INDEX behavior_events_sessions ON behavior_events (project_id, occurred_at)
    WHERE duration_seconds IS NOT NULL;

-- Per customer, UTC day, event name and detail (the feature of feature_used, the category of
-- page_viewed, else ''): how many. Kept in the ingestion transaction; scoring and analytics
-- read these instead of the raw events.
CREATE TABLE behavior_daily (
    project_id     TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    customer_email TEXT NOT NULL,
    day            TEXT NOT NULL,
    event          TEXT NOT NULL,
    detail         TEXT NOT NULL,
    n              INTEGER NOT NULL,
    PRIMARY KEY (project_id, customer_email, day, event, detail)
);
CREATE INDEX behavior_daily_by_day ON behavior_daily (project_id, day);

-- Churn events per customer (the customer lists count them).
CREATE INDEX churn_events_by_customer ON churn_events (project_id, customer_email);
