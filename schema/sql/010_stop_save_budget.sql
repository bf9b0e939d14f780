-- baton run history, schema version 10 (docs/store.md): the stop save weighed against the
-- preemption grace at submit, and the checkpoint folders' measured write rates.
-- Applied when PRAGMA user_version < 10, inside one transaction; older runs have no budget row.

-- One row per run, written by `baton submit` (docs/orchestrator.md, "Grace budget").
CREATE TABLE stop_save_budgets (
  run_id            INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  grace_s           REAL    NOT NULL,             -- seconds from the preemption signal to SIGKILL
  grace_source      TEXT    NOT NULL,             -- e.g. "partition debug: GraceTime 30 s + KillWait 5 s"
  bytes_per_rank    INTEGER NOT NULL,             -- the largest rank's checkpoint bytes (the plan's)
  write_gbps        REAL    NOT NULL,             -- the checkpoint folder's write rate, GB/s
  write_source      TEXT    NOT NULL,             -- "checkpoint.write_gbps" | "probe of FOLDER ..."
  predicted_s       REAL    NOT NULL,             -- bytes_per_rank / write_gbps
  fits              INTEGER NOT NULL,             -- predicted_s x the margin <= grace_s
  checked_at        REAL    NOT NULL
);

-- The fsync'd write rate of a folder, measured by a short probe and reused for a day.
CREATE TABLE write_probes (
  folder       TEXT    PRIMARY KEY,
  gbps         REAL    NOT NULL,
  bytes        INTEGER NOT NULL,
  measured_at  REAL    NOT NULL
);
