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

DROP TRIGGER strategy_outcomes_sent;
DROP TRIGGER strategy_outcomes_unsent;
DROP TRIGGER strategy_outcomes_deleted;
DROP TRIGGER strategy_outcomes_recovered;
DROP TABLE strategy_outcomes;

CREATE TRIGGER strategy_days_sent AFTER UPDATE OF sent_at ON recovery_variants
WHEN OLD.sent_at IS NULL AND NEW.sent_at IS NOT NULL
BEGIN
    INSERT INTO strategy_days (project_id, strategy, day, sends, recoveries)
    VALUES (NEW.project_id, NEW.strategy, substr(NEW.sent_at, 1, 10), 1,
            (SELECT COUNT(*) FROM churn_events WHERE id = NEW.churn_event_id AND status = 'recovered'))
    ON CONFLICT (project_id, day, strategy) DO UPDATE
    SET sends = sends + 1, recoveries = recoveries + excluded.recoveries;
END;

CREATE TRIGGER strategy_days_unsent AFTER UPDATE OF sent_at ON recovery_variants
WHEN OLD.sent_at IS NOT NULL AND NEW.sent_at IS NULL
BEGIN
    UPDATE strategy_days
    SET sends = sends - 1,
        recoveries = recoveries - (SELECT COUNT(*) FROM churn_events WHERE id = OLD.churn_event_id AND status = 'recovered')
    WHERE project_id = OLD.project_id AND day = substr(OLD.sent_at, 1, 10) AND strategy = OLD.strategy;
END;

CREATE TRIGGER strategy_days_deleted AFTER DELETE ON recovery_variants
WHEN OLD.sent_at IS NOT NULL
BEGIN
    UPDATE strategy_days
    SET sends = sends - 1,
        recoveries = recoveries - (SELECT COUNT(*) FROM churn_events WHERE id = OLD.churn_event_id AND status = 'recovered')
    WHERE project_id = OLD.project_id AND day = substr(OLD.sent_at, 1, 10) AND strategy = OLD.strategy;
END;

CREATE TRIGGER strategy_days_recovered AFTER UPDATE OF status ON churn_events
WHEN (OLD.status = 'recovered') <> (NEW.status = 'recovered')
BEGIN
    UPDATE strategy_days
    SET recoveries = recoveries + (CASE WHEN NEW.status = 'recovered' THEN 1 ELSE -1 END) * (
        SELECT COUNT(*) FROM recovery_variants v
        WHERE v.churn_event_id = NEW.id AND v.strategy = strategy_days.strategy
          AND substr(v.sent_at, 1, 10) = strategy_days.day)
    WHERE project_id = NEW.project_id AND (day, strategy) IN (
        SELECT substr(sent_at, 1, 10), strategy FROM recovery_variants
        WHERE churn_event_id = NEW.id AND sent_at IS NOT NULL);
END;
