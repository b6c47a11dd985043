-- The customer and risk count triggers of 0062 read `risk_scores` (and `customers`) through
-- plans PL/pgSQL keeps per connection. Such a plan is made for the sizes seen when it is
-- made: for transition tables PostgreSQL has no statistics, and tables that are empty at
-- first (a new install, a new project's first scoring run) get plans that scan them. So the
-- update trigger paired old and new rows by a nested loop (250,000 comparisons per scoring
-- slice of 500 customers, 41 million per tracking group of 6,400) and read `risk_scores`
-- by full scans (261 ms a call at 200,000 scores, growing with the 90 days kept), while the
-- slice's customer rows, which tracking upserts too, stayed locked.
--
-- Now every statement that reads `risk_scores` or `customers` runs by EXECUTE, planned on each
-- call for the rows it has, and looks each row's partner up through its key (LATERAL … LIMIT 1:
-- one index probe per changed row whatever the estimates). Calls that change no risk count
-- skip it after a check that reads the transition tables only: a tracking group's upsert
-- (customers without a score day, or whose score day and level did not move) plans nothing.

CREATE OR REPLACE FUNCTION customers_count_changed() RETURNS trigger LANGUAGE plpgsql AS $$
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
-- statement), which has no quadratic plan.
CREATE OR REPLACE FUNCTION customers_count_updated() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE OR REPLACE FUNCTION risk_scores_count_changed() RETURNS trigger LANGUAGE plpgsql AS $$
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
