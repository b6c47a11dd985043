-- Who may be emailed: the suppression list, the daily send counter and the project's sender.

-- Addresses a project must not send recovery or check-in emails to.
CREATE TABLE email_suppressions (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    email      TEXT NOT NULL,
    reason     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (project_id, email)
);
CREATE INDEX email_suppressions_by_created ON email_suppressions (project_id, created_at, email);

-- Recovery and check-in emails claimed per project and UTC day (YYYY-MM-DD).
CREATE TABLE email_send_counts (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    day        TEXT NOT NULL,
    sent       BIGINT NOT NULL,
    PRIMARY KEY (project_id, day)
);

-- A project's own sender; its domain is verified by a TXT record holding the token.
CREATE TABLE email_settings (
    project_id         TEXT PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    from_name          TEXT,
    from_email         TEXT,
    reply_to           TEXT,
    verification_token TEXT NOT NULL,
    verified_at        TEXT,
    updated_at         TEXT NOT NULL
);
