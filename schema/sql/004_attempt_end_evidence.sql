-- baton run history, schema version 4 (docs/store.md): the evidence of how each attempt ended.
-- Applied by the orchestrator's store when PRAGMA user_version < 4, inside one transaction;
-- existing attempts keep their rows and take '' for the new columns.

-- The signal that stopped the trainer, as its segment_end said (USR1, TERM, ...; '' for none).
ALTER TABLE attempts ADD COLUMN trainer_signal TEXT NOT NULL DEFAULT '';
-- What SLURM said about the job the last time reconcile saw this attempt: the Reason field
-- (e.g. Preempted, NodeDown, TimeLimit) and ExitCode ("status:signal").
ALTER TABLE attempts ADD COLUMN slurm_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN slurm_exit_code TEXT NOT NULL DEFAULT '';
