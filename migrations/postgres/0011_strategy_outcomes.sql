-- Per project and strategy: sent variants and how many of their events were recovered. Kept by
-- triggers in the same transaction as every change, so ranking a new event reads nine rows
-- instead of aggregating the project's whole send history.

CREATE TABLE strategy_outcomes (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    strategy   TEXT NOT NULL,
    sends      BIGINT NOT NULL,
    recoveries BIGINT NOT NULL,
    PRIMARY KEY (project_id, strategy)
);

INSERT INTO strategy_outcomes (project_id, strategy, sends, recoveries)
SELECT v.project_id, v.strategy, COUNT(*), SUM(CASE WHEN e.status = 'recovered' THEN 1 ELSE 0 END)
FROM recovery_variants v JOIN churn_events e ON e.id = v.churn_event_id
WHERE v.sent_at IS NOT NULL
GROUP BY v.project_id, v.strategy;

CREATE FUNCTION strategy_outcomes_variant() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    was_sent  boolean := OLD.sent_at IS NOT NULL;
    is_sent   boolean := TG_OP <> 'DELETE' AND NEW.sent_at IS NOT NULL;
    v         recovery_variants%ROWTYPE;
    recovered bigint;
BEGIN
    IF was_sent = is_sent THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        v := OLD;
    ELSE
        v := NEW;
    END IF;
    SELECT COUNT(*) INTO recovered FROM churn_events WHERE id = v.churn_event_id AND status = 'recovered';
    IF is_sent THEN
        INSERT INTO strategy_outcomes (project_id, strategy, sends, recoveries)
        VALUES (v.project_id, v.strategy, 1, recovered)
        ON CONFLICT (project_id, strategy) DO UPDATE
        SET sends = strategy_outcomes.sends + 1,
            recoveries = strategy_outcomes.recoveries + EXCLUDED.recoveries;
    ELSE
        -- An update, never an insert: during a project's cascading delete the project row may
        -- already be gone.
        UPDATE strategy_outcomes SET sends = sends - 1, recoveries = recoveries - recovered
        WHERE project_id = v.project_id AND strategy = v.strategy;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER strategy_outcomes_variant AFTER DELETE OR UPDATE OF sent_at ON recovery_variants
FOR EACH ROW EXECUTE FUNCTION strategy_outcomes_variant();

CREATE FUNCTION strategy_outcomes_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (OLD.status = 'recovered') = (NEW.status = 'recovered') THEN
        RETURN NULL;
    END IF;
    UPDATE strategy_outcomes o
    SET recoveries = o.recoveries + (CASE WHEN NEW.status = 'recovered' THEN 1 ELSE -1 END) * s.n
    FROM (SELECT strategy, COUNT(*) AS n FROM recovery_variants
          WHERE churn_event_id = NEW.id AND sent_at IS NOT NULL GROUP BY strategy) s
    WHERE o.project_id = NEW.project_id AND o.strategy = s.strategy;
    RETURN NULL;
END;
$$;

CREATE TRIGGER strategy_outcomes_event AFTER UPDATE OF status ON churn_events
FOR EACH ROW EXECUTE FUNCTION strategy_outcomes_event();
