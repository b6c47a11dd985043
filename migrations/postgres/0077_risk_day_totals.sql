-- Customers at high or critical risk on a day scores were written, and their known MRR
-- (decisions §17, the overview's "MRR at risk" and its sparkline; issue 21). Reading it from
-- every customer's latest score took a lookup per risky customer; scores only change in a
-- scoring run, so the run keeps the day's figure here when it ends, and a day read before any
-- run kept it is filled once from the scores. Kept past the 90 days of risk_scores.
CREATE TABLE risk_day_totals (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    day        TEXT NOT NULL,
    customers  BIGINT NOT NULL,
    mrr_cents  BIGINT NOT NULL,
    PRIMARY KEY (project_id, day)
);
