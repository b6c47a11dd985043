-- A segmented flow's experiment (decisions §19): its variants as a JSON array of
-- `{key, weight, reasons?, offers?, copy?}` in the flow's order, `[]` for none.
ALTER TABLE segmented_cancel_flows ADD COLUMN variants TEXT NOT NULL DEFAULT '[]';

-- An experiment's results read the events of one flow in a window of creation; only
-- cancel-flow submissions routed to a segmented flow have a `flow_id`.
CREATE INDEX churn_events_by_flow ON churn_events (project_id, flow_id, created_at)
    WHERE flow_id IS NOT NULL;
