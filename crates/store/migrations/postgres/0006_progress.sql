-- How far a running node got, in thousandths, as its engine last reported it
-- (remote model servers report progress; the built-in engine does not).
ALTER TABLE nodes ADD COLUMN progress_milli BIGINT;
