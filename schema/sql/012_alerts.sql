-- baton run history: incidents and the alert outbox (docs/alerts.md, docs/store.md).
-- Applied inside one transaction; older runs simply have no incidents.

-- One row per incident: a run, a kind (hang, diverged, failed, ...) and the attempt it was first
-- seen in. The same cause in later attempts (a requeue that hangs again) updates the row.
CREATE TABLE incidents (
  id                INTEGER PRIMARY KEY,
  run_id            INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  kind              TEXT    NOT NULL,
  first_attempt_id  INTEGER NOT NULL DEFAULT 0,  -- 0: no attempt (a run that never started)
  last_attempt_id   INTEGER NOT NULL DEFAULT 0,
  occurrences       INTEGER NOT NULL DEFAULT 1,  -- attempts that showed this cause
  outcome           TEXT    NOT NULL DEFAULT 'open',  -- open | recovered | failed | closed | final
  cause             TEXT    NOT NULL DEFAULT '',
  attempt_label     TEXT    NOT NULL DEFAULT '',  -- J.R.S of the first attempt
  step              INTEGER,
  node              TEXT    NOT NULL DEFAULT '',
  rank_text         TEXT    NOT NULL DEFAULT '',
  excerpt           TEXT    NOT NULL DEFAULT '',  -- at most 2 KiB
  opened_at         REAL    NOT NULL,
  updated_at        REAL    NOT NULL,
  UNIQUE (run_id, kind, first_attempt_id)
);
CREATE INDEX incidents_open ON incidents (outcome, run_id);

-- The outbox: one row per message and sink, written in the transaction that opened or resolved
-- the incident, deleted never. A row is 'pending' until the sink confirmed it ('sent'); the
-- sink's definition is kept by reference only (env:NAME, file:PATH), never its URL.
CREATE TABLE alert_deliveries (
  id               INTEGER PRIMARY KEY,
  incident_id      INTEGER NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
  message_seq      INTEGER NOT NULL,             -- 1: the incident, 2: its follow-up, 0: a test
  sink_name        TEXT    NOT NULL,
  sink_json        TEXT    NOT NULL,             -- the sink's definition (references only)
  idempotency_key  TEXT    NOT NULL,             -- "<incident>.<seq>", the Baton-Incident header
  body             TEXT    NOT NULL,             -- the message as JSON
  state            TEXT    NOT NULL DEFAULT 'pending',  -- pending | sent
  tries            INTEGER NOT NULL DEFAULT 0,
  next_try_at      REAL    NOT NULL,             -- also the lease of a delivery in flight
  last_error       TEXT    NOT NULL DEFAULT '',
  created_at       REAL    NOT NULL,
  sent_at          REAL,
  UNIQUE (incident_id, message_seq, sink_name)
);
CREATE INDEX alert_deliveries_due ON alert_deliveries (state, next_try_at);
