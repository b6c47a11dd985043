-- Why an offer accepted in the cancel flow could not be applied at the payment provider
-- (decisions §11); null when it was applied or nothing was to be applied.

ALTER TABLE churn_events ADD COLUMN offer_error TEXT;
