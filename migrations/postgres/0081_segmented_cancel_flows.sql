-- Cancel flows shown by segment (decisions §19), besides the project's default flow of
-- `cancel_flows`. `segment` and `flow` are JSON text (the flow as `cancel_flows.flow` holds
-- it); `active` is 0 or 1 (one type on both backends). The widget is shown the active flow
-- of lowest `priority` whose segment matches, ties going to the older flow.
CREATE TABLE segmented_cancel_flows (
    id         TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    priority   BIGINT NOT NULL,
    segment    TEXT NOT NULL,
    flow       TEXT NOT NULL,
    active     INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX segmented_cancel_flows_by_priority
    ON segmented_cancel_flows (project_id, priority, created_at, id);

-- The flow a cancel-flow submission was routed to (null: the default flow) and its
-- experiment variant (null: none). No foreign key: an event keeps naming a deleted flow.
ALTER TABLE churn_events ADD COLUMN flow_id TEXT;
ALTER TABLE churn_events ADD COLUMN flow_variant TEXT;
