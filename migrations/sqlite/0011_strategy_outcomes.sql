-- Per project and strategy: sent variants and how many of their events were recovered. Kept by
-- triggers in the same transaction as every change, so ranking a new event reads nine rows
-- instead of aggregating the project's whole send history.

CREATE TABLE strategy_outcomes (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    strategy   TEXT NOT NULL,
    sends      INTEGER NOT NULL,
    recoveries INTEGER NOT NULL,
    PRIMARY KEY (project_id, strategy)
);

INSERT INTO strategy_outcomes (project_id, strategy, sends, recoveries)
SELECT v.project_id, v.strategy, COUNT(*), SUM(CASE WHEN e.status = 'recovered' THEN 1 ELSE 0 END)
FROM recovery_variants v JOIN churn_events e ON e.id = v.churn_event_id
WHERE v.sent_at IS NOT NULL
GROUP BY v.project_id, v.strategy;

CREATE TRIGGER strategy_outcomes_sent AFTER UPDATE OF sent_at ON recovery_variants
WHEN OLD.sent_at IS NULL AND NEW.sent_at IS NOT NULL
BEGIN
    INSERT INTO strategy_outcomes (project_id, strategy, sends, recoveries)
    VALUES (NEW.project_id, NEW.strategy, 1,
            (SELECT COUNT(*) FROM churn_events WHERE id = NEW.churn_event_id AND status = 'recovered'))
    ON CONFLICT (project_id, strategy) DO UPDATE
    SET sends = sends + 1, recoveries = recoveries + excluded.recoveries;
END;

CREATE TRIGGER strategy_outcomes_unsent AFTER UPDATE OF sent_at ON recovery_variants
WHEN OLD.sent_at IS NOT NULL AND NEW.sent_at IS NULL
BEGIN
    UPDATE strategy_outcomes
    SET sends = sends - 1,
        recoveries = recoveries - (SELECT COUNT(*) FROM churn_events WHERE id = OLD.churn_event_id AND status = 'recovered')
    WHERE project_id = OLD.project_id AND strategy = OLD.strategy;
END;

CREATE TRIGGER strategy_outcomes_deleted AFTER DELETE ON recovery_variants
WHEN OLD.sent_at IS NOT NULL
BEGIN
    UPDATE strategy_outcomes
    SET sends = sends - 1,
        recoveries = recoveries - (SELECT COUNT(*) FROM churn_events WHERE id = OLD.churn_event_id AND status = 'recovered')
    WHERE project_id = OLD.project_id AND strategy = OLD.strategy;
END;

CREATE TRIGGER strategy_outcomes_recovered AFTER UPDATE OF status ON churn_events
WHEN (OLD.status = 'recovered') <> (NEW.status = 'recovered')
BEGIN
    UPDATE strategy_outcomes
    SET recoveries = recoveries + (CASE WHEN NEW.status = 'recovered' THEN 1 ELSE -1 END) * (
        SELECT COUNT(*) FROM recovery_variants v
        WHERE v.churn_event_id = NEW.id AND v.strategy = strategy_outcomes.strategy AND v.sent_at IS NOT NULL)
    WHERE project_id = NEW.project_id AND strategy IN (
        SELECT strategy FROM recovery_variants WHERE churn_event_id = NEW.id AND sent_at IS NOT NULL);
END;
