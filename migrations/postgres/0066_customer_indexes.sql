-- `customers_by_last_event` went with every tracked event: each one moves the customer's
-- last_event_at, so each customer update wrote this index too (on PostgreSQL one more entry
-- per update, as an update that changes an indexed column writes every index). Its one reader
-- was the scoring run's page of customers, which goes in email order after the last page:
-- the primary key answers that page directly, while through this index PostgreSQL fetched
-- every recently active customer of the project and sorted them, once per page of 500.
DROP INDEX customers_by_last_event;
