-- Decline-aware dunning (decisions §18). New projects retry on the `smart` schedule; those
-- that exist keep the fixed interval they had: their stored configurations say `fixed`, and
-- those never stored get the old defaults with `fixed`.
UPDATE dunning_configs SET config = (config::jsonb || '{"schedule":"fixed"}'::jsonb)::text;
INSERT INTO dunning_configs (project_id, config, updated_at)
SELECT id, '{"enabled":true,"max_retries":4,"retry_interval_hours":72,"tone_sequence":["friendly","professional","urgent","final"],"send_emails":true,"sender_name":"Billing Team","schedule":"fixed"}',
       to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
FROM projects WHERE id NOT IN (SELECT project_id FROM dunning_configs);

-- What churn did to the subscription when it gave the payment up (`final_action`), as JSON
-- `{action, outcome, error?, at}`; NULL while nothing was tried.
ALTER TABLE payment_failures ADD COLUMN final_action_result TEXT;
