-- Churn events, their recovery email variants, and the jobs table.

CREATE TABLE churn_events (
    id                       TEXT PRIMARY KEY,
    project_id               TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    customer_email           TEXT NOT NULL,
    customer_name            TEXT,
    event_type               TEXT NOT NULL,
    cancel_reason            TEXT,
    reason_code              TEXT NOT NULL,
    mrr                      BIGINT,
    currency                 TEXT NOT NULL,
    plan_name                TEXT,
    tenure_days              BIGINT,
    status                   TEXT NOT NULL,
    provider                 TEXT NOT NULL,
    provider_subscription_id TEXT,
    provider_customer_id     TEXT,
    recovered_via            TEXT,
    recovered_at             TEXT,
    lost_at                  TEXT,
    created_at               TEXT NOT NULL,
    updated_at               TEXT NOT NULL
);
-- Keyset pagination per sort column; ties are ordered by id.
CREATE INDEX churn_events_by_created ON churn_events (project_id, created_at, id);
CREATE INDEX churn_events_by_status ON churn_events (project_id, status, created_at, id);
CREATE INDEX churn_events_by_type ON churn_events (project_id, event_type, created_at, id);

CREATE TABLE recovery_variants (
    id             TEXT PRIMARY KEY,
    churn_event_id TEXT NOT NULL REFERENCES churn_events (id) ON DELETE CASCADE,
    project_id     TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    strategy       TEXT NOT NULL,
    subject        TEXT NOT NULL,
    body           TEXT NOT NULL,
    body_text      TEXT NOT NULL,
    status         TEXT NOT NULL,
    recommended    BIGINT NOT NULL,
    rank           BIGINT NOT NULL,
    rank_score     DOUBLE PRECISION NOT NULL,
    rank_reasons   TEXT NOT NULL,
    generator      TEXT NOT NULL,
    coupon_code    TEXT,
    coupon_percent BIGINT,
    offer          TEXT,
    recipient      TEXT,
    message_id     TEXT,
    sent_at        TEXT,
    opened_at      TEXT,
    clicked_at     TEXT,
    bounced_at     TEXT,
    open_count     BIGINT NOT NULL DEFAULT 0,
    click_count    BIGINT NOT NULL DEFAULT 0,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    UNIQUE (churn_event_id, strategy)
);
CREATE INDEX recovery_variants_sent ON recovery_variants (project_id, strategy, sent_at);

-- Background work, enqueued in the transaction of the change that needs it.
CREATE TABLE jobs (
    id           TEXT PRIMARY KEY,
    kind         TEXT NOT NULL,
    payload      TEXT NOT NULL,
    run_at       TEXT NOT NULL,
    status       TEXT NOT NULL,
    attempts     BIGINT NOT NULL DEFAULT 0,
    max_attempts BIGINT NOT NULL,
    locked_until TEXT,
    last_error   TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX jobs_due ON jobs (status, run_at);
