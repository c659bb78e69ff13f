-- What a key may do (`atelier_core::scopes`): its scopes as text, in a fixed order
-- (`run,read,workflows,webhooks,keys`). Keys made before scopes existed keep every scope;
-- new keys are written with the scopes their maker chose (`run,read` by default).
ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT 'run,read,workflows,webhooks,keys';
