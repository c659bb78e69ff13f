-- Verified keys (crates/api/src/keys.rs): each API process trusts a key the database
-- verified for half a second. A change to what authentication reads of a key (revoked, scopes,
-- default lane, retention) is announced on `atelier_keys` when it commits, so that every
-- process reads its keys again at once; the half second is only the fence for what no
-- notification reaches.
CREATE FUNCTION atelier_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('atelier_keys', '');
    RETURN NULL;
END $$;

CREATE TRIGGER key_changed AFTER UPDATE ON api_keys
FOR EACH ROW WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at
                   OR OLD.scopes IS DISTINCT FROM NEW.scopes
                   OR OLD.priority IS DISTINCT FROM NEW.priority
                   OR OLD.retention_secs IS DISTINCT FROM NEW.retention_secs)
EXECUTE FUNCTION atelier_key_changed();

CREATE TRIGGER key_removed AFTER DELETE ON api_keys
FOR EACH ROW EXECUTE FUNCTION atelier_key_changed();
