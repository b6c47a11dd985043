-- Invitations to join a project. Only a SHA-256 hash of the token is stored; the token itself
-- is an HMAC of the invitation id under a service secret, so the invitation email's job can
-- make it again without it ever sitting in a table.
CREATE TABLE invitations (
    id          TEXT PRIMARY KEY,
    project_id  TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    email       TEXT NOT NULL,
    role        TEXT NOT NULL,
    token_hash  TEXT NOT NULL UNIQUE,
    invited_by  TEXT REFERENCES users (id) ON DELETE SET NULL,
    expires_at  TEXT NOT NULL,
    accepted_at TEXT,
    created_at  TEXT NOT NULL
);
-- One open invitation per address and project: a second is a conflict, decided by the
-- database rather than by a read before the write.
CREATE UNIQUE INDEX invitations_open ON invitations (project_id, email) WHERE accepted_at IS NULL;
-- Registration under invite_only asks whether an address has a pending invitation.
CREATE INDEX invitations_email ON invitations (email) WHERE accepted_at IS NULL;
