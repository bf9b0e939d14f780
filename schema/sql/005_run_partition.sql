-- baton run history, schema version 5 (docs/store.md): the SLURM partition a run was submitted
-- to (slurm.partition of its config; '' = the cluster's default), so the runs page can filter by
-- it without reading every frozen config. Runs submitted before version 5 keep ''.
ALTER TABLE runs ADD COLUMN partition TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_partition ON runs (partition);
