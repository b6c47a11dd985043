-- Identifiers are UUIDv7 text; timestamps are fixed-width RFC 3339 UTC text, which sorts
-- correctly as text on both backends.

CREATE TABLE users (
    id                 TEXT PRIMARY KEY,
    name               TEXT NOT NULL,
    email              TEXT NOT NULL UNIQUE,
    password_hash      TEXT,
    trial_ends_at      TEXT NOT NULL,
    paid_until         TEXT,
    default_project_id TEXT,
    created_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL
);

CREATE TABLE projects (
    id              TEXT PRIMARY KEY,
    owner_id        TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    slug            TEXT NOT NULL,
    product_type    TEXT,
    support_email   TEXT,
    allowed_origins TEXT NOT NULL DEFAULT '[]',
    settings        TEXT NOT NULL DEFAULT '{}',
    webhook_secret  TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    UNIQUE (owner_id, slug)
);

-- Every project's owner is also a member row with role 'owner', so one join answers
-- "which projects may this user see, and as what".
CREATE TABLE project_members (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       TEXT NOT NULL,
    joined_at  TEXT NOT NULL,
    PRIMARY KEY (user_id, project_id)
);
CREATE INDEX project_members_project ON project_members (project_id);

-- lookup: the public key body, or the SHA-256 hex of the secret key body.
CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    lookup     TEXT NOT NULL UNIQUE,
    hint       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT
);
CREATE INDEX api_keys_project ON api_keys (project_id, kind);

-- Values the service generates once and keeps (the JWT signing key).
CREATE TABLE service_secrets (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    created_at TEXT NOT NULL
);
