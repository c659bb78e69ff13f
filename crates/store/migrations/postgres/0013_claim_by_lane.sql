-- SQLite's claim gains the index PostgreSQL's has had since 0010 (tasks_available_by_lane);
-- nothing changes here, and the lists of migrations stay numbered alike.
SELECT 1;
