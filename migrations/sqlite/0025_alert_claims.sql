-- Direct-mode alert delivery (decisions §9) is at most once: an attempt is claimed here in a
-- committed write before its email is handed to the mail server, and the claim is cleared
-- when the attempt is recorded. A claim found without a recorded outcome (the process died
-- mid-send) is logged as an attempt of unknown outcome and never sent again by itself.
ALTER TABLE risk_alerts ADD COLUMN claimed_at TEXT;
