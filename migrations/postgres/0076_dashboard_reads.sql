-- Reads of the dashboard at 1,000,000 events (issue 21).
-- A customer's latest event with its MRR from the index alone: MRR at risk and Needs you read
-- it for every risky customer, and each table lookup is a random read.
DROP INDEX churn_events_by_customer_latest;
CREATE INDEX churn_events_by_customer_latest ON churn_events (project_id, customer_email, created_at, id, mrr);
-- Measured uplift counts only the events in a holdout group, which autopilot assigns: without
-- this the count walked every event of the period.
CREATE INDEX churn_events_in_holdout ON churn_events (project_id, created_at, holdout_group, recovered_at)
    WHERE holdout_group IS NOT NULL;
