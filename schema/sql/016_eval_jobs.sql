-- baton run history: eval jobs (docs/eval.md, "Eval jobs"). In eval.mode job, `baton watch` and
-- `baton serve` submit one small SLURM job per committed, verified eval-target checkpoint of a
-- run; each submission is a row here, so no store that saw it submits it again:
--   - attempt 1 is the first job of (run, step), attempt 2 its one retry; a row with attempt 0
--     records a checkpoint that did not verify and was never submitted (reason names the file);
--   - UNIQUE (run_id, step, attempt): two watchers that race for the same checkpoint cannot both
--     record (and so both keep) a job for it.
CREATE TABLE eval_jobs (
  id           INTEGER PRIMARY KEY,
  run_id       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  step         INTEGER NOT NULL,
  attempt      INTEGER NOT NULL,
  job_id       TEXT    NOT NULL DEFAULT '',  -- '' for attempt 0
  -- pending | running | done | failed | unverified
  state        TEXT    NOT NULL,
  reason       TEXT    NOT NULL DEFAULT '',  -- why it failed (SLURM state, exit code, log line)
  reported     INTEGER NOT NULL DEFAULT 0,   -- 1: its failure was raised as an incident
  submitted_at REAL    NOT NULL,
  updated_at   REAL    NOT NULL,
  ended_at     REAL,                         -- NULL while it is live
  UNIQUE (run_id, step, attempt)
);
CREATE INDEX eval_jobs_live ON eval_jobs (state, run_id);
