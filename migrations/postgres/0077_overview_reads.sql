-- Reads of the overview at 1,000,000 events (issue 21).
-- Customers at high or critical risk on a day scores were written, and their known MRR
-- (decisions §17, the overview's "MRR at risk" and its sparkline; issue 21). Reading it from
-- every customer's latest score took a lookup per risky customer; scores only change in a
-- scoring run, so the run keeps the day's figure here when it ends, and a day read before any
-- run kept it is filled once from the scores. Kept past the 90 days of risk_scores.
CREATE TABLE risk_day_totals (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    day        TEXT NOT NULL,
    customers  BIGINT NOT NULL,
    mrr_cents  BIGINT NOT NULL,
    PRIMARY KEY (project_id, day)
);

-- Sends and recoveries per strategy by the UTC day of the send, in place of the all-time
-- strategy_outcomes: ranking sums a project's days, the overview a period's (decisions §17,
-- "strategy performance"), without joining every send of the period to its event. A send
-- counts as recovered while its event is recovered; sent_at is set once, never moved.
CREATE TABLE strategy_days (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    strategy   TEXT NOT NULL,
    day        TEXT NOT NULL,
    sends      BIGINT NOT NULL,
    recoveries BIGINT NOT NULL,
    PRIMARY KEY (project_id, day, strategy)
);

INSERT INTO strategy_days (project_id, strategy, day, sends, recoveries)
SELECT v.project_id, v.strategy, substr(v.sent_at, 1, 10), COUNT(*),
       SUM(CASE WHEN e.status = 'recovered' THEN 1 ELSE 0 END)
FROM recovery_variants v JOIN churn_events e ON e.id = v.churn_event_id
WHERE v.sent_at IS NOT NULL
GROUP BY v.project_id, v.strategy, substr(v.sent_at, 1, 10);

DROP TABLE strategy_outcomes;

CREATE OR REPLACE FUNCTION strategy_outcomes_variant() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE OR REPLACE FUNCTION strategy_outcomes_event() RETURNS trigger LANGUAGE plpgsql AS $$
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
