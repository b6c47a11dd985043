-- Each project's identity secrets (decisions §16): the key of `customer_hash`, sealed with the
-- service encryption key. One is current (`expires_at` unset); a rotated one keeps verifying
-- until `expires_at`. Projects made before this migration get theirs on first use.
CREATE TABLE identity_secrets (
    id         TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    secret     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT
);
CREATE UNIQUE INDEX identity_secrets_current ON identity_secrets (project_id) WHERE expires_at IS NULL;
CREATE INDEX identity_secrets_project ON identity_secrets (project_id, expires_at);
