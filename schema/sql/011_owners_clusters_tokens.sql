-- baton-migration: foreign_keys=off
-- baton run history, schema version 11 (docs/store.md, docs/team.md): one history for a lab.
-- Applied when PRAGMA user_version < 11, inside one transaction; every existing row is kept.
--   - runs.owner: the Unix user who submitted the run ('' for runs submitted before version 11);
--   - runs.cluster and attempts.cluster: SLURM's ClusterName, or slurm.cluster of the config
--     ('' = unknown, and every row written before version 11);
--   - the attempt key becomes (run, cluster, job id, restart count, in-job sequence), so equal
--     job ids of two clusters stay apart. The table is rebuilt as in version 8 (a UNIQUE
--     constraint cannot be altered): run with foreign keys off, checked before it commits;
--     existing rows keep their ids and take cluster '';
--   - api_tokens: the per-user tokens of `baton serve --auth tokens` (stored hashed);
--   - run_actions: the audit of write actions (cancel, resume) on a run.
ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN cluster TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_owner ON runs (owner);
CREATE INDEX runs_cluster ON runs (cluster);

CREATE TABLE attempts_v11 (
  id                  INTEGER PRIMARY KEY,
  run_id              INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  job_id              TEXT    NOT NULL,
  restart_count       INTEGER NOT NULL,
  nodes               TEXT    NOT NULL DEFAULT '',
  started_at          REAL,
  ended_at            REAL,
  slurm_state         TEXT    NOT NULL DEFAULT '',
  exit_code           INTEGER,
  action              TEXT    NOT NULL DEFAULT '',
  end_reason          TEXT    NOT NULL DEFAULT '',
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
  in_job_seq          INTEGER NOT NULL DEFAULT 0,
  restart_cause       TEXT,
  hang_last_heartbeat_at REAL,
  hang_detected_at       REAL,
  hang_stale_ranks       TEXT,
  hang_stack             TEXT,
  -- SLURM's ClusterName of the job ('' = unknown).
  cluster             TEXT    NOT NULL DEFAULT '',
  UNIQUE (run_id, cluster, job_id, restart_count, in_job_seq)
);
INSERT INTO attempts_v11 (id, run_id, job_id, restart_count, nodes, started_at, ended_at,
    slurm_state, exit_code, action, end_reason, trainer_end_reason, resume_mode, checkpoint,
    step0, last_step, resume_warmup_steps, warmup_until, world_size, config_hash,
    trainer_message, trainer_exit_code, trainer_signal, slurm_reason, slurm_exit_code,
    init_from, hold_released_at, hold_release_error, in_job_seq, restart_cause,
    hang_last_heartbeat_at, hang_detected_at, hang_stale_ranks, hang_stack, cluster)
  SELECT id, run_id, job_id, restart_count, nodes, started_at, ended_at,
    slurm_state, exit_code, action, end_reason, trainer_end_reason, resume_mode, checkpoint,
    step0, last_step, resume_warmup_steps, warmup_until, world_size, config_hash,
    trainer_message, trainer_exit_code, trainer_signal, slurm_reason, slurm_exit_code,
    init_from, hold_released_at, hold_release_error, in_job_seq, restart_cause,
    hang_last_heartbeat_at, hang_detected_at, hang_stale_ranks, hang_stack, ''
  FROM attempts;
DROP TABLE attempts;
ALTER TABLE attempts_v11 RENAME TO attempts;

-- One token per user. The secret is never stored: only SHA-256(salt || token), with a random
-- salt per token (hex), compared in constant time (orchestrator/store/token_hash.h).
CREATE TABLE api_tokens (
  id          INTEGER PRIMARY KEY,
  username    TEXT    NOT NULL UNIQUE,
  admin       INTEGER NOT NULL DEFAULT 0,  -- 1: may cancel and resume every user's runs
  salt        TEXT    NOT NULL,            -- 16 random bytes, hex
  hash        TEXT    NOT NULL,            -- SHA-256 of salt bytes then token bytes, hex
  created_at  REAL    NOT NULL
);

-- Every write action asked of a run (web or CLI), allowed or not: who, when, what, the result.
CREATE TABLE run_actions (
  id          INTEGER PRIMARY KEY,
  run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  username    TEXT    NOT NULL,            -- the identity that asked
  action      TEXT    NOT NULL,            -- cancel | resume
  source      TEXT    NOT NULL,            -- web | cli
  asked_at    REAL    NOT NULL,            -- Unix seconds
  result      TEXT    NOT NULL,            -- ok | denied | error
  http_status INTEGER NOT NULL DEFAULT 0,  -- the web answer's status (0 from the CLI)
  message     TEXT    NOT NULL DEFAULT ''  -- what happened, in words (the error's message)
);
CREATE INDEX run_actions_run ON run_actions (run_id, id);
