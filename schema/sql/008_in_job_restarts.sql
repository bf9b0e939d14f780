-- baton-migration: foreign_keys=off
-- baton run history, schema version 8 (docs/store.md): restarts of the trainer inside one SLURM
-- job start, and the hangs that caused them. An attempt is now (job id, restart count, in-job
-- sequence number); the table is rebuilt because its UNIQUE key changes (SQLite cannot alter a
-- constraint). The store runs this file with foreign keys off (the marker above) so dropping
-- the old table does not cascade into steps, microsteps and checkpoints, and checks them with
-- PRAGMA foreign_key_check before it commits. Existing rows keep their ids and take seq 0.
CREATE TABLE attempts_v8 (
  id                  INTEGER PRIMARY KEY,
  run_id              INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  job_id              TEXT    NOT NULL,
  restart_count       INTEGER NOT NULL,
  nodes               TEXT    NOT NULL DEFAULT '',
  started_at          REAL,
  ended_at            REAL,
  slurm_state         TEXT    NOT NULL DEFAULT '',
  exit_code           INTEGER,
  action              TEXT    NOT NULL DEFAULT '',  -- requeue | done | fail | restart
  end_reason          TEXT    NOT NULL DEFAULT '',  -- ... | hang | no_progress
  trainer_end_reason  TEXT    NOT NULL DEFAULT '',
  resume_mode         TEXT    NOT NULL DEFAULT '',
  checkpoint          TEXT    NOT NULL DEFAULT '',
  step0               INTEGER,
  last_step           INTEGER,
  resume_warmup_steps INTEGER NOT NULL DEFAULT 0,
  warmup_until        INTEGER,
  world_size          INTEGER,
  config_hash         TEXT    NOT NULL DEFAULT '',
  trainer_message     TEXT    NOT NULL DEFAULT '',
  trainer_exit_code   INTEGER,
  trainer_signal      TEXT    NOT NULL DEFAULT '',
  slurm_reason        TEXT    NOT NULL DEFAULT '',
  slurm_exit_code     TEXT    NOT NULL DEFAULT '',
  init_from           TEXT    NOT NULL DEFAULT '',
  hold_released_at    REAL,
  hold_release_error  TEXT    NOT NULL DEFAULT '',
  -- 0 for the job start itself; 1, 2, ... for each restart of the trainer inside it.
  in_job_seq          INTEGER NOT NULL DEFAULT 0,
  -- Why the launcher restarted the trainer before this attempt: hang | crash (NULL for seq 0).
  restart_cause       TEXT,
  -- A hang that ended this attempt: the stale ranks' newest heartbeat and when the launcher
  -- declared it (Unix seconds), the stale ranks with their last phase ("1:micro-step"), and
  -- their threads' stacks (gdb/eu-stack, cut to 64 KiB; the job log has them whole).
  hang_last_heartbeat_at REAL,
  hang_detected_at       REAL,
  hang_stale_ranks       TEXT,
  hang_stack             TEXT,
  UNIQUE (run_id, job_id, restart_count, in_job_seq)
);
INSERT INTO attempts_v8 (id, run_id, job_id, restart_count, nodes, started_at, ended_at,
    slurm_state, exit_code, action, end_reason, trainer_end_reason, resume_mode, checkpoint,
    step0, last_step, resume_warmup_steps, warmup_until, world_size, config_hash,
    trainer_message, trainer_exit_code, trainer_signal, slurm_reason, slurm_exit_code,
    init_from, hold_released_at, hold_release_error)
  SELECT id, run_id, job_id, restart_count, nodes, started_at, ended_at,
    slurm_state, exit_code, action, end_reason, trainer_end_reason, resume_mode, checkpoint,
    step0, last_step, resume_warmup_steps, warmup_until, world_size, config_hash,
    trainer_message, trainer_exit_code, trainer_signal, slurm_reason, slurm_exit_code,
    init_from, hold_released_at, hold_release_error
  FROM attempts;
DROP TABLE attempts;
ALTER TABLE attempts_v8 RENAME TO attempts;
