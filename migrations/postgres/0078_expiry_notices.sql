-- Card-expiry notices (decisions §18): one row per customer, the notice of the newest
-- expiry signal. A signal with another expiry replaces the row (a new id, so the job of the
-- notice it replaces finds nothing to send); the same expiry again changes nothing, so a
-- repeated signal cannot schedule a second email. `status`: pending, sent, skipped (with
-- `reason`) or cancelled (a successful payment came first).
CREATE TABLE expiry_notices (
    id                   TEXT NOT NULL UNIQUE,
    project_id           TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    customer_email       TEXT NOT NULL,
    expires_at           TEXT NOT NULL,
    signal_at            TEXT NOT NULL,
    brand                TEXT,
    last4                TEXT,
    provider_customer_id TEXT,
    send_at              TEXT NOT NULL,
    status               TEXT NOT NULL,
    reason               TEXT,
    created_at           TEXT NOT NULL,
    updated_at           TEXT NOT NULL,
    PRIMARY KEY (project_id, customer_email)
);
