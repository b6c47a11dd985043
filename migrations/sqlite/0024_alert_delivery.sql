-- Alert delivery (decisions §9): why an alert was skipped (no webhook URL, suppressed address,
-- quota reached …), shown in the alert log.
ALTER TABLE risk_alerts ADD COLUMN reason TEXT;
