-- Accounts: revocable sessions, email verification and the password-reset email throttle.

-- Every session token carries the version it was issued under; bumping it ends them all.
ALTER TABLE users ADD COLUMN session_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN email_verified_at TEXT;
-- When the last password-reset email went out: at most one per 5 minutes.
ALTER TABLE users ADD COLUMN reset_email_at TEXT;

-- Accounts made through the identity provider had their address verified by it.
UPDATE users SET email_verified_at = created_at WHERE password_hash IS NULL;

-- Single-use email verification tokens, stored as SHA-256 hashes.
CREATE TABLE email_verifications (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    expires_at TEXT NOT NULL,
    used_at    TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX email_verifications_user ON email_verifications (user_id);
CREATE INDEX email_verifications_expiry ON email_verifications (expires_at);
CREATE INDEX password_resets_expiry ON password_resets (expires_at);
