-- Providers are stored under their real names (decisions §15): `providerA` becomes `stripe`
-- and `providerB` `razorpay` wherever a provider is named. Sealed credentials keep opening:
-- their scope names the provider by its former name (`Provider::sealing_name`).
UPDATE provider_connections SET provider = 'stripe' WHERE provider = 'providerA';
UPDATE provider_connections SET provider = 'razorpay' WHERE provider = 'providerB';
UPDATE provider_events SET provider = 'stripe' WHERE provider = 'providerA';
UPDATE provider_events SET provider = 'razorpay' WHERE provider = 'providerB';
UPDATE payment_failures SET provider = 'stripe' WHERE provider = 'providerA';
UPDATE payment_failures SET provider = 'razorpay' WHERE provider = 'providerB';
UPDATE churn_events SET provider = 'stripe' WHERE provider = 'providerA';
UPDATE churn_events SET provider = 'razorpay' WHERE provider = 'providerB';
-- Tracked events made from provider events are keyed `<provider>:<event id>`.
UPDATE behavior_events SET id = 'stripe:' || substr(id, 11)
WHERE substr(id, 1, 10) = 'providerA:';
UPDATE behavior_events SET id = 'razorpay:' || substr(id, 11)
WHERE substr(id, 1, 10) = 'providerB:';
