-- Verified keys (crates/api/src/keys.rs): on PostgreSQL a trigger announces a key's change
-- to every process (migration 0026 there). An embedded database has no notifications: the
-- store announces its own changes to its process, and a change made by another process on
-- the same file (`atelier admin key revoke`) is seen when the verified key's half second ends.
-- Nothing to change in the schema; kept so both databases count their migrations alike.
SELECT 1;
