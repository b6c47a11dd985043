-- Visits of a failing payment's card-update page (`/pay/<token>`), for the record's
-- timeline; `via` says where the customer came from (email, banner, or a link).
CREATE TABLE payment_page_visits (
    id         TEXT PRIMARY KEY,
    failure_id TEXT NOT NULL REFERENCES payment_failures (id) ON DELETE CASCADE,
    at         TEXT NOT NULL,
    via        TEXT NOT NULL
);
CREATE INDEX payment_page_visits_by_failure ON payment_page_visits (failure_id, at);

-- Stripe Checkout sessions whose return was handled, so that a reload of the return page (or
-- a replayed session id) does not retry the invoice again.
CREATE TABLE card_update_sessions (
    session_id TEXT PRIMARY KEY,
    failure_id TEXT NOT NULL REFERENCES payment_failures (id) ON DELETE CASCADE,
    at         TEXT NOT NULL
);
