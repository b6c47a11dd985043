-- Secrets at rest (decisions §20). The webhook secret and the generated JWT and tracking
-- secrets become sealed with the encryption key. SQL cannot seal, so this leaves a marker the
-- first server start removes in the transaction that seals the rows written before it
-- (`services/secrets.rs`, `seal_plaintext`); only the start that removes it seals.
INSERT INTO service_secrets (name, value, created_at)
VALUES ('plaintext_secrets', 'to seal', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));

-- A rotated webhook secret keeps verifying for 24 hours: the one it replaced (sealed, same
-- scope as `webhook_secret`) and until when.
ALTER TABLE projects ADD COLUMN previous_webhook_secret TEXT;
ALTER TABLE projects ADD COLUMN previous_webhook_secret_until TEXT;
