-- The outcome of applying a cancel-flow offer at the payment provider (decisions §11), said
-- once: `offer_applied_at` when it was applied, else `offer_error` (0041) when it failed for
-- good. `offer_locked_until` holds the offer while an attempt runs (the submission's inline
-- attempt or the `apply_offer` job), or until a retry after the provider was unavailable.

ALTER TABLE churn_events ADD COLUMN offer_applied_at TEXT;
ALTER TABLE churn_events ADD COLUMN offer_locked_until TEXT;
