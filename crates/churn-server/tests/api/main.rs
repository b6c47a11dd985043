//! API integration tests: the real server on port 0, a fresh database per test, every test
//! run on SQLite and on PostgreSQL.

mod helpers;

mod accounts;
mod behavior;
mod cancel_flow;
mod conventions;
mod email;
mod events;
mod idempotency;
mod idp;
mod logging;
mod mailrules;
mod operations;
mod projects;
mod risk;
mod sending;
mod tenancy;
mod transport;
mod wire;
