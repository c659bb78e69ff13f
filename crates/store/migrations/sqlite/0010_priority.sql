-- Priority lanes. A run's lane (interactive, normal, bulk), its rank on each of its tasks
-- (0 is claimed first), and a key's default lane (NULL: normal).
ALTER TABLE runs ADD COLUMN priority TEXT NOT NULL DEFAULT 'normal'
    CHECK (priority IN ('interactive', 'normal', 'bulk'));
ALTER TABLE tasks ADD COLUMN lane INTEGER NOT NULL DEFAULT 1;
ALTER TABLE api_keys ADD COLUMN priority TEXT CHECK (priority IN ('interactive', 'normal', 'bulk'));
