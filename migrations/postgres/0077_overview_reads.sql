-- Reads of the overview at 1,000,000 events (issue 21).
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

-- Sends and recoveries per strategy by the UTC day of the send, in place of the all-time
-- strategy_outcomes: ranking sums a project's days, the overview a period's (decisions §17,
-- "strategy performance"), without joining every send of the period to its event. A send
-- counts as recovered while its event is recovered; sent_at is set once, never moved.
CREATE TABLE strategy_days (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    strategy   TEXT NOT NULL,
    day        TEXT NOT NULL,
    sends      BIGINT NOT NULL,
    recoveries BIGINT NOT NULL,
    PRIMARY KEY (project_id, day, strategy)
);

INSERT INTO strategy_days (project_id, strategy, day, sends, recoveries)
SELECT v.project_id, v.strategy, substr(v.sent_at, 1, 10), COUNT(*),
       SUM(CASE WHEN e.status = 'recovered' THEN 1 ELSE 0 END)
FROM recovery_variants v JOIN churn_events e ON e.id = v.churn_event_id
WHERE v.sent_at IS NOT NULL
GROUP BY v.project_id, v.strategy, substr(v.sent_at, 1, 10);

DROP TABLE strategy_outcomes;

-- The old strategy_outcomes triggers stay until 0080 replaces them with strategy_days'
-- (every kept count in one place); nothing writes between the two migrations.
