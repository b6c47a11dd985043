-- The customer and risk count triggers of 0062 joined their transition tables to
-- `risk_scores` (and `customers`) by plain joins. PostgreSQL has no statistics for a
-- transition table and guesses it as large as the whole table, so it hash-joined a full scan
-- of `risk_scores`, twice per scoring slice: 261 ms a call with 200,000 score rows, growing
-- with the 90 days kept, and the customer rows of the slice (and of concurrent tracking)
-- stayed locked meanwhile. Each row's partner is now looked up through its key in a
-- LATERAL subquery with LIMIT 1, which the planner cannot turn into a join: one index probe
-- per changed row whatever the estimates. Rows without a risk day need no probe.
--
-- The update trigger also pairs each old row with its new one. PL/pgSQL keeps a generic plan
-- made for transition tables of whatever size its first calls saw; made for one row, the
-- join of old and new rows was a nested loop: 250,000 comparisons for a scoring slice of 500
-- customers (41 ms), 41 million for a tracking group of 6,400. The pairs are now formed by
-- grouping both tables' rows by key (an UPDATE changes a row once per statement), which has
-- no quadratic plan.

CREATE OR REPLACE FUNCTION customers_count_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign BIGINT := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    PERFORM customer_counts_add(array_agg(project_id), array_agg(key), array_agg(sign * n))
        FROM (
            SELECT project_id, 'customer' AS key, COUNT(*) AS n FROM changed_rows GROUP BY 1
            UNION ALL
            SELECT c.project_id, 'risk_' || COALESCE(c.risk_level, 'none'), COUNT(*) FROM changed_rows c
            CROSS JOIN LATERAL (
                SELECT 1 FROM risk_scores r
                WHERE r.project_id = c.project_id AND r.customer_email = c.email AND r.day = c.risk_day
                LIMIT 1
            ) scored
            WHERE c.risk_day IS NOT NULL
            GROUP BY 1, 2
        ) changes;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION customers_count_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM customer_counts_add(array_agg(project_id), array_agg(key), array_agg(n))
        FROM (
            WITH paired AS (
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
            ),
            moved AS MATERIALIZED (
                SELECT * FROM paired
                WHERE old_day IS DISTINCT FROM new_day OR old_level IS DISTINCT FROM new_level
            )
            SELECT project_id, key, SUM(d) AS n FROM (
                SELECT m.project_id, 'risk_' || COALESCE(m.old_level, 'none') AS key, -1 AS d FROM moved m
                CROSS JOIN LATERAL (
                    SELECT 1 FROM risk_scores r
                    WHERE r.project_id = m.project_id AND r.customer_email = m.email AND r.day = m.old_day
                    LIMIT 1
                ) scored
                WHERE m.old_day IS NOT NULL
                UNION ALL
                SELECT m.project_id, 'risk_' || COALESCE(m.new_level, 'none'), 1 FROM moved m
                CROSS JOIN LATERAL (
                    SELECT 1 FROM risk_scores r
                    WHERE r.project_id = m.project_id AND r.customer_email = m.email AND r.day = m.new_day
                    LIMIT 1
                ) scored
                WHERE m.new_day IS NOT NULL
            ) moves GROUP BY 1, 2
        ) changes;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION risk_scores_count_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign BIGINT := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    PERFORM customer_counts_add(array_agg(project_id), array_agg(key), array_agg(sign * n))
        FROM (
            SELECT r.project_id, 'risk_' || COALESCE(c.risk_level, 'none') AS key, COUNT(*) AS n
            FROM changed_rows r
            CROSS JOIN LATERAL (
                SELECT c.risk_level FROM customers c
                WHERE c.project_id = r.project_id AND c.email = r.customer_email AND c.risk_day = r.day
                LIMIT 1
            ) c
            GROUP BY 1, 2
        ) changes;
    RETURN NULL;
END;
$$;
