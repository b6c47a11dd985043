-- The event counts (0003) and cohorts (0051) of a project, spread over shards by a hash of the
-- customer's email (`count_shard` of 0060), like the customer counts. Before, every new event
-- of a project updated the same count and cohort rows, and held their row locks until its
-- transaction committed (a WAL flush): inbound provider events and churn events of one project
-- were taken one at a time. A customer's events share a shard, so a transaction changing
-- several events of one customer locks one row per key. Readers add the shards up. Existing
-- counts are recounted into their shards.

ALTER TABLE churn_event_counts ADD COLUMN shard INTEGER NOT NULL DEFAULT 0;
ALTER TABLE churn_event_counts DROP CONSTRAINT churn_event_counts_pkey;
DELETE FROM churn_event_counts;
INSERT INTO churn_event_counts (project_id, status, event_type, shard, n, mrr_sum)
SELECT project_id, status, event_type, count_shard(customer_email), COUNT(*), COALESCE(SUM(mrr), 0)
FROM churn_events GROUP BY 1, 2, 3, 4;
ALTER TABLE churn_event_counts ADD PRIMARY KEY (project_id, status, event_type, shard);
ALTER TABLE churn_event_counts ALTER COLUMN shard DROP DEFAULT;

ALTER TABLE churn_cohorts ADD COLUMN shard INTEGER NOT NULL DEFAULT 0;
ALTER TABLE churn_cohorts DROP CONSTRAINT churn_cohorts_pkey;
DELETE FROM churn_cohorts;
INSERT INTO churn_cohorts (project_id, month, status, strategy, shard, n, mrr_sum)
SELECT project_id, substr(created_at, 1, 7), status, churn_cohort_strategy(id, status),
       count_shard(customer_email), COUNT(*), COALESCE(SUM(mrr), 0)
FROM churn_events GROUP BY 1, 2, 3, 4, 5;
ALTER TABLE churn_cohorts ADD PRIMARY KEY (project_id, month, status, strategy, shard);
ALTER TABLE churn_cohorts ALTER COLUMN shard DROP DEFAULT;

CREATE OR REPLACE FUNCTION churn_events_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE churn_event_counts SET n = n - 1, mrr_sum = mrr_sum - COALESCE(OLD.mrr, 0)
        WHERE project_id = OLD.project_id AND status = OLD.status AND event_type = OLD.event_type
          AND shard = count_shard(OLD.customer_email);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        INSERT INTO churn_event_counts (project_id, status, event_type, shard, n, mrr_sum)
        VALUES (NEW.project_id, NEW.status, NEW.event_type, count_shard(NEW.customer_email), 1, COALESCE(NEW.mrr, 0))
        ON CONFLICT (project_id, status, event_type, shard)
        DO UPDATE SET n = churn_event_counts.n + 1, mrr_sum = churn_event_counts.mrr_sum + EXCLUDED.mrr_sum;
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION churn_cohorts_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE churn_cohorts SET n = n - 1, mrr_sum = mrr_sum - COALESCE(OLD.mrr, 0)
        WHERE project_id = OLD.project_id AND month = substr(OLD.created_at, 1, 7)
          AND status = OLD.status AND strategy = churn_cohort_strategy(OLD.id, OLD.status)
          AND shard = count_shard(OLD.customer_email);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        INSERT INTO churn_cohorts (project_id, month, status, strategy, shard, n, mrr_sum)
        VALUES (NEW.project_id, substr(NEW.created_at, 1, 7), NEW.status,
                churn_cohort_strategy(NEW.id, NEW.status), count_shard(NEW.customer_email), 1, COALESCE(NEW.mrr, 0))
        ON CONFLICT (project_id, month, status, strategy, shard)
        DO UPDATE SET n = churn_cohorts.n + 1, mrr_sum = churn_cohorts.mrr_sum + EXCLUDED.mrr_sum;
    END IF;
    RETURN NULL;
END;
$$;
