-- Fair background work (decisions §20): the project a job works for, so that a runner can
-- keep any one project to half of its slots. Set at enqueue from the row the job names
-- (`store::jobs::Owner`); NULL for work of no project (account emails) and for rows enqueued
-- before this column, which share one group of their own.
ALTER TABLE jobs ADD COLUMN project_id TEXT;
-- Emails that jobs send go out once: a job claims its email here, in a committed write,
-- before handing it to the mail server, as sends claim their variant (0009) and check-ins
-- their alert (0025). A claim found when the job runs again (the process died between the
-- hand-over and the job's completion) is never sent again.
ALTER TABLE jobs ADD COLUMN email_claimed_at TEXT;
