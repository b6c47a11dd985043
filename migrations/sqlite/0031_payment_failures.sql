-- Inbound provider events, the payment failures they open, and dunning.

-- Every provider event processed, once: the primary key is what makes a repeated or racing
-- delivery of the same event id a duplicate.
CREATE TABLE provider_events (
    project_id  TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    provider    TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    event_type  TEXT NOT NULL,
    action      TEXT NOT NULL,
    received_at TEXT NOT NULL,
    PRIMARY KEY (project_id, provider, event_id)
);

-- One failing payment: A's invoice, B's payment, custom's payment id (else event id).
CREATE TABLE payment_failures (
    id                       TEXT PRIMARY KEY,
    project_id               TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    provider                 TEXT NOT NULL,
    reference                TEXT NOT NULL,
    customer_email           TEXT NOT NULL,
    amount                   INTEGER NOT NULL,
    currency                 TEXT NOT NULL,
    status                   TEXT NOT NULL,
    failure_reason           TEXT,
    decline_code             TEXT,
    attempts                 INTEGER NOT NULL,
    max_retries              INTEGER NOT NULL,
    next_retry_at            TEXT,
    abandon_reason           TEXT,
    recovered_at             TEXT,
    provider_invoice_id      TEXT,
    provider_payment_id      TEXT,
    provider_customer_id     TEXT,
    provider_subscription_id TEXT,
    payment_link             TEXT,
    churn_event_id           TEXT,
    created_at               TEXT NOT NULL,
    updated_at               TEXT NOT NULL,
    UNIQUE (project_id, provider, reference)
);
CREATE INDEX payment_failures_by_created ON payment_failures (project_id, created_at, id);
CREATE INDEX payment_failures_by_status ON payment_failures (project_id, status, created_at, id);
CREATE INDEX payment_failures_by_email ON payment_failures (project_id, customer_email);
CREATE INDEX payment_failures_by_customer ON payment_failures (project_id, provider_customer_id);

-- Each retry of a payment failure.
CREATE TABLE payment_attempts (
    id           TEXT PRIMARY KEY,
    failure_id   TEXT NOT NULL REFERENCES payment_failures (id) ON DELETE CASCADE,
    at           TEXT NOT NULL,
    outcome      TEXT NOT NULL,
    decline_code TEXT,
    error        TEXT
);
CREATE INDEX payment_attempts_by_failure ON payment_attempts (failure_id, at);

-- Each dunning email sent or skipped.
CREATE TABLE payment_emails (
    id         TEXT PRIMARY KEY,
    failure_id TEXT NOT NULL REFERENCES payment_failures (id) ON DELETE CASCADE,
    at         TEXT NOT NULL,
    tone       TEXT NOT NULL,
    status     TEXT NOT NULL,
    reason     TEXT
);
CREATE INDEX payment_emails_by_failure ON payment_emails (failure_id, at);

-- A project's dunning configuration; a project without a row has the defaults.
CREATE TABLE dunning_configs (
    project_id           TEXT PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    config               TEXT NOT NULL,
    updated_at           TEXT NOT NULL
);

-- Recovering a customer's open churn events on a successful payment.
-- Replaces the index of 0020 (merged from two branches) with one that also covers status.
DROP INDEX IF EXISTS churn_events_by_customer;
CREATE INDEX churn_events_by_customer ON churn_events (project_id, customer_email, status);
