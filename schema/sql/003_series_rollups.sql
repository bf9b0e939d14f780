-- baton run history, schema version 3 (docs/store.md): min/max rollups of the effective series.
-- Applied by the orchestrator's store when PRAGMA user_version < 3, inside one transaction.
-- Only tables and indexes are added; no existing row changes.

-- One node per (run, level, block, attempt): the attempt's effective step rows (superseded = 0)
-- whose step lies in block `block` of level `level` (blocks of 64 · 16^level steps). `data` is
-- the node's fixed-layout summary (orchestrator/store/series_rollup_node.h): row count, sums,
-- and per series key the count and the first, last, minimum and maximum point. Ingest keeps the
-- nodes in the same transaction as the rows they summarise; nothing else writes them.
CREATE TABLE step_rollups (
  run_id     INTEGER NOT NULL,
  level      INTEGER NOT NULL,
  block      INTEGER NOT NULL,
  attempt_id INTEGER NOT NULL,
  data       BLOB    NOT NULL,
  PRIMARY KEY (run_id, level, block, attempt_id)
) WITHOUT ROWID;

-- Runs whose rollups cover every step row (written with the first rollup of the run). A run
-- without a row here (one ingested before version 3 and not since) is read from its rows.
CREATE TABLE step_rollup_runs (
  run_id  INTEGER PRIMARY KEY,
  layout  INTEGER NOT NULL  -- the node layout version the run's nodes were written with
);

-- The superseded rows of a run (the faint series, the audit's redone steps) without a scan of
-- the effective ones; it covers the per-attempt figures (count, step time, first/last time).
CREATE INDEX steps_superseded ON steps (run_id, attempt_id, step, time, step_time_s)
  WHERE superseded = 1;
