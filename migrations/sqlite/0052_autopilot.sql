-- Autopilot (decisions §13): an event created while it is on gets a holdout group
-- ('treatment' or 'control'; NULL with autopilot off) and an autopilot state ('scheduled',
-- 'sent' or 'skipped', with the reason of a skip).
ALTER TABLE churn_events ADD COLUMN holdout_group TEXT;
ALTER TABLE churn_events ADD COLUMN autopilot_status TEXT;
ALTER TABLE churn_events ADD COLUMN autopilot_reason TEXT;
