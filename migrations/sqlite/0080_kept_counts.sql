-- Every kept count and the trigger that keeps it, in one place. Earlier migrations created
-- these triggers (0003, 0011, 0051, 0060); this file drops and recreates each of them, word
-- for word, creates those of 0077's strategy_days, and creates churn_event_days and
-- churn_event_emails (new here, filled from the events already stored), so a reader finds
-- every rule here.
-- The Rust side of the same list, with a recount of each count from its base tables, is
-- `crates/churn-core/src/store/kept_counts.rs` (`churn doctor` compares and repairs).
-- Changing a rule means a new migration that replaces the trigger here named, and the
-- recount beside it.
--
-- All counts are changed by AFTER triggers in the transaction of the change, one row at a
-- time (SQLite updates a row in place; PostgreSQL keeps the same rules per statement, see its
-- 0080). Decrements only update: while a project is deleted its count rows may be gone
-- already, and a decrement must not recreate them.
--
-- | count          | table              | counts, per key                                        |
-- |----------------|--------------------|--------------------------------------------------------|
-- | event totals   | churn_event_counts | churn_events per (project, status, event_type): n, mrr |
-- | strategy days  | strategy_days      | sent variants per (project, UTC day of sent_at,        |
-- |                |                    | strategy): sends, and sends whose event is recovered:  |
-- |                |                    | recoveries                                             |
-- | cohorts        | churn_cohorts      | churn_events per (project, month of created_at,        |
-- |                |                    | status, strategy): n, mrr; strategy is the last sent   |
-- |                |                    | variant's for a recovered event, '' otherwise          |
-- | event days     | churn_event_days   | churn_events per (project, kind, UTC day, reason):     |
-- |                |                    | n, mrr. Kinds: `created` (day of created_at, by        |
-- |                |                    | reason), `recovered` (recovered_at), `lost` (lost_at), |
-- |                |                    | `resolved` (the first of the two); reason '' but for   |
-- |                |                    | `created`                                              |
-- | event emails   | churn_event_emails | churn_events per (project, customer email): n          |
-- | customers      | customer_counts    | customers per project (key 'customer')                 |
-- | risk levels    | customer_counts    | customers whose latest score row (risk_scores of their |
-- |                |                    | risk_day) exists, per level (key 'risk_<level>',       |
-- |                |                    | 'risk_none' for insufficient data)                     |
--
-- What the rules assume of writers: an event is resolved no earlier than it is created (the
-- overview's "open at the period's end" is the created count less the resolved count up to
-- that day); a recovered event's sent variants do not change while it
-- is recovered (its cohort strategy is read again when it moves or goes), so a recovered
-- event is made lost before its variants are deleted (`store::demo::delete_events`); variants
-- are inserted unsent and counted when `sent_at` is set.

DROP TRIGGER churn_events_counted_insert;
DROP TRIGGER churn_events_counted_update;
DROP TRIGGER churn_events_counted_delete;
DROP TRIGGER churn_cohorts_insert;
DROP TRIGGER churn_cohorts_update;
DROP TRIGGER churn_cohorts_delete;
DROP TRIGGER customers_counted_insert;
DROP TRIGGER customers_counted_delete;
DROP TRIGGER customers_counted_update;
DROP TRIGGER risk_scores_counted_insert;
DROP TRIGGER risk_scores_counted_delete;

-- Event totals (churn_event_counts): an event counts once under its status and type, with
-- its MRR (NULL as 0); a change of status, type or MRR moves it.

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

-- Strategy days (strategy_days, 0077): a variant counts as a send on the UTC day of its
-- sent_at from when sent_at is set until it is unset or the variant deleted, and as a
-- recovery while its event is recovered too. sent_at is set once, never moved.

CREATE TRIGGER strategy_days_sent AFTER UPDATE OF sent_at ON recovery_variants
WHEN OLD.sent_at IS NULL AND NEW.sent_at IS NOT NULL
BEGIN
    INSERT INTO strategy_days (project_id, strategy, day, sends, recoveries)
    VALUES (NEW.project_id, NEW.strategy, substr(NEW.sent_at, 1, 10), 1,
            (SELECT COUNT(*) FROM churn_events WHERE id = NEW.churn_event_id AND status = 'recovered'))
    ON CONFLICT (project_id, day, strategy) DO UPDATE
    SET sends = sends + 1, recoveries = recoveries + excluded.recoveries;
END;

CREATE TRIGGER strategy_days_unsent AFTER UPDATE OF sent_at ON recovery_variants
WHEN OLD.sent_at IS NOT NULL AND NEW.sent_at IS NULL
BEGIN
    UPDATE strategy_days
    SET sends = sends - 1,
        recoveries = recoveries - (SELECT COUNT(*) FROM churn_events WHERE id = OLD.churn_event_id AND status = 'recovered')
    WHERE project_id = OLD.project_id AND day = substr(OLD.sent_at, 1, 10) AND strategy = OLD.strategy;
END;

CREATE TRIGGER strategy_days_deleted AFTER DELETE ON recovery_variants
WHEN OLD.sent_at IS NOT NULL
BEGIN
    UPDATE strategy_days
    SET sends = sends - 1,
        recoveries = recoveries - (SELECT COUNT(*) FROM churn_events WHERE id = OLD.churn_event_id AND status = 'recovered')
    WHERE project_id = OLD.project_id AND day = substr(OLD.sent_at, 1, 10) AND strategy = OLD.strategy;
END;

CREATE TRIGGER strategy_days_recovered AFTER UPDATE OF status ON churn_events
WHEN (OLD.status = 'recovered') <> (NEW.status = 'recovered')
BEGIN
    UPDATE strategy_days
    SET recoveries = recoveries + (CASE WHEN NEW.status = 'recovered' THEN 1 ELSE -1 END) * (
        SELECT COUNT(*) FROM recovery_variants v
        WHERE v.churn_event_id = NEW.id AND v.strategy = strategy_days.strategy
          AND substr(v.sent_at, 1, 10) = strategy_days.day)
    WHERE project_id = NEW.project_id AND (day, strategy) IN (
        SELECT substr(sent_at, 1, 10), strategy FROM recovery_variants
        WHERE churn_event_id = NEW.id AND sent_at IS NOT NULL);
END;

-- Event days (churn_event_days): an event counts on the UTC day of each of its timestamps,
-- under that timestamp's kind, with its MRR; a change of any of them, or of its reason or
-- MRR, moves it. The overview's period figures add up a period's days.

CREATE TABLE churn_event_days (
    project_id  TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    day         TEXT NOT NULL,
    reason_code TEXT NOT NULL,
    n           BIGINT NOT NULL,
    mrr_sum     BIGINT NOT NULL,
    PRIMARY KEY (project_id, kind, day, reason_code)
);

INSERT INTO churn_event_days (project_id, kind, day, reason_code, n, mrr_sum)
SELECT project_id, 'created', substr(created_at, 1, 10), reason_code, COUNT(*), COALESCE(SUM(mrr), 0)
FROM churn_events GROUP BY 1, 2, 3, 4
UNION ALL
SELECT project_id, 'recovered', substr(recovered_at, 1, 10), '', COUNT(*), COALESCE(SUM(mrr), 0)
FROM churn_events WHERE recovered_at IS NOT NULL GROUP BY 1, 2, 3, 4
UNION ALL
SELECT project_id, 'lost', substr(lost_at, 1, 10), '', COUNT(*), COALESCE(SUM(mrr), 0)
FROM churn_events WHERE lost_at IS NOT NULL GROUP BY 1, 2, 3, 4
UNION ALL
SELECT project_id, 'resolved', substr(COALESCE(min(recovered_at, lost_at), recovered_at, lost_at), 1, 10), '',
       COUNT(*), COALESCE(SUM(mrr), 0)
FROM churn_events WHERE recovered_at IS NOT NULL OR lost_at IS NOT NULL GROUP BY 1, 2, 3, 4;

CREATE TRIGGER churn_event_days_insert AFTER INSERT ON churn_events
BEGIN
    INSERT INTO churn_event_days (project_id, kind, day, reason_code, n, mrr_sum)
    SELECT NEW.project_id, k.kind, substr(k.at, 1, 10), k.reason, 1, COALESCE(NEW.mrr, 0)
    FROM (SELECT 'created' AS kind, NEW.created_at AS at, NEW.reason_code AS reason
          UNION ALL SELECT 'recovered', NEW.recovered_at, ''
          UNION ALL SELECT 'lost', NEW.lost_at, ''
          UNION ALL SELECT 'resolved', COALESCE(min(NEW.recovered_at, NEW.lost_at), NEW.recovered_at, NEW.lost_at), '') k
    WHERE k.at IS NOT NULL
    ON CONFLICT (project_id, kind, day, reason_code)
    DO UPDATE SET n = n + excluded.n, mrr_sum = mrr_sum + excluded.mrr_sum;
END;

CREATE TRIGGER churn_event_days_update
AFTER UPDATE OF created_at, reason_code, mrr, recovered_at, lost_at ON churn_events
WHEN OLD.created_at IS NOT NEW.created_at OR OLD.reason_code IS NOT NEW.reason_code
  OR OLD.mrr IS NOT NEW.mrr OR OLD.recovered_at IS NOT NEW.recovered_at OR OLD.lost_at IS NOT NEW.lost_at
BEGIN
    UPDATE churn_event_days SET n = n - 1, mrr_sum = mrr_sum - COALESCE(OLD.mrr, 0)
    WHERE project_id = OLD.project_id AND (kind, day, reason_code) IN (
        SELECT k.kind, substr(k.at, 1, 10), k.reason
        FROM (SELECT 'created' AS kind, OLD.created_at AS at, OLD.reason_code AS reason
              UNION ALL SELECT 'recovered', OLD.recovered_at, ''
              UNION ALL SELECT 'lost', OLD.lost_at, ''
              UNION ALL SELECT 'resolved', COALESCE(min(OLD.recovered_at, OLD.lost_at), OLD.recovered_at, OLD.lost_at), '') k
        WHERE k.at IS NOT NULL);
    INSERT INTO churn_event_days (project_id, kind, day, reason_code, n, mrr_sum)
    SELECT NEW.project_id, k.kind, substr(k.at, 1, 10), k.reason, 1, COALESCE(NEW.mrr, 0)
    FROM (SELECT 'created' AS kind, NEW.created_at AS at, NEW.reason_code AS reason
          UNION ALL SELECT 'recovered', NEW.recovered_at, ''
          UNION ALL SELECT 'lost', NEW.lost_at, ''
          UNION ALL SELECT 'resolved', COALESCE(min(NEW.recovered_at, NEW.lost_at), NEW.recovered_at, NEW.lost_at), '') k
    WHERE k.at IS NOT NULL
    ON CONFLICT (project_id, kind, day, reason_code)
    DO UPDATE SET n = n + excluded.n, mrr_sum = mrr_sum + excluded.mrr_sum;
END;

CREATE TRIGGER churn_event_days_delete AFTER DELETE ON churn_events
BEGIN
    UPDATE churn_event_days SET n = n - 1, mrr_sum = mrr_sum - COALESCE(OLD.mrr, 0)
    WHERE project_id = OLD.project_id AND (kind, day, reason_code) IN (
        SELECT k.kind, substr(k.at, 1, 10), k.reason
        FROM (SELECT 'created' AS kind, OLD.created_at AS at, OLD.reason_code AS reason
              UNION ALL SELECT 'recovered', OLD.recovered_at, ''
              UNION ALL SELECT 'lost', OLD.lost_at, ''
              UNION ALL SELECT 'resolved', COALESCE(min(OLD.recovered_at, OLD.lost_at), OLD.recovered_at, OLD.lost_at), '') k
        WHERE k.at IS NOT NULL);
END;

-- Event emails (churn_event_emails): an event counts under its customer's email. The events
-- search looks for a part of an email among a project's customers here, one row each,
-- instead of among its events. A row whose count goes to 0 is deleted: the address of a
-- customer whose events are all gone is not kept here.

CREATE TABLE churn_event_emails (
    project_id     TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    customer_email TEXT NOT NULL,
    n              BIGINT NOT NULL,
    PRIMARY KEY (project_id, customer_email)
);

INSERT INTO churn_event_emails (project_id, customer_email, n)
SELECT project_id, customer_email, COUNT(*) FROM churn_events GROUP BY 1, 2;

CREATE TRIGGER churn_event_emails_insert AFTER INSERT ON churn_events
BEGIN
    INSERT INTO churn_event_emails (project_id, customer_email, n)
    VALUES (NEW.project_id, NEW.customer_email, 1)
    ON CONFLICT (project_id, customer_email) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER churn_event_emails_update AFTER UPDATE OF customer_email ON churn_events
WHEN OLD.customer_email IS NOT NEW.customer_email
BEGIN
    UPDATE churn_event_emails SET n = n - 1
    WHERE project_id = OLD.project_id AND customer_email = OLD.customer_email;
    DELETE FROM churn_event_emails
    WHERE project_id = OLD.project_id AND customer_email = OLD.customer_email AND n <= 0;
    INSERT INTO churn_event_emails (project_id, customer_email, n)
    VALUES (NEW.project_id, NEW.customer_email, 1)
    ON CONFLICT (project_id, customer_email) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER churn_event_emails_delete AFTER DELETE ON churn_events
BEGIN
    UPDATE churn_event_emails SET n = n - 1
    WHERE project_id = OLD.project_id AND customer_email = OLD.customer_email;
    DELETE FROM churn_event_emails
    WHERE project_id = OLD.project_id AND customer_email = OLD.customer_email AND n <= 0;
END;

-- Cohorts (churn_cohorts): an event counts once under its month of creation, status and
-- strategy, with its MRR; a change of status or MRR moves it.

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

-- Customers and risk levels (customer_counts, shard 0: SQLite has one writer): a customer
-- counts under 'customer'; and under its level while the score row of its risk day exists,
-- so a changed risk day or level, and a score row appearing or going away, move it.

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
