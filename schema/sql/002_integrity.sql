-- baton run history, schema version 2 (docs/store.md): what the trainer says about bad input.
-- Applied by the orchestrator's store when PRAGMA user_version < 2, inside one transaction;
-- a version 1 database keeps every row (the new columns take their defaults).

-- A step whose loss or gradient norm was NaN/Inf was not applied (weights and optimizer state
-- untouched). Its row stays, flagged, with the episode ids of the whole optimizer step as a
-- JSON array of strings (NULL for applied steps).
ALTER TABLE steps ADD COLUMN nonfinite INTEGER NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN nonfinite_episodes TEXT;
-- The UI's and the CLI's list of skipped steps: only the few flagged rows are indexed.
CREATE INDEX steps_nonfinite ON steps (run_id, step) WHERE nonfinite = 1;

-- The trainer's own account of how its segment ended (segment_end): its one-line message
-- ('' when it wrote none, e.g. completed, or it crashed without a segment_end) and exit code
-- (NULL without a segment_end). attempts.exit_code stays the launcher's view.
ALTER TABLE attempts ADD COLUMN trainer_message TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN trainer_exit_code INTEGER;
