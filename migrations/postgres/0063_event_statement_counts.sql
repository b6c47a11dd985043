-- New churn events are counted once per statement, not once per row (as 0062 did for
-- customers). Inbound provider events are written in groups, one insert for a group's churn
-- events; a row trigger then updated the same count and cohort rows once per event, each
-- update a new row version found by walking the earlier ones, and called the cohort's
-- strategy function (an SQL function with a subquery, planned again on every call) per row.
-- Updates and deletes, one event at a time, keep their row triggers.

DROP TRIGGER churn_events_counted ON churn_events;
DROP TRIGGER churn_cohorts_counted ON churn_events;

-- The row functions of 0061, now for updates and deletes only.
CREATE OR REPLACE FUNCTION churn_events_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO churn_event_counts (project_id, status, event_type, shard, n, mrr_sum)
    SELECT OLD.project_id, OLD.status, OLD.event_type, count_shard(), -1, -COALESCE(OLD.mrr, 0)
    WHERE EXISTS (SELECT 1 FROM projects WHERE id = OLD.project_id)
    ON CONFLICT (project_id, status, event_type, shard)
    DO UPDATE SET n = churn_event_counts.n + EXCLUDED.n, mrr_sum = churn_event_counts.mrr_sum + EXCLUDED.mrr_sum;
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO churn_event_counts (project_id, status, event_type, shard, n, mrr_sum)
        VALUES (NEW.project_id, NEW.status, NEW.event_type, count_shard(), 1, COALESCE(NEW.mrr, 0))
        ON CONFLICT (project_id, status, event_type, shard)
        DO UPDATE SET n = churn_event_counts.n + 1, mrr_sum = churn_event_counts.mrr_sum + EXCLUDED.mrr_sum;
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION churn_cohorts_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO churn_cohorts (project_id, month, status, strategy, shard, n, mrr_sum)
    SELECT OLD.project_id, substr(OLD.created_at, 1, 7), OLD.status,
           churn_cohort_strategy(OLD.id, OLD.status), count_shard(), -1, -COALESCE(OLD.mrr, 0)
    WHERE EXISTS (SELECT 1 FROM projects WHERE id = OLD.project_id)
    ON CONFLICT (project_id, month, status, strategy, shard)
    DO UPDATE SET n = churn_cohorts.n + EXCLUDED.n, mrr_sum = churn_cohorts.mrr_sum + EXCLUDED.mrr_sum;
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO churn_cohorts (project_id, month, status, strategy, shard, n, mrr_sum)
        VALUES (NEW.project_id, substr(NEW.created_at, 1, 7), NEW.status,
                churn_cohort_strategy(NEW.id, NEW.status), count_shard(), 1, COALESCE(NEW.mrr, 0))
        ON CONFLICT (project_id, month, status, strategy, shard)
        DO UPDATE SET n = churn_cohorts.n + 1, mrr_sum = churn_cohorts.mrr_sum + EXCLUDED.mrr_sum;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER churn_events_counted AFTER DELETE OR UPDATE OF status, event_type, mrr ON churn_events
FOR EACH ROW EXECUTE FUNCTION churn_events_count();
CREATE TRIGGER churn_cohorts_counted AFTER DELETE OR UPDATE OF status, mrr ON churn_events
FOR EACH ROW EXECUTE FUNCTION churn_cohorts_count();

-- Each key's change once per statement, in key order (two groups of other processes wait for
-- each other's shard rows instead of deadlocking). An event inserted as recovered (imports)
-- counts under the strategy `churn_cohort_strategy` gives, joined instead of called.
CREATE FUNCTION churn_events_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO churn_event_counts (project_id, status, event_type, shard, n, mrr_sum)
    SELECT project_id, status, event_type, count_shard(), COUNT(*), COALESCE(SUM(mrr), 0)
    FROM changed_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (project_id, status, event_type, shard)
    DO UPDATE SET n = churn_event_counts.n + EXCLUDED.n, mrr_sum = churn_event_counts.mrr_sum + EXCLUDED.mrr_sum;
    INSERT INTO churn_cohorts (project_id, month, status, strategy, shard, n, mrr_sum)
    SELECT e.project_id, substr(e.created_at, 1, 7), e.status, COALESCE(s.strategy, ''), count_shard(),
           COUNT(*), COALESCE(SUM(e.mrr), 0)
    FROM changed_rows e
    LEFT JOIN LATERAL (
        SELECT v.strategy FROM recovery_variants v
        WHERE e.status = 'recovered' AND v.churn_event_id = e.id AND v.sent_at IS NOT NULL
        ORDER BY v.sent_at DESC, v.id DESC LIMIT 1
    ) s ON true
    GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (project_id, month, status, strategy, shard)
    DO UPDATE SET n = churn_cohorts.n + EXCLUDED.n, mrr_sum = churn_cohorts.mrr_sum + EXCLUDED.mrr_sum;
    RETURN NULL;
END;
$$;

CREATE TRIGGER churn_events_counted_insert AFTER INSERT ON churn_events
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION churn_events_count_inserted();
