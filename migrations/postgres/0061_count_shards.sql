-- The event counts (0003) and cohorts (0051) of a project, spread over shards
-- (`count_shard` of 0060: by server process), like the customer counts. Before, every new
-- event of a project updated the same count and cohort rows, and held their row locks until
-- its transaction committed (a WAL flush): inbound provider events and churn events of one
-- project were taken one at a time. A transaction writes all its changes to its own shard,
-- so it holds one row per key; a shard's count may go below zero (an event counted in one
-- shard and changed from another), readers add the shards up. Existing counts move to shard 0.

ALTER TABLE churn_event_counts ADD COLUMN shard INTEGER NOT NULL DEFAULT 0;
ALTER TABLE churn_event_counts DROP CONSTRAINT churn_event_counts_pkey;
ALTER TABLE churn_event_counts ADD PRIMARY KEY (project_id, status, event_type, shard);
ALTER TABLE churn_event_counts ALTER COLUMN shard DROP DEFAULT;

ALTER TABLE churn_cohorts ADD COLUMN shard INTEGER NOT NULL DEFAULT 0;
ALTER TABLE churn_cohorts DROP CONSTRAINT churn_cohorts_pkey;
ALTER TABLE churn_cohorts ADD PRIMARY KEY (project_id, month, status, strategy, shard);
ALTER TABLE churn_cohorts ALTER COLUMN shard DROP DEFAULT;

-- Decrements insert too (a shard may not hold the row yet), unless the project is being
-- deleted (its count rows go with it).
CREATE OR REPLACE FUNCTION churn_events_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        INSERT INTO churn_event_counts (project_id, status, event_type, shard, n, mrr_sum)
        SELECT OLD.project_id, OLD.status, OLD.event_type, count_shard(), -1, -COALESCE(OLD.mrr, 0)
        WHERE EXISTS (SELECT 1 FROM projects WHERE id = OLD.project_id)
        ON CONFLICT (project_id, status, event_type, shard)
        DO UPDATE SET n = churn_event_counts.n + EXCLUDED.n, mrr_sum = churn_event_counts.mrr_sum + EXCLUDED.mrr_sum;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
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
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        INSERT INTO churn_cohorts (project_id, month, status, strategy, shard, n, mrr_sum)
        SELECT OLD.project_id, substr(OLD.created_at, 1, 7), OLD.status,
               churn_cohort_strategy(OLD.id, OLD.status), count_shard(), -1, -COALESCE(OLD.mrr, 0)
        WHERE EXISTS (SELECT 1 FROM projects WHERE id = OLD.project_id)
        ON CONFLICT (project_id, month, status, strategy, shard)
        DO UPDATE SET n = churn_cohorts.n + EXCLUDED.n, mrr_sum = churn_cohorts.mrr_sum + EXCLUDED.mrr_sum;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        INSERT INTO churn_cohorts (project_id, month, status, strategy, shard, n, mrr_sum)
        VALUES (NEW.project_id, substr(NEW.created_at, 1, 7), NEW.status,
                churn_cohort_strategy(NEW.id, NEW.status), count_shard(), 1, COALESCE(NEW.mrr, 0))
        ON CONFLICT (project_id, month, status, strategy, shard)
        DO UPDATE SET n = churn_cohorts.n + 1, mrr_sum = churn_cohorts.mrr_sum + EXCLUDED.mrr_sum;
    END IF;
    RETURN NULL;
END;
$$;
