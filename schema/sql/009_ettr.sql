-- baton run history, schema version 9 (docs/store.md): where each run's wall time went.
-- Applied when PRAGMA user_version < 9, inside one transaction; only a table is added. Runs are
-- filled by the next sync pass or ingest that touches them (orchestrator/store/time_bucket_store.h).

-- One row per attempt and one for the whole run (attempt_id 0): the wall time since submit split
-- into buckets that add up to it (orchestrator/store/run_time_buckets.h says what each holds).
-- An attempt's row covers the gap before it (from submit, or from the previous attempt's end)
-- and its own start → end; the run's row is their sum plus a wait still under way. Seconds.
CREATE TABLE time_buckets (
  run_id              INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  attempt_id          INTEGER NOT NULL,  -- attempts.id, or 0 for the whole run
  wall_s              REAL    NOT NULL,
  queue_s             REAL    NOT NULL DEFAULT 0,
  requeue_hold_s      REAL    NOT NULL DEFAULT 0,
  queue_after_requeue_s REAL  NOT NULL DEFAULT 0,
  restart_s           REAL    NOT NULL DEFAULT 0,
  startup_s           REAL    NOT NULL DEFAULT 0,
  productive_s        REAL    NOT NULL DEFAULT 0,
  rolled_back_s       REAL    NOT NULL DEFAULT 0,
  skipped_s           REAL    NOT NULL DEFAULT 0,
  checkpoint_stall_s  REAL    NOT NULL DEFAULT 0,
  other_s             REAL    NOT NULL DEFAULT 0,
  stop_s              REAL    NOT NULL DEFAULT 0,
  hang_detection_s    REAL    NOT NULL DEFAULT 0,
  productive_steps    INTEGER NOT NULL DEFAULT 0,  -- steps in productive_s
  saves               INTEGER NOT NULL DEFAULT 0,  -- checkpoint saves in checkpoint_stall_s
  save_s              REAL    NOT NULL DEFAULT 0,  -- their blocking seconds
  interruptions       INTEGER NOT NULL DEFAULT 0,  -- run row: attempts interrupted; attempt row: 1 if it was
  running_s           REAL    NOT NULL DEFAULT 0,  -- run row: attempts' start → end summed
  as_of               REAL    NOT NULL,            -- when computed (a live run's wall ends here)
  PRIMARY KEY (run_id, attempt_id)
) WITHOUT ROWID;
