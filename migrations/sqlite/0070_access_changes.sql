-- One row counting changes to access (projects, memberships, keys, session versions, provider
-- connections, dunning configurations): every such change adds one in its own transaction.
-- SQLite has no NOTIFY, so a server process reads it before trusting its cache of access
-- decisions; a revocation made by another process (the admin CLI, a second server) then
-- holds on that process's next request.
CREATE TABLE access_changes (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
INSERT INTO access_changes (id, version) VALUES (1, 0);
