-- Per project, status and type: how many events and their MRR. Kept by a trigger in the same
-- transaction as every change, so list totals and statistics never scan a project's events.

CREATE TABLE churn_event_counts (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    status     TEXT NOT NULL,
    event_type TEXT NOT NULL,
    n          BIGINT NOT NULL,
    mrr_sum    BIGINT NOT NULL,
    PRIMARY KEY (project_id, status, event_type)
);

INSERT INTO churn_event_counts (project_id, status, event_type, n, mrr_sum)
SELECT project_id, status, event_type, COUNT(*), COALESCE(SUM(mrr), 0)
FROM churn_events GROUP BY project_id, status, event_type;

CREATE FUNCTION churn_events_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE churn_event_counts SET n = n - 1, mrr_sum = mrr_sum - COALESCE(OLD.mrr, 0)
        WHERE project_id = OLD.project_id AND status = OLD.status AND event_type = OLD.event_type;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        INSERT INTO churn_event_counts (project_id, status, event_type, n, mrr_sum)
        VALUES (NEW.project_id, NEW.status, NEW.event_type, 1, COALESCE(NEW.mrr, 0))
        ON CONFLICT (project_id, status, event_type)
        DO UPDATE SET n = churn_event_counts.n + 1, mrr_sum = churn_event_counts.mrr_sum + EXCLUDED.mrr_sum;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER churn_events_counted AFTER INSERT OR DELETE OR UPDATE OF status, event_type, mrr ON churn_events
FOR EACH ROW EXECUTE FUNCTION churn_events_count();
