-- Jobs are deleted when done, so the due-job index covers only outstanding rows, in the order
-- the claim takes them. The claim repeats this predicate word for word so the planner uses it.
DELETE FROM jobs WHERE status = 'done';
DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (run_at, id) WHERE status IN ('queued', 'running');
