-- A project's connections to payment providers (providerA, providerB, custom). Credentials
-- are one AES-256-GCM sealed JSON document (base64 of nonce and ciphertext, the project and
-- provider as associated data); only their hints are kept in clear.
CREATE TABLE provider_connections (
    project_id  TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    provider    TEXT NOT NULL,
    credentials TEXT,
    hints       TEXT NOT NULL,
    api_base    TEXT,
    retry_url   TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (project_id, provider)
);
