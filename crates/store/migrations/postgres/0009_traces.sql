-- The W3C traceparent of the request that made a run, when traces are exported: the run's
-- nodes and webhook deliveries continue that trace in whichever process runs them.
ALTER TABLE runs ADD COLUMN trace_parent TEXT;
