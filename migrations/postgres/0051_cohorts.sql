-- Per project, calendar month of creation (UTC, `YYYY-MM`), status and attributed strategy:
-- how many events and their MRR. Kept by a trigger in the same transaction as every change, so
-- cohorts and forecasts read at most a few hundred rows whatever the number of events.
-- `strategy` is the strategy of the last variant sent before a recovered event's recovery
-- (decisions §13), and '' for every other row.

CREATE TABLE churn_cohorts (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    month      TEXT NOT NULL,
    status     TEXT NOT NULL,
    strategy   TEXT NOT NULL,
    n          BIGINT NOT NULL,
    mrr_sum    BIGINT NOT NULL,
    PRIMARY KEY (project_id, month, status, strategy)
);

-- The strategy a recovered event counts under; '' for any other status.
CREATE FUNCTION churn_cohort_strategy(event_id TEXT, status TEXT) RETURNS TEXT LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN status = 'recovered' THEN COALESCE((
        SELECT v.strategy FROM recovery_variants v
        WHERE v.churn_event_id = event_id AND v.sent_at IS NOT NULL
        ORDER BY v.sent_at DESC, v.id DESC LIMIT 1), '') ELSE '' END
$$;

INSERT INTO churn_cohorts (project_id, month, status, strategy, n, mrr_sum)
SELECT project_id, substr(created_at, 1, 7), status, churn_cohort_strategy(id, status),
       COUNT(*), COALESCE(SUM(mrr), 0)
FROM churn_events
GROUP BY project_id, substr(created_at, 1, 7), status, churn_cohort_strategy(id, status);

CREATE FUNCTION churn_cohorts_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE churn_cohorts SET n = n - 1, mrr_sum = mrr_sum - COALESCE(OLD.mrr, 0)
        WHERE project_id = OLD.project_id AND month = substr(OLD.created_at, 1, 7)
          AND status = OLD.status AND strategy = churn_cohort_strategy(OLD.id, OLD.status);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        INSERT INTO churn_cohorts (project_id, month, status, strategy, n, mrr_sum)
        VALUES (NEW.project_id, substr(NEW.created_at, 1, 7), NEW.status,
                churn_cohort_strategy(NEW.id, NEW.status), 1, COALESCE(NEW.mrr, 0))
        ON CONFLICT (project_id, month, status, strategy)
        DO UPDATE SET n = churn_cohorts.n + 1, mrr_sum = churn_cohorts.mrr_sum + EXCLUDED.mrr_sum;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER churn_cohorts_counted AFTER INSERT OR DELETE OR UPDATE OF status, mrr ON churn_events
FOR EACH ROW EXECUTE FUNCTION churn_cohorts_count();
