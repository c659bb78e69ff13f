-- Uploaded images (POST /api/v3/uploads) share the inputs table with the inline images of
-- runs: content-addressed per account, linked to the runs that use them, swept when unused.
-- An upload is kept as its raw bytes (an inline image as the text that was sent), under its
-- own key prefix, and stays usable until keep_until whether or not a run used it. The two
-- kinds' digests cannot meet: one is over image bytes, the other over base64 or data-URI text.
ALTER TABLE inputs ADD COLUMN kind TEXT NOT NULL DEFAULT 'inline';  -- 'inline' or 'upload'
ALTER TABLE inputs ADD COLUMN keep_until INTEGER NOT NULL DEFAULT 0;  -- usable until (uploads)
ALTER TABLE inputs ADD COLUMN width INTEGER;                           -- pixels (uploads)
ALTER TABLE inputs ADD COLUMN height INTEGER;
