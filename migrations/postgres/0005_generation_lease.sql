-- When the running generation of an event began: `processing` is a lease that a new
-- generation may take over only once it is old enough (the earlier run was interrupted).
ALTER TABLE churn_events ADD COLUMN generation_started_at TEXT;
