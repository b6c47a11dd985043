-- Per project, status and type: how many events and their MRR. Kept by triggers in the same
-- transaction as every change, so list totals and statistics never scan a project's events.

CREATE TABLE churn_event_counts (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    status     TEXT NOT NULL,
    event_type TEXT NOT NULL,
    n          INTEGER NOT NULL,
    mrr_sum    INTEGER NOT NULL,
    PRIMARY KEY (project_id, status, event_type)
);

INSERT INTO churn_event_counts (project_id, status, event_type, n, mrr_sum)
SELECT project_id, status, event_type, COUNT(*), COALESCE(SUM(mrr), 0)
FROM churn_events GROUP BY project_id, status, event_type;

CREATE TRIGGER churn_events_counted_insert AFTER INSERT ON churn_events
BEGIN
    INSERT INTO churn_event_counts (project_id, status, event_type, n, mrr_sum)
    VALUES (NEW.project_id, NEW.status, NEW.event_type, 1, COALESCE(NEW.mrr, 0))
    ON CONFLICT (project_id, status, event_type) DO UPDATE SET n = n + 1, mrr_sum = mrr_sum + excluded.mrr_sum;
END;

CREATE TRIGGER churn_events_counted_update AFTER UPDATE OF status, event_type, mrr ON churn_events
BEGIN
    UPDATE churn_event_counts SET n = n - 1, mrr_sum = mrr_sum - COALESCE(OLD.mrr, 0)
    WHERE project_id = OLD.project_id AND status = OLD.status AND event_type = OLD.event_type;
    INSERT INTO churn_event_counts (project_id, status, event_type, n, mrr_sum)
    VALUES (NEW.project_id, NEW.status, NEW.event_type, 1, COALESCE(NEW.mrr, 0))
    ON CONFLICT (project_id, status, event_type) DO UPDATE SET n = n + 1, mrr_sum = mrr_sum + excluded.mrr_sum;
END;

CREATE TRIGGER churn_events_counted_delete AFTER DELETE ON churn_events
BEGIN
    UPDATE churn_event_counts SET n = n - 1, mrr_sum = mrr_sum - COALESCE(OLD.mrr, 0)
    WHERE project_id = OLD.project_id AND status = OLD.status AND event_type = OLD.event_type;
END;
