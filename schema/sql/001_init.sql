-- baton run history, schema version 1 (docs/store.md).
-- Applied by the orchestrator's store when PRAGMA user_version < 1, inside one transaction.
-- Times are Unix seconds (REAL). Steps are 1-based optimizer step indices.

-- One row per `baton submit`.
CREATE TABLE runs (
  id            INTEGER PRIMARY KEY,
  name          TEXT    NOT NULL,
  status        TEXT    NOT NULL CHECK (status IN
                  ('PENDING', 'RUNNING', 'REQUEUED', 'COMPLETED', 'FAILED', 'CANCELLED')),
  reason        TEXT    NOT NULL DEFAULT '',   -- why the run is FAILED/CANCELLED (or '' )
  config        TEXT    NOT NULL,              -- the frozen run.yaml, verbatim
  config_source TEXT    NOT NULL DEFAULT '',   -- the file given to `baton submit`
  run_dir       TEXT    NOT NULL UNIQUE,
  target_steps  INTEGER NOT NULL,
  max_restarts  INTEGER NOT NULL,
  max_failures  INTEGER NOT NULL,
  job_id        TEXT    NOT NULL DEFAULT '',   -- current SLURM job id ('' before sbatch)
  created_at    REAL    NOT NULL,
  updated_at    REAL    NOT NULL
);
CREATE INDEX runs_name ON runs (name, id);
CREATE INDEX runs_status ON runs (status);

-- One row per SLURM job start (job id, SLURM_RESTART_COUNT) of a run.
CREATE TABLE attempts (
  id                  INTEGER PRIMARY KEY,  -- increases in the order attempts happened
  run_id              INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  job_id              TEXT    NOT NULL,
  restart_count       INTEGER NOT NULL,
  nodes               TEXT    NOT NULL DEFAULT '',
  started_at          REAL,
  ended_at            REAL,
  slurm_state         TEXT    NOT NULL DEFAULT '',  -- last state reconcile saw (RUNNING, PREEMPTED, ...)
  exit_code           INTEGER,                      -- the trainer's exit code (launcher's attempt_end)
  action              TEXT    NOT NULL DEFAULT '',  -- requeue | done | fail ('' while running)
  end_reason          TEXT    NOT NULL DEFAULT '',  -- completed | preempted | timeout | node_failure |
                                                    -- crashed | cancelled | config_error | data_error |
                                                    -- failure_budget | restart_budget | no_progress
  trainer_end_reason  TEXT    NOT NULL DEFAULT '',  -- segment_end reason: completed | signal | error
  resume_mode         TEXT    NOT NULL DEFAULT '',  -- fresh | exact | weights_only
  checkpoint          TEXT    NOT NULL DEFAULT '',  -- checkpoint resumed from ('' = none)
  step0               INTEGER,                      -- steps already done when the attempt began
  last_step           INTEGER,                      -- last optimizer step finished
  resume_warmup_steps INTEGER NOT NULL DEFAULT 0,
  warmup_until        INTEGER,                      -- first step with full LR (segment_start)
  world_size          INTEGER,
  config_hash         TEXT    NOT NULL DEFAULT '',
  UNIQUE (run_id, job_id, restart_count)
);

-- One row per optimizer step and attempt. Steps re-done after a resume keep both rows; the
-- earlier attempt's row is marked superseded (the effective series has superseded = 0).
CREATE TABLE steps (
  run_id        INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  attempt_id    INTEGER NOT NULL REFERENCES attempts (id) ON DELETE CASCADE,
  step          INTEGER NOT NULL,
  time          REAL    NOT NULL,
  lr            REAL,
  loss          REAL,
  loss_video    REAL,
  loss_action   REAL,
  grad_norm     REAL,
  tokens        INTEGER,
  padded_tokens INTEGER,
  samples       INTEGER,
  valid_frames  INTEGER,
  padded_frames INTEGER,
  step_time_s   REAL,
  tokens_per_s  REAL,
  in_warmup     INTEGER NOT NULL DEFAULT 0,
  epoch         INTEGER,
  superseded    INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (attempt_id, step)
) WITHOUT ROWID;
-- The UI's series query: one run's steps in step order (optionally only superseded = 0).
CREATE INDEX steps_run_step ON steps (run_id, step);

-- Per micro-step profile (train.profile > 0).
CREATE TABLE microsteps (
  run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  attempt_id INTEGER NOT NULL REFERENCES attempts (id) ON DELETE CASCADE,
  step       INTEGER NOT NULL,
  micro      INTEGER NOT NULL,
  tokens     INTEGER,
  fwd_bwd_s  REAL,
  peak_bytes INTEGER,
  PRIMARY KEY (attempt_id, step, micro)
) WITHOUT ROWID;

-- Checkpoints the trainer reported. `valid` is 1 when reported; `baton checkpoints` re-checks
-- the folder on disk (retention deletes old ones).
CREATE TABLE checkpoints (
  run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  step       INTEGER NOT NULL,
  attempt_id INTEGER REFERENCES attempts (id) ON DELETE SET NULL,
  path       TEXT    NOT NULL,
  bytes      INTEGER,
  seconds    REAL,
  reason     TEXT    NOT NULL DEFAULT '',  -- periodic | final | signal
  valid      INTEGER NOT NULL DEFAULT 1,
  time       REAL    NOT NULL,
  PRIMARY KEY (run_id, step)
);

-- How far each events file has been ingested: rows and cursor commit in one transaction.
CREATE TABLE ingest_cursors (
  path       TEXT    PRIMARY KEY,   -- absolute path of <run_dir>/events/<job>.<restart>.jsonl
  run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  offset     INTEGER NOT NULL,      -- bytes consumed (always just after a '\n')
  bad_lines  INTEGER NOT NULL DEFAULT 0,  -- complete lines that were not valid records (skipped)
  updated_at REAL    NOT NULL
);
