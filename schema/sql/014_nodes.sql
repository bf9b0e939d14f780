-- baton run history: the node ledger (docs/nodes.md). Incidents attributed to a node across
-- runs, and the exclusions they led to, per SLURM cluster and partition.
--   - nodes: one row per (cluster, partition, host) baton has held anything against;
--   - node_incidents: each attributed incident (run, attempt, rank, kind, evidence), unique per
--     attempt, host, kind and evidence so a second pass over the same files adds nothing;
--   - node_actions: the audit of `baton nodes exclude` / `readmit` and of what the sync pass did
--     (auto exclusions, expiries, refusals past the cap);
--   - node_log_cursors: the bytes of each job log already scanned for node-fault lines.
CREATE TABLE nodes (
  id               INTEGER PRIMARY KEY,
  cluster          TEXT    NOT NULL,
  partition_name   TEXT    NOT NULL,
  host             TEXT    NOT NULL,
  first_seen_at    REAL    NOT NULL,
  excluded_at      REAL,                          -- NULL: not excluded
  excluded_until   REAL,                          -- Unix seconds the exclusion ends
  excluded_by      TEXT    NOT NULL DEFAULT '',   -- auto | the user of `baton nodes exclude`
  exclusion_reason TEXT    NOT NULL DEFAULT '',
  -- The last re-admission: incidents before it no longer count.
  admitted_at      REAL    NOT NULL DEFAULT 0,
  probation_until  REAL,                          -- one incident before this excludes again
  UNIQUE (cluster, partition_name, host)
);

CREATE TABLE node_incidents (
  id             INTEGER PRIMARY KEY,
  node_id        INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
  run_id         INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  job_id         TEXT    NOT NULL,
  restart_count  INTEGER NOT NULL,
  in_job_seq     INTEGER NOT NULL DEFAULT 0,
  task_rank      INTEGER NOT NULL DEFAULT -1,     -- -1: no single rank
  kind           TEXT    NOT NULL,                -- hang | signal | oom | preflight | ecc | ...
  source         TEXT    NOT NULL,                -- launcher | preflight | log | manual
  evidence       TEXT    NOT NULL,
  seen_at        REAL    NOT NULL,
  UNIQUE (node_id, run_id, job_id, restart_count, in_job_seq, kind, evidence)
);
CREATE INDEX node_incidents_node ON node_incidents (node_id, seen_at);

CREATE TABLE node_actions (
  id        INTEGER PRIMARY KEY,
  node_id   INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
  username  TEXT    NOT NULL,                     -- who asked, or 'baton' for the sync pass
  action    TEXT    NOT NULL,                     -- exclude | readmit | expire | refuse | drop
  asked_at  REAL    NOT NULL,
  message   TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX node_actions_node ON node_actions (node_id, id);

CREATE TABLE node_log_cursors (
  path      TEXT    PRIMARY KEY,
  scanned_bytes INTEGER NOT NULL
);
