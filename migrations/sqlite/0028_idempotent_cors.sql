-- The CORS headers of a stored answer (the cancel-flow routes answer browsers), so that a
-- replay is as readable by the page that sent the request as the first answer was.
ALTER TABLE idempotency_keys ADD COLUMN allow_origin TEXT;
ALTER TABLE idempotency_keys ADD COLUMN expose_headers TEXT;
