-- Per project, calendar month of creation (UTC, `YYYY-MM`), status and attributed strategy:
-- how many events and their MRR. Kept by triggers in the same transaction as every change, so
-- cohorts and forecasts read at most a few hundred rows whatever the number of events.
-- `strategy` is the strategy of the last variant sent before a recovered event's recovery
-- (decisions §13), and '' for every other row.

CREATE TABLE churn_cohorts (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    month      TEXT NOT NULL,
    status     TEXT NOT NULL,
    strategy   TEXT NOT NULL,
    n          INTEGER NOT NULL,
    mrr_sum    INTEGER NOT NULL,
    PRIMARY KEY (project_id, month, status, strategy)
);

INSERT INTO churn_cohorts (project_id, month, status, strategy, n, mrr_sum)
SELECT project_id, month, status, strategy, COUNT(*), COALESCE(SUM(mrr), 0) FROM (
    SELECT e.project_id, substr(e.created_at, 1, 7) AS month, e.status, e.mrr,
           CASE WHEN e.status = 'recovered' THEN COALESCE((
               SELECT v.strategy FROM recovery_variants v
               WHERE v.churn_event_id = e.id AND v.sent_at IS NOT NULL
               ORDER BY v.sent_at DESC, v.id DESC LIMIT 1), '') ELSE '' END AS strategy
    FROM churn_events e) t
GROUP BY project_id, month, status, strategy;

CREATE TRIGGER churn_cohorts_insert AFTER INSERT ON churn_events
BEGIN
    INSERT INTO churn_cohorts (project_id, month, status, strategy, n, mrr_sum)
    VALUES (NEW.project_id, substr(NEW.created_at, 1, 7), NEW.status, '', 1, COALESCE(NEW.mrr, 0))
    ON CONFLICT (project_id, month, status, strategy)
    DO UPDATE SET n = n + 1, mrr_sum = mrr_sum + excluded.mrr_sum;
END;

CREATE TRIGGER churn_cohorts_update AFTER UPDATE OF status, mrr ON churn_events
BEGIN
    UPDATE churn_cohorts SET n = n - 1, mrr_sum = mrr_sum - COALESCE(OLD.mrr, 0)
    WHERE project_id = OLD.project_id AND month = substr(OLD.created_at, 1, 7) AND status = OLD.status
      AND strategy = CASE WHEN OLD.status = 'recovered' THEN COALESCE((
          SELECT v.strategy FROM recovery_variants v
          WHERE v.churn_event_id = OLD.id AND v.sent_at IS NOT NULL
          ORDER BY v.sent_at DESC, v.id DESC LIMIT 1), '') ELSE '' END;
    INSERT INTO churn_cohorts (project_id, month, status, strategy, n, mrr_sum)
    VALUES (NEW.project_id, substr(NEW.created_at, 1, 7), NEW.status,
            CASE WHEN NEW.status = 'recovered' THEN COALESCE((
                SELECT v.strategy FROM recovery_variants v
                WHERE v.churn_event_id = NEW.id AND v.sent_at IS NOT NULL
                ORDER BY v.sent_at DESC, v.id DESC LIMIT 1), '') ELSE '' END,
            1, COALESCE(NEW.mrr, 0))
    ON CONFLICT (project_id, month, status, strategy)
    DO UPDATE SET n = n + 1, mrr_sum = mrr_sum + excluded.mrr_sum;
END;

CREATE TRIGGER churn_cohorts_delete AFTER DELETE ON churn_events
BEGIN
    UPDATE churn_cohorts SET n = n - 1, mrr_sum = mrr_sum - COALESCE(OLD.mrr, 0)
    WHERE project_id = OLD.project_id AND month = substr(OLD.created_at, 1, 7) AND status = OLD.status
      AND strategy = CASE WHEN OLD.status = 'recovered' THEN COALESCE((
          SELECT v.strategy FROM recovery_variants v
          WHERE v.churn_event_id = OLD.id AND v.sent_at IS NOT NULL
          ORDER BY v.sent_at DESC, v.id DESC LIMIT 1), '') ELSE '' END;
END;
