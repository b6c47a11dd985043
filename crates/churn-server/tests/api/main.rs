//! API integration tests: the real server on port 0, a fresh database per test, every test
//! run on SQLite and on PostgreSQL.

mod helpers;

mod accounts;
mod alerts;
mod analytics;
mod autopilot;
mod background;
mod behavior;
mod cancel_flow;
mod card_update;
mod contract;
mod conventions;
mod dashboard;
mod dashboard_analytics;
mod dashboard_cancel_flow;
mod dashboard_client;
mod dashboard_customers;
mod dashboard_pages;
mod dashboard_settings;
mod dunning;
mod email;
mod events;
mod fake_provider;
mod hostile;
mod idempotency;
mod idp;
mod limits;
mod logging;
mod mailrules;
mod operations;
mod projects;
mod promises;
mod providers;
mod restarts;
mod risk;
mod roles;
mod secrets;
mod sending;
mod startup;
mod team;
mod tenancy;
mod transport;
mod webhooks;
mod wire;
mod work_metrics;
