-- baton run history: eval results (docs/eval.md, "Results"). One row per (run, checkpoint step):
-- the held-out flow-matching loss of that checkpoint and its video and action parts, from an
-- `eval` event in an events file or from the run's evals/step_<N>.json. A later arrival for the
-- same step replaces the row whole.
CREATE TABLE evals (
  run_id       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  step         INTEGER NOT NULL,                -- the checkpoint's step
  loss         REAL,                            -- NULL: not a finite number
  loss_video   REAL,
  loss_action  REAL,
  mode         TEXT    NOT NULL DEFAULT '',     -- inline | job
  episodes     INTEGER NOT NULL DEFAULT 0,      -- held-out episodes evaluated
  valid_frames INTEGER NOT NULL DEFAULT 0,
  seconds      REAL,                            -- how long the eval took
  config_hash  TEXT    NOT NULL DEFAULT '',
  job_id       TEXT    NOT NULL DEFAULT '',     -- the job that computed it
  checkpoint   TEXT    NOT NULL DEFAULT '',     -- the checkpoint folder evaluated
  source       TEXT    NOT NULL DEFAULT '',     -- event | file: where the row came from
  arrived_at   REAL    NOT NULL,                -- when ingest stored it (Unix seconds)
  PRIMARY KEY (run_id, step)
);
