-- A send claims its variant (status 'sending') before the email leaves. The claim records
-- when it was taken; the message id and recipient are recorded with it, so a claim left by a
-- crash can be settled from evidence (an .eml in the file outbox) or by an operator.
ALTER TABLE recovery_variants ADD COLUMN claimed_at TEXT;
-- Claims taken before this column existed set updated_at when they were taken.
UPDATE recovery_variants SET claimed_at = updated_at WHERE status = 'sending';
CREATE INDEX recovery_variants_claims ON recovery_variants (claimed_at) WHERE status = 'sending';
