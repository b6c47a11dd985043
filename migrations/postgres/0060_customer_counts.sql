-- The customer and churn-risk lists, and scoring runs, of a large project (decisions §8, §9)
-- without scanning it.

-- Highest risk first, insufficient data last, ties by email: the risk lists' order, read
-- from the index instead of sorting every customer of the project.
CREATE INDEX customers_by_risk_rank ON customers (project_id, (risk_score IS NULL), risk_score DESC, email);

-- Per project: how many customers (`key` 'customer') and how many with a latest churn-risk
-- score, per level (`risk_<level>`, `risk_none` for insufficient data) — a latest score being
-- the `risk_scores` row of the customer's `risk_day`, as the risk list joins it. Kept by
-- triggers in the same transaction as every change, so list totals read a few rows. A
-- project's counts are spread over shards (`count_shard`), so concurrent writers (tracking,
-- provider events, scoring) seldom queue on one row lock; readers add them up.
CREATE TABLE customer_counts (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    shard      INTEGER NOT NULL,
    key        TEXT NOT NULL,
    n          BIGINT NOT NULL,
    PRIMARY KEY (project_id, shard, key)
);

-- The shard a transaction writes its count changes to (here and 0061): one of 64, by its
-- server process, so each transaction holds one row per key (no two transactions can lock
-- count rows in opposite orders) and concurrent ones seldom meet on one.
CREATE FUNCTION count_shard() RETURNS INTEGER LANGUAGE sql AS $$
    SELECT pg_backend_pid() & 63
$$;

INSERT INTO customer_counts (project_id, shard, key, n)
SELECT project_id, 0, 'customer', COUNT(*) FROM customers GROUP BY 1;
INSERT INTO customer_counts (project_id, shard, key, n)
SELECT c.project_id, 0, 'risk_' || COALESCE(c.risk_level, 'none'), COUNT(*)
FROM customers c JOIN risk_scores r ON r.project_id = c.project_id AND r.customer_email = c.email AND r.day = c.risk_day
GROUP BY 1, 3;

-- Adds `p_d` (negative too: a shard's count may go below zero, the sum is what counts) to a
-- count, unless the project is being deleted (its count rows go with it).
CREATE FUNCTION customer_count_add(p_project TEXT, p_key TEXT, p_d BIGINT) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO customer_counts (project_id, shard, key, n)
    SELECT p_project, count_shard(), p_key, p_d WHERE EXISTS (SELECT 1 FROM projects WHERE id = p_project)
    ON CONFLICT (project_id, shard, key) DO UPDATE SET n = customer_counts.n + EXCLUDED.n
$$;

-- Whether the customer's latest score row exists (the risk list's join).
CREATE FUNCTION customer_scored(p_project TEXT, p_email TEXT, p_day TEXT) RETURNS BOOLEAN
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM risk_scores r
                   WHERE r.project_id = p_project AND r.customer_email = p_email AND r.day = p_day)
$$;

CREATE FUNCTION customers_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.risk_day IS NOT DISTINCT FROM NEW.risk_day
       AND OLD.risk_level IS NOT DISTINCT FROM NEW.risk_level THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        PERFORM customer_count_add(NEW.project_id, 'customer', 1);
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM customer_count_add(OLD.project_id, 'customer', -1);
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.risk_day IS NOT NULL
       AND customer_scored(OLD.project_id, OLD.email, OLD.risk_day) THEN
        PERFORM customer_count_add(OLD.project_id, 'risk_' || COALESCE(OLD.risk_level, 'none'), -1);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.risk_day IS NOT NULL
       AND customer_scored(NEW.project_id, NEW.email, NEW.risk_day) THEN
        PERFORM customer_count_add(NEW.project_id, 'risk_' || COALESCE(NEW.risk_level, 'none'), 1);
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER customers_counted AFTER INSERT OR DELETE OR UPDATE OF risk_day, risk_level ON customers
FOR EACH ROW EXECUTE FUNCTION customers_count();

-- A score row appearing or going away for the day a customer points at.
CREATE FUNCTION risk_scores_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r risk_scores%ROWTYPE;
    v_key TEXT;
BEGIN
    IF TG_OP = 'INSERT' THEN r := NEW; ELSE r := OLD; END IF;
    SELECT 'risk_' || COALESCE(c.risk_level, 'none') INTO v_key FROM customers c
    WHERE c.project_id = r.project_id AND c.email = r.customer_email AND c.risk_day = r.day;
    IF FOUND THEN
        PERFORM customer_count_add(r.project_id, v_key, CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END);
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER risk_scores_counted AFTER INSERT OR DELETE ON risk_scores
FOR EACH ROW EXECUTE FUNCTION risk_scores_count();

-- A customer's latest alert, read for every customer a scoring run scores at or above the
-- threshold: with `id` in the index it answers the query's whole order, so the planner no
-- longer prefers walking all the project's alerts by time (quadratic in a large project).
DROP INDEX risk_alerts_by_customer;
CREATE INDEX risk_alerts_by_customer ON risk_alerts (project_id, customer_email, created_at, id);

-- The kept risk counts look up a customer's score of one day for every score written. With
-- `customer_email` in it this index answers that lookup exactly too: statistics taken while
-- the table was small (a first large scoring run) made PostgreSQL read the lookup from it
-- and walk every score of the day, per customer (quadratic).
DROP INDEX risk_scores_by_day;
CREATE INDEX risk_scores_by_day ON risk_scores (project_id, day, customer_email);
