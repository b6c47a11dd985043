-- Each customer's latest MRR: the MRR of their latest churn event (by created_at, then id; a
-- NULL MRR or no event at all as 0), kept on the customer row. The overview's "critical
-- without an alert" walks the critical customers by it (customers_critical_by_mrr) and stops
-- at the first ten without an alert, instead of looking up the latest event of each critical
-- customer (0.2–0.7 s at 100,000 customers). A kept figure like those of 0080: its recount is
-- `KeptCount::CustomerMrr` in crates/churn-core/src/store/kept_counts.rs (`churn doctor`).
-- Kept once per statement for new and deleted churn events and for new customers (bulk
-- writers: the demo seed, tracked batches), per row for an event changed in a column it
-- depends on. The customers concerned are locked in key order before they are written, so
-- two writers wait for each other instead of deadlocking, and a row is written only when its
-- figure changes (a new customer without events is not written again). A project being
-- deleted is left alone: its customers go with it.

ALTER TABLE customers ADD COLUMN latest_mrr BIGINT NOT NULL DEFAULT 0;

UPDATE customers c SET latest_mrr = e.mrr
FROM (SELECT DISTINCT ON (project_id, customer_email) project_id, customer_email,
          COALESCE(mrr, 0) AS mrr
      FROM churn_events ORDER BY project_id, customer_email, created_at DESC, id DESC) e
WHERE c.project_id = e.project_id AND c.email = e.customer_email AND e.mrr <> 0;

CREATE INDEX customers_critical_by_mrr ON customers (project_id, latest_mrr DESC, email)
WHERE risk_level = 'critical';

-- Recomputes the latest MRR of the customers named by the pairs (projects[i], emails[i]).
-- By EXECUTE, planned on each call for the rows there are (as in 0080): a plan kept from an
-- empty table would scan customers.
CREATE FUNCTION customers_latest_mrr_set(projects TEXT[], emails TEXT[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'SELECT 1 FROM customers c
        JOIN unnest($1, $2) AS k(project_id, email)
          ON c.project_id = k.project_id AND c.email = k.email
        WHERE EXISTS (SELECT 1 FROM projects p WHERE p.id = c.project_id)
        ORDER BY c.project_id, c.email FOR UPDATE OF c'
    USING projects, emails;
    EXECUTE 'UPDATE customers c SET latest_mrr = n.mrr
        FROM (SELECT DISTINCT k.project_id, k.email, COALESCE((SELECT e.mrr FROM churn_events e
                  WHERE e.project_id = k.project_id AND e.customer_email = k.email
                  ORDER BY e.created_at DESC, e.id DESC LIMIT 1), 0) AS mrr
              FROM unnest($1, $2) AS k(project_id, email)) n
        WHERE c.project_id = n.project_id AND c.email = n.email AND c.latest_mrr <> n.mrr
          AND EXISTS (SELECT 1 FROM projects p WHERE p.id = c.project_id)'
    USING projects, emails;
END;
$$;

CREATE FUNCTION customers_latest_mrr_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM customers_latest_mrr_set(array_agg(project_id), array_agg(customer_email))
        FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM customers_latest_mrr_set(array_agg(project_id), array_agg(customer_email))
        FROM old_rows;
    ELSE
        PERFORM customers_latest_mrr_set(ARRAY[OLD.project_id, NEW.project_id],
                                         ARRAY[OLD.customer_email, NEW.customer_email]);
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER customers_latest_mrr_event_insert AFTER INSERT ON churn_events
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION customers_latest_mrr_events();

CREATE TRIGGER customers_latest_mrr_event_delete AFTER DELETE ON churn_events
REFERENCING OLD TABLE AS old_rows
FOR EACH STATEMENT EXECUTE FUNCTION customers_latest_mrr_events();

CREATE TRIGGER customers_latest_mrr_event_update
AFTER UPDATE OF mrr, created_at, customer_email ON churn_events
FOR EACH ROW WHEN (OLD.mrr IS DISTINCT FROM NEW.mrr OR OLD.created_at IS DISTINCT FROM NEW.created_at
    OR OLD.customer_email IS DISTINCT FROM NEW.customer_email)
EXECUTE FUNCTION customers_latest_mrr_events();

CREATE FUNCTION customers_latest_mrr_customers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Tracking upserts its customers: most statements insert none.
    IF NOT EXISTS (SELECT 1 FROM new_rows) THEN
        RETURN NULL;
    END IF;
    PERFORM customers_latest_mrr_set(array_agg(project_id), array_agg(email)) FROM new_rows;
    RETURN NULL;
END;
$$;

CREATE TRIGGER customers_latest_mrr_customer_insert AFTER INSERT ON customers
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION customers_latest_mrr_customers();
