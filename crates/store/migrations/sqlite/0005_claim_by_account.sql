-- The PostgreSQL claim's index (tasks_available_by_account). SQLite's claim takes
-- turns on the one writer and reads the queue in one scan; it needs no index for
-- this, and the lists of migrations stay numbered alike.
SELECT 1;
