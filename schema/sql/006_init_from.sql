-- baton run history, schema version 6 (docs/store.md): where an attempt's weights came from.
-- Applied when PRAGMA user_version < 6, inside one transaction; older rows read as '' (none).

-- The upstream transformer/ folder the trainer loaded (model.init_from / --init-from) when the
-- attempt started fresh from one; '' when it started from random init or a checkpoint.
ALTER TABLE attempts ADD COLUMN init_from TEXT NOT NULL DEFAULT '';
