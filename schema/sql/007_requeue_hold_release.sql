-- baton run history, schema version 7 (docs/store.md): the requeue holds baton released.
-- Applied when PRAGMA user_version < 7, inside one transaction; older rows read as none.

-- When the sync pass of `baton watch` / `baton serve` ran `scontrol update JobId=J
-- StartTime=now` for the hold SLURM put on the job after this attempt's requeue (NULL: never).
ALTER TABLE attempts ADD COLUMN hold_released_at REAL;
-- SLURM's answer when it refused that release ('' = none); the run then waits out the hold, and
-- the release is not tried again for the run.
ALTER TABLE attempts ADD COLUMN hold_release_error TEXT NOT NULL DEFAULT '';
