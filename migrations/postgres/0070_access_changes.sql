-- One row counting changes to access (projects, memberships, keys, session versions, provider
-- connections, dunning configurations): every such change adds one in its own transaction.
-- PostgreSQL processes learn of changes by NOTIFY; the row is kept on both backends so the
-- schemas and the statement that announces a change stay the same.
CREATE TABLE access_changes (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version BIGINT NOT NULL
);
INSERT INTO access_changes (id, version) VALUES (1, 0);
