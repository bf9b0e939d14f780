-- baton run history: sweeps (docs/sweeps.md). A sweep is many runs submitted as one SLURM job
-- array; each member is a full run (its own row in runs) and the sweep keeps which member it is
-- and the values its axes gave it. Older runs belong to no sweep.

CREATE TABLE sweeps (
  id           INTEGER PRIMARY KEY,
  name         TEXT    NOT NULL,
  spec_path    TEXT    NOT NULL,             -- the spec file, absolute
  spec         TEXT    NOT NULL,             -- its text as submitted
  base_config  TEXT    NOT NULL,             -- the base config, absolute
  sweep_dir    TEXT    NOT NULL,             -- holds the array's batch script and SLURM logs
  job_id       TEXT    NOT NULL DEFAULT '',  -- the array's job id (the latest, after a resume)
  max_parallel INTEGER NOT NULL,
  keys         TEXT    NOT NULL,             -- the varied keys, a JSON list in axis order
  owner        TEXT    NOT NULL DEFAULT '',
  cancelled    INTEGER NOT NULL DEFAULT 0,
  created_at   REAL    NOT NULL
);

CREATE TABLE sweep_members (
  sweep_id     INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  member_index INTEGER NOT NULL,             -- the array task id
  run_id       INTEGER NOT NULL UNIQUE REFERENCES runs (id) ON DELETE CASCADE,
  vals         TEXT    NOT NULL,             -- {"optim.lr": 0.0003, ...} as JSON
  PRIMARY KEY (sweep_id, member_index)
);
