-- What a variant lacks to keep its promises (a code, testimonials, feature names, a
-- founder's name), as a JSON array of sentences, fixed at generation. A variant with any is
-- never recommended nor sent by autopilot.
ALTER TABLE recovery_variants ADD COLUMN warnings TEXT NOT NULL DEFAULT '[]';
