-- baton run history: the time inline evals took (docs/store.md, "Time buckets"). In eval.mode
-- inline the training job evaluates its checkpoints between steps; that time is its own bucket,
-- `eval`, not training. Each attempt sums the `eval` events of its events files as ingest applies
-- them (so a later eval of the same step, which replaces the evals row, does not take away the
-- time the first one took), with the first one's start and the last one's end.
ALTER TABLE attempts ADD COLUMN eval_s REAL NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN evals INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN first_eval_start REAL;
ALTER TABLE attempts ADD COLUMN last_eval_end REAL;
ALTER TABLE time_buckets ADD COLUMN eval_s REAL NOT NULL DEFAULT 0;
