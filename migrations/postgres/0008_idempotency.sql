-- Answers to POSTs sent with an Idempotency-Key (decisions §3), kept for 24 hours.
CREATE TABLE idempotency_keys (
    -- SHA-256 (hex) of the caller's credential and the key: nobody else can name the row.
    scope         TEXT PRIMARY KEY,
    -- SHA-256 (hex) of method, path and body: a repeat must be the same request.
    fingerprint   TEXT NOT NULL,
    -- The attempt that holds the row while it runs.
    owner         TEXT NOT NULL,
    -- NULL while the first attempt runs; then the answer's status.
    status        BIGINT,
    content_type  TEXT,
    cache_control TEXT,
    -- The answer's body sealed with the service encryption key (it may hold tokens or keys).
    body          TEXT,
    -- A running attempt whose lease has passed is presumed dead and may be taken over.
    lease_until   TEXT,
    created_at    TEXT NOT NULL
);
CREATE INDEX idempotency_keys_by_created ON idempotency_keys (created_at);
