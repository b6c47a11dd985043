-- Every kept count and the triggers that keep it, in one place. Earlier migrations built
-- these up (0003, 0011, 0051, 0060, 0061, 0062, 0063, 0065); this file drops every
-- counting trigger and function and recreates each as it stood, word for word, with the
-- strategy-day functions of 0077's strategy_days in place of strategy_outcomes', and creates
-- churn_event_days and churn_event_emails (new here, filled from the events already stored),
-- so a reader finds every rule here. The Rust side of the same list, with a recount of each count from
-- its base tables, is `crates/churn-core/src/store/kept_counts.rs` (`churn doctor` compares
-- and repairs). Changing a rule means a new migration that replaces what is named here, and
-- the recount beside it. SQLite's 0080 keeps the same rules with row triggers.
--
-- | count             | table              | counts, per key                                     |
-- |-------------------|--------------------|-----------------------------------------------------|
-- | event totals      | churn_event_counts | churn_events per (project, status, event_type):     |
-- |                   |                    | n, mrr                                              |
-- | strategy days     | strategy_days      | sent variants per (project, UTC day of sent_at,     |
-- |                   |                    | strategy): sends, and sends whose event is          |
-- |                   |                    | recovered: recoveries                               |
-- | cohorts           | churn_cohorts      | churn_events per (project, month of created_at,     |
-- |                   |                    | status, strategy): n, mrr; strategy is the last     |
-- |                   |                    | sent variant's for a recovered event, '' otherwise  |
-- | event days        | churn_event_days   | churn_events per (project, kind, UTC day, reason):  |
-- |                   |                    | n, mrr. Kinds: `created` (day of created_at, by     |
-- |                   |                    | reason), `recovered` (recovered_at), `lost`         |
-- |                   |                    | (lost_at), `resolved` (the first of the two);       |
-- |                   |                    | reason '' but for `created`                         |
-- | event emails      | churn_event_emails | churn_events per (project, customer email): n       |
-- | customers         | customer_counts    | customers per project (key 'customer')              |
-- | risk levels       | customer_counts    | customers whose latest score row (risk_scores of    |
-- |                   |                    | their risk_day) exists, per level (key              |
-- |                   |                    | 'risk_<level>', 'risk_none' for insufficient data)  |
--
-- How they are kept, and why:
-- * In the transaction of the change, by AFTER triggers.
-- * Lock order: PostgreSQL fires a table's triggers of one event in the order of their names.
--   A new event's statement triggers take event days, event emails, event totals, cohorts,
--   then customers; an event's row triggers (update, delete) take them in the same order, so
--   two writers on one shard wait for each other instead of deadlocking (a new event and a
--   status change in the same month did, while the cohorts' row trigger fired first).
-- * Sharded: churn_event_counts, churn_event_days, churn_cohorts and customer_counts hold a project's counts in
--   up to 64 rows per key (`shard`, by server process: `count_shard`), so concurrent writers
--   (tracking, provider events, scoring) seldom queue on one row lock. Each transaction writes
--   to its own shard, so it holds one row per key; a shard may go below zero; readers add the
--   shards up. strategy_days changes only on sends and recoveries, and churn_event_emails
--   by one customer's events, so neither is sharded.
-- * Per statement where writers change many rows at once (new churn events, customers, risk
--   scores): the change of each key is added once, in key order (two groups of other
--   processes wait for each other's shard rows instead of deadlocking). A row trigger updated
--   the same count row once per row, each update a new row version (4,800 customers inserted
--   in one transaction: 925 ms with row triggers, 115 ms without). Updates and deletes of
--   events and variants, one at a time, keep row triggers.
-- * Statements that read risk_scores or customers run by EXECUTE, planned on each call for
--   the rows they have: plans kept per connection were made for transition tables without
--   statistics and tables empty at first, and scanned them. Each row's partner is looked up
--   through its key (LATERAL … LIMIT 1: one index probe per changed row).
-- * A change while the project is being deleted adds nothing (its count rows go with it).
--
-- What the rules assume of writers: an event is resolved no earlier than it is created (the
-- overview's "open at the period's end" is the created count less the resolved count up to
-- that day); a recovered event's sent variants do not change while it
-- is recovered (its cohort strategy is read again when it moves or goes), so a recovered
-- event is made lost before its variants are deleted (`store::demo::delete_events`); variants
-- are inserted unsent and counted when `sent_at` is set.

DROP TRIGGER churn_events_counted ON churn_events;
DROP TRIGGER churn_events_counted_insert ON churn_events;
DROP TRIGGER churn_cohorts_counted ON churn_events;
DROP TRIGGER strategy_outcomes_variant ON recovery_variants;
DROP TRIGGER strategy_outcomes_event ON churn_events;
DROP TRIGGER customers_counted_insert ON customers;
DROP TRIGGER customers_counted_delete ON customers;
DROP TRIGGER customers_counted_update ON customers;
DROP TRIGGER risk_scores_counted_insert ON risk_scores;
DROP TRIGGER risk_scores_counted_delete ON risk_scores;
DROP FUNCTION churn_events_count();
DROP FUNCTION churn_events_count_inserted();
DROP FUNCTION churn_cohorts_count();
DROP FUNCTION strategy_outcomes_variant();
DROP FUNCTION strategy_outcomes_event();
DROP FUNCTION customers_count_changed();
DROP FUNCTION customers_count_updated();
DROP FUNCTION risk_scores_count_changed();
DROP FUNCTION customer_counts_add(TEXT[], TEXT[], BIGINT[]);
DROP FUNCTION churn_cohort_strategy(TEXT, TEXT);
DROP FUNCTION count_shard();

-- Shared helpers.

-- The shard a transaction writes its count changes to: one of 64, by its server process.
CREATE FUNCTION count_shard() RETURNS INTEGER LANGUAGE sql AS $$
    SELECT pg_backend_pid() & 63
$$;

-- Adds a change per key to the customer counts of this transaction's shard, unless the
-- project is being deleted. PL/pgSQL, whose plans each connection keeps: the body of an SQL
-- function that is not inlined is parsed and planned again on every call.
CREATE FUNCTION customer_counts_add(p_project TEXT[], p_key TEXT[], p_n BIGINT[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO customer_counts (project_id, shard, key, n)
    SELECT c.project_id, count_shard(), c.key, c.n
    FROM unnest(p_project, p_key, p_n) AS c(project_id, key, n)
    WHERE c.n <> 0 AND EXISTS (SELECT 1 FROM projects WHERE id = c.project_id)
    ORDER BY c.project_id, c.key
    ON CONFLICT (project_id, shard, key) DO UPDATE SET n = customer_counts.n + EXCLUDED.n;
END;
$$;

-- The strategy a recovered event counts under in its cohort; '' for any other status.
CREATE FUNCTION churn_cohort_strategy(event_id TEXT, status TEXT) RETURNS TEXT LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN status = 'recovered' THEN COALESCE((
        SELECT v.strategy FROM recovery_variants v
        WHERE v.churn_event_id = event_id AND v.sent_at IS NOT NULL
        ORDER BY v.sent_at DESC, v.id DESC LIMIT 1), '') ELSE '' END
$$;

-- Event totals (churn_event_counts) and cohorts (churn_cohorts): an event counts once under
-- its status and type, and once under its month of creation, status and strategy, with its
-- MRR (NULL as 0). A change of status, type or MRR moves it (cohorts: status or MRR); a
-- delete takes it back. Decrements insert too (a shard may not hold the row yet).

CREATE FUNCTION churn_events_count() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE FUNCTION churn_cohorts_count() RETURNS trigger LANGUAGE plpgsql AS $$
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
-- Named after churn_events_counted so that it fires after it and after churn_event_days_counted,
-- in the order new events take these tables (see "Lock order" above).
CREATE TRIGGER churn_events_counted_cohorts AFTER DELETE OR UPDATE OF status, mrr ON churn_events
FOR EACH ROW EXECUTE FUNCTION churn_cohorts_count();

-- New events, once per statement. An event inserted as recovered (imports) counts under the
-- strategy `churn_cohort_strategy` gives, joined instead of called.
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

-- Strategy days (strategy_days, 0077): a variant counts as a send on the UTC day of its
-- sent_at from when sent_at is set until it is unset or the variant deleted, and as a
-- recovery while its event is recovered too; sent_at is set once, never moved. Decrements
-- only update: during a project's cascading delete the project row may be gone already.

CREATE FUNCTION strategy_days_variant() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    was_sent  boolean := OLD.sent_at IS NOT NULL;
    is_sent   boolean := TG_OP <> 'DELETE' AND NEW.sent_at IS NOT NULL;
    v         recovery_variants%ROWTYPE;
    recovered bigint;
BEGIN
    IF was_sent = is_sent THEN
        RETURN NULL;
    END IF;
    -- The row that is sent: the new one for a send, the old one (its day) for a send undone.
    IF is_sent THEN
        v := NEW;
    ELSE
        v := OLD;
    END IF;
    SELECT COUNT(*) INTO recovered FROM churn_events WHERE id = v.churn_event_id AND status = 'recovered';
    IF is_sent THEN
        INSERT INTO strategy_days (project_id, strategy, day, sends, recoveries)
        VALUES (v.project_id, v.strategy, substr(v.sent_at, 1, 10), 1, recovered)
        ON CONFLICT (project_id, day, strategy) DO UPDATE
        SET sends = strategy_days.sends + 1,
            recoveries = strategy_days.recoveries + EXCLUDED.recoveries;
    ELSE
        -- An update, never an insert: during a project's cascading delete the project row may
        -- already be gone.
        UPDATE strategy_days SET sends = sends - 1, recoveries = recoveries - recovered
        WHERE project_id = v.project_id AND day = substr(v.sent_at, 1, 10) AND strategy = v.strategy;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER strategy_days_variant AFTER DELETE OR UPDATE OF sent_at ON recovery_variants
FOR EACH ROW EXECUTE FUNCTION strategy_days_variant();


CREATE FUNCTION strategy_days_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (OLD.status = 'recovered') = (NEW.status = 'recovered') THEN
        RETURN NULL;
    END IF;
    UPDATE strategy_days o
    SET recoveries = o.recoveries + (CASE WHEN NEW.status = 'recovered' THEN 1 ELSE -1 END) * s.n
    FROM (SELECT strategy, substr(sent_at, 1, 10) AS day, COUNT(*) AS n FROM recovery_variants
          WHERE churn_event_id = NEW.id AND sent_at IS NOT NULL GROUP BY 1, 2) s
    WHERE o.project_id = NEW.project_id AND o.day = s.day AND o.strategy = s.strategy;
    RETURN NULL;
END;
$$;

CREATE TRIGGER strategy_days_event AFTER UPDATE OF status ON churn_events
FOR EACH ROW EXECUTE FUNCTION strategy_days_event();

-- Event days (churn_event_days): an event counts on the UTC day of each of its timestamps,
-- under that timestamp's kind, with its MRR; a change of any of them, or of its reason or
-- MRR, moves it. The overview's period figures add up a period's days. New events once per
-- statement; updates and deletes per row, and only when a counted column changed.

CREATE TABLE churn_event_days (
    project_id  TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    day         TEXT NOT NULL,
    reason_code TEXT NOT NULL,
    shard       INTEGER NOT NULL,
    n           BIGINT NOT NULL,
    mrr_sum     BIGINT NOT NULL,
    PRIMARY KEY (project_id, kind, day, reason_code, shard)
);

-- The keys an event counts under: (kind, day, reason). Inlined where it is called.
CREATE FUNCTION churn_event_day_keys(created_at TEXT, reason TEXT, recovered_at TEXT, lost_at TEXT)
RETURNS TABLE (kind TEXT, day TEXT, reason_code TEXT) LANGUAGE sql IMMUTABLE AS $$
    SELECT k.kind, substr(k.at, 1, 10), k.reason
    FROM (VALUES ('created', created_at, reason), ('recovered', recovered_at, ''),
                 ('lost', lost_at, ''), ('resolved', LEAST(recovered_at, lost_at), ''))
         AS k(kind, at, reason)
    WHERE k.at IS NOT NULL
$$;

INSERT INTO churn_event_days (project_id, kind, day, reason_code, shard, n, mrr_sum)
SELECT e.project_id, k.kind, k.day, k.reason_code, 0, COUNT(*), COALESCE(SUM(e.mrr), 0)
FROM churn_events e
CROSS JOIN LATERAL churn_event_day_keys(e.created_at, e.reason_code, e.recovered_at, e.lost_at) k
GROUP BY 1, 2, 3, 4;

CREATE FUNCTION churn_event_days_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND (OLD.created_at, OLD.reason_code, OLD.mrr, OLD.recovered_at, OLD.lost_at)
        IS NOT DISTINCT FROM (NEW.created_at, NEW.reason_code, NEW.mrr, NEW.recovered_at, NEW.lost_at) THEN
        RETURN NULL;
    END IF;
    INSERT INTO churn_event_days (project_id, kind, day, reason_code, shard, n, mrr_sum)
    SELECT OLD.project_id, k.kind, k.day, k.reason_code, count_shard(), -1, -COALESCE(OLD.mrr, 0)
    FROM churn_event_day_keys(OLD.created_at, OLD.reason_code, OLD.recovered_at, OLD.lost_at) k
    WHERE EXISTS (SELECT 1 FROM projects WHERE id = OLD.project_id)
    ORDER BY 2, 3, 4
    ON CONFLICT (project_id, kind, day, reason_code, shard)
    DO UPDATE SET n = churn_event_days.n + EXCLUDED.n, mrr_sum = churn_event_days.mrr_sum + EXCLUDED.mrr_sum;
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO churn_event_days (project_id, kind, day, reason_code, shard, n, mrr_sum)
        SELECT NEW.project_id, k.kind, k.day, k.reason_code, count_shard(), 1, COALESCE(NEW.mrr, 0)
        FROM churn_event_day_keys(NEW.created_at, NEW.reason_code, NEW.recovered_at, NEW.lost_at) k
        ORDER BY 2, 3, 4
        ON CONFLICT (project_id, kind, day, reason_code, shard)
        DO UPDATE SET n = churn_event_days.n + EXCLUDED.n, mrr_sum = churn_event_days.mrr_sum + EXCLUDED.mrr_sum;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER churn_event_days_counted
AFTER DELETE OR UPDATE OF created_at, reason_code, mrr, recovered_at, lost_at ON churn_events
FOR EACH ROW EXECUTE FUNCTION churn_event_days_count();

CREATE FUNCTION churn_event_days_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO churn_event_days (project_id, kind, day, reason_code, shard, n, mrr_sum)
    SELECT e.project_id, k.kind, k.day, k.reason_code, count_shard(), COUNT(*), COALESCE(SUM(e.mrr), 0)
    FROM changed_rows e
    CROSS JOIN LATERAL churn_event_day_keys(e.created_at, e.reason_code, e.recovered_at, e.lost_at) k
    GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (project_id, kind, day, reason_code, shard)
    DO UPDATE SET n = churn_event_days.n + EXCLUDED.n, mrr_sum = churn_event_days.mrr_sum + EXCLUDED.mrr_sum;
    RETURN NULL;
END;
$$;

CREATE TRIGGER churn_event_days_counted_insert AFTER INSERT ON churn_events
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION churn_event_days_inserted();

-- Event emails (churn_event_emails): an event counts under its customer's email. The events
-- search looks for a part of an email among a project's customers here, one row each,
-- instead of among its events. A row whose count goes to 0 is deleted: the address of a
-- customer whose events are all gone is not kept here.
-- Decrements only update: during a project's cascading delete its rows may be gone already.

CREATE TABLE churn_event_emails (
    project_id     TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    customer_email TEXT NOT NULL,
    n              BIGINT NOT NULL,
    PRIMARY KEY (project_id, customer_email)
);

INSERT INTO churn_event_emails (project_id, customer_email, n)
SELECT project_id, customer_email, COUNT(*) FROM churn_events GROUP BY 1, 2;

CREATE FUNCTION churn_event_emails_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.customer_email IS NOT DISTINCT FROM NEW.customer_email THEN
        RETURN NULL;
    END IF;
    UPDATE churn_event_emails SET n = n - 1
    WHERE project_id = OLD.project_id AND customer_email = OLD.customer_email;
    DELETE FROM churn_event_emails
    WHERE project_id = OLD.project_id AND customer_email = OLD.customer_email AND n <= 0;
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO churn_event_emails (project_id, customer_email, n)
        VALUES (NEW.project_id, NEW.customer_email, 1)
        ON CONFLICT (project_id, customer_email) DO UPDATE SET n = churn_event_emails.n + 1;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER churn_event_emails_counted AFTER DELETE OR UPDATE OF customer_email ON churn_events
FOR EACH ROW EXECUTE FUNCTION churn_event_emails_count();

-- New events once per statement, emails in order (two groups wait instead of deadlocking).
CREATE FUNCTION churn_event_emails_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO churn_event_emails (project_id, customer_email, n)
    SELECT project_id, customer_email, COUNT(*) FROM changed_rows GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (project_id, customer_email) DO UPDATE SET n = churn_event_emails.n + EXCLUDED.n;
    RETURN NULL;
END;
$$;

CREATE TRIGGER churn_event_emails_counted_insert AFTER INSERT ON churn_events
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION churn_event_emails_inserted();

-- Customers and risk levels (customer_counts): a customer counts under 'customer'; and under
-- 'risk_<level>' while the score row of its risk day exists (the risk list's join), so a
-- changed risk day or level, and a score row appearing or going away, move it. Rows inserted
-- count up, rows deleted count down: both triggers name their transition table
-- `changed_rows`. Calls that change no risk count skip the lookup after a check that reads
-- the transition tables only (a tracking group's upsert plans nothing).

CREATE FUNCTION customers_count_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign BIGINT := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    PERFORM customer_counts_add(array_agg(project_id), array_agg(TEXT 'customer'), array_agg(sign * n))
        FROM (SELECT project_id, COUNT(*) AS n FROM changed_rows GROUP BY 1) changes;
    IF EXISTS (SELECT 1 FROM changed_rows WHERE risk_day IS NOT NULL) THEN
        EXECUTE $sql$
            SELECT customer_counts_add(array_agg(project_id), array_agg(key), array_agg($1 * n))
            FROM (
                SELECT c.project_id, 'risk_' || COALESCE(c.risk_level, 'none') AS key, COUNT(*) AS n
                FROM changed_rows c
                CROSS JOIN LATERAL (
                    SELECT 1 FROM risk_scores r
                    WHERE r.project_id = c.project_id AND r.customer_email = c.email AND r.day = c.risk_day
                    LIMIT 1
                ) scored
                WHERE c.risk_day IS NOT NULL
                GROUP BY 1, 2
            ) changes
        $sql$ USING sign;
    END IF;
    RETURN NULL;
END;
$$;

-- Old and new rows are paired by grouping both by key (an UPDATE changes a row once per
-- statement), which has no quadratic plan. Transition tables cannot name columns
-- (`UPDATE OF`), so this sees every update of customers and keeps the rows that moved.
CREATE FUNCTION customers_count_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM (
            SELECT 0 AS side, project_id, email, risk_day, risk_level FROM old_rows
            UNION ALL
            SELECT 1, project_id, email, risk_day, risk_level FROM new_rows
        ) sides
        WHERE risk_day IS NOT NULL OR risk_level IS NOT NULL
        GROUP BY project_id, email
        HAVING max(risk_day) FILTER (WHERE side = 0) IS DISTINCT FROM max(risk_day) FILTER (WHERE side = 1)
            OR max(risk_level) FILTER (WHERE side = 0) IS DISTINCT FROM max(risk_level) FILTER (WHERE side = 1)
    ) THEN
        RETURN NULL;
    END IF;
    EXECUTE $sql$
        SELECT customer_counts_add(array_agg(project_id), array_agg(key), array_agg(n))
        FROM (
            WITH moved AS MATERIALIZED (
                SELECT * FROM (
                    SELECT project_id, email,
                           max(risk_day) FILTER (WHERE side = 0) AS old_day,
                           max(risk_level) FILTER (WHERE side = 0) AS old_level,
                           max(risk_day) FILTER (WHERE side = 1) AS new_day,
                           max(risk_level) FILTER (WHERE side = 1) AS new_level
                    FROM (
                        SELECT 0 AS side, project_id, email, risk_day, risk_level FROM old_rows
                        UNION ALL
                        SELECT 1, project_id, email, risk_day, risk_level FROM new_rows
                    ) sides
                    GROUP BY project_id, email
                ) paired
                WHERE old_day IS DISTINCT FROM new_day OR old_level IS DISTINCT FROM new_level
            )
            SELECT m.project_id, 'risk_' || COALESCE(m.level, 'none') AS key, SUM(m.d) AS n
            FROM (
                SELECT project_id, email, old_day AS day, old_level AS level, -1 AS d FROM moved
                UNION ALL
                SELECT project_id, email, new_day, new_level, 1 FROM moved
            ) m
            CROSS JOIN LATERAL (
                SELECT 1 FROM risk_scores r
                WHERE r.project_id = m.project_id AND r.customer_email = m.email AND r.day = m.day
                LIMIT 1
            ) scored
            WHERE m.day IS NOT NULL
            GROUP BY 1, 2
        ) changes
    $sql$;
    RETURN NULL;
END;
$$;

CREATE TRIGGER customers_counted_insert AFTER INSERT ON customers
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION customers_count_changed();
CREATE TRIGGER customers_counted_delete AFTER DELETE ON customers
REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION customers_count_changed();
CREATE TRIGGER customers_counted_update AFTER UPDATE ON customers
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION customers_count_updated();

-- A score row appearing or going away for the day its customer points at.
CREATE FUNCTION risk_scores_count_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE $sql$
        SELECT customer_counts_add(array_agg(project_id), array_agg(key), array_agg($1 * n))
        FROM (
            SELECT r.project_id, 'risk_' || COALESCE(c.risk_level, 'none') AS key, COUNT(*) AS n
            FROM changed_rows r
            CROSS JOIN LATERAL (
                SELECT c.risk_level FROM customers c
                WHERE c.project_id = r.project_id AND c.email = r.customer_email AND c.risk_day = r.day
                LIMIT 1
            ) c
            GROUP BY 1, 2
        ) changes
    $sql$ USING CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
    RETURN NULL;
END;
$$;

CREATE TRIGGER risk_scores_counted_insert AFTER INSERT ON risk_scores
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION risk_scores_count_changed();
CREATE TRIGGER risk_scores_counted_delete AFTER DELETE ON risk_scores
REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION risk_scores_count_changed();
