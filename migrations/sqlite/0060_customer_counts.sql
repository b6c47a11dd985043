-- The customer and churn-risk lists, and scoring runs, of a large project (decisions §8, §9)
-- without scanning it.

-- Highest risk first, insufficient data last, ties by email: the risk lists' order, read
-- from the index instead of sorting every customer of the project.
CREATE INDEX customers_by_risk_rank ON customers (project_id, (risk_score IS NULL), risk_score DESC, email);

-- Per project: how many customers (`key` 'customer') and how many with a latest churn-risk
-- score, per level (`risk_<level>`, `risk_none` for insufficient data) — a latest score being
-- the `risk_scores` row of the customer's `risk_day`, as the risk list joins it. Kept by
-- triggers in the same transaction as every change, so list totals read a few rows. `shard`
-- spreads a project over several rows on PostgreSQL, where concurrent writers would otherwise
-- queue on one row lock; SQLite has one writer and one shard (0).
CREATE TABLE customer_counts (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    shard      INTEGER NOT NULL,
    key        TEXT NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (project_id, shard, key)
);

INSERT INTO customer_counts (project_id, shard, key, n)
SELECT project_id, 0, 'customer', COUNT(*) FROM customers GROUP BY project_id;
INSERT INTO customer_counts (project_id, shard, key, n)
SELECT c.project_id, 0, 'risk_' || COALESCE(c.risk_level, 'none'), COUNT(*)
FROM customers c JOIN risk_scores r ON r.project_id = c.project_id AND r.customer_email = c.email AND r.day = c.risk_day
GROUP BY c.project_id, c.risk_level;

-- Decrements only update: a project being deleted may have lost its count rows already.
CREATE TRIGGER customers_counted_insert AFTER INSERT ON customers
BEGIN
    INSERT INTO customer_counts (project_id, shard, key, n) VALUES (NEW.project_id, 0, 'customer', 1)
    ON CONFLICT (project_id, shard, key) DO UPDATE SET n = n + 1;
    INSERT INTO customer_counts (project_id, shard, key, n)
    SELECT NEW.project_id, 0, 'risk_' || COALESCE(NEW.risk_level, 'none'), 1
    WHERE EXISTS (SELECT 1 FROM risk_scores r WHERE r.project_id = NEW.project_id
                  AND r.customer_email = NEW.email AND r.day = NEW.risk_day)
    ON CONFLICT (project_id, shard, key) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER customers_counted_delete AFTER DELETE ON customers
BEGIN
    UPDATE customer_counts SET n = n - 1
    WHERE project_id = OLD.project_id AND shard = 0 AND key = 'customer';
    UPDATE customer_counts SET n = n - 1
    WHERE project_id = OLD.project_id AND shard = 0 AND key = 'risk_' || COALESCE(OLD.risk_level, 'none')
      AND EXISTS (SELECT 1 FROM risk_scores r WHERE r.project_id = OLD.project_id
                  AND r.customer_email = OLD.email AND r.day = OLD.risk_day);
END;

CREATE TRIGGER customers_counted_update AFTER UPDATE OF risk_day, risk_level ON customers
WHEN OLD.risk_day IS NOT NEW.risk_day OR OLD.risk_level IS NOT NEW.risk_level
BEGIN
    UPDATE customer_counts SET n = n - 1
    WHERE project_id = OLD.project_id AND shard = 0 AND key = 'risk_' || COALESCE(OLD.risk_level, 'none')
      AND EXISTS (SELECT 1 FROM risk_scores r WHERE r.project_id = OLD.project_id
                  AND r.customer_email = OLD.email AND r.day = OLD.risk_day);
    INSERT INTO customer_counts (project_id, shard, key, n)
    SELECT NEW.project_id, 0, 'risk_' || COALESCE(NEW.risk_level, 'none'), 1
    WHERE EXISTS (SELECT 1 FROM risk_scores r WHERE r.project_id = NEW.project_id
                  AND r.customer_email = NEW.email AND r.day = NEW.risk_day)
    ON CONFLICT (project_id, shard, key) DO UPDATE SET n = n + 1;
END;

-- A score row appearing or going away for the day a customer points at.
CREATE TRIGGER risk_scores_counted_insert AFTER INSERT ON risk_scores
BEGIN
    INSERT INTO customer_counts (project_id, shard, key, n)
    SELECT c.project_id, 0, 'risk_' || COALESCE(c.risk_level, 'none'), 1 FROM customers c
    WHERE c.project_id = NEW.project_id AND c.email = NEW.customer_email AND c.risk_day = NEW.day
    ON CONFLICT (project_id, shard, key) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER risk_scores_counted_delete AFTER DELETE ON risk_scores
BEGIN
    UPDATE customer_counts SET n = n - 1
    WHERE project_id = OLD.project_id AND shard = 0 AND key = (
        SELECT 'risk_' || COALESCE(c.risk_level, 'none') FROM customers c
        WHERE c.project_id = OLD.project_id AND c.email = OLD.customer_email AND c.risk_day = OLD.day);
END;

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
