-- PostgreSQL spreads a project's kept event counts and cohorts over shards here, so concurrent
-- writers do not queue on one row lock. SQLite has a single writer: nothing to change.
SELECT 1;
