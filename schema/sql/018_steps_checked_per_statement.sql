-- baton run history: on PostgreSQL, step rows' references are checked once per statement rather
-- than once per row (docs/store.md, "Step rows on PostgreSQL"). A foreign key there is two
-- trigger calls per inserted row, each a query of its own: half the time of a batch of step rows.
-- The same rules hold as before: a step row names an attempt of its own run, which is locked
-- against deletion (FOR KEY SHARE) until the writer commits, and deleting an attempt (or the run,
-- which deletes its attempts) deletes its step rows. SQLite checks its foreign keys in-process at
-- a fraction of that cost, and keeps them: this migration only bumps its version there.
-- A later migration that rebuilds `attempts` on PostgreSQL must create attempts_deleted_steps
-- again (a DROP TABLE ... CASCADE takes the table's triggers with it).
-- baton-migration: postgresql only
DO $$
DECLARE
  fk TEXT;
BEGIN
  FOR fk IN SELECT conname FROM pg_constraint
            WHERE conrelid = 'steps'::regclass AND contype = 'f' LOOP
    EXECUTE format('ALTER TABLE steps DROP CONSTRAINT %I', fk);
  END LOOP;
END
$$;

CREATE FUNCTION steps_check_attempts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad RECORD;
BEGIN
  PERFORM 1 FROM attempts a WHERE a.id IN (SELECT DISTINCT attempt_id FROM new_steps)
    FOR KEY SHARE OF a;
  SELECT n.run_id, n.attempt_id INTO bad
    FROM (SELECT DISTINCT run_id, attempt_id FROM new_steps) n
    LEFT JOIN attempts a ON a.id = n.attempt_id AND a.run_id = n.run_id
    WHERE a.id IS NULL LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
      MESSAGE = format('step rows name attempt %s of run %s, which does not exist',
                       bad.attempt_id, bad.run_id);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER steps_inserted AFTER INSERT ON steps REFERENCING NEW TABLE AS new_steps
  FOR EACH STATEMENT EXECUTE FUNCTION steps_check_attempts();
CREATE TRIGGER steps_updated AFTER UPDATE ON steps REFERENCING NEW TABLE AS new_steps
  FOR EACH STATEMENT EXECUTE FUNCTION steps_check_attempts();

CREATE FUNCTION attempts_delete_steps() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM steps WHERE attempt_id IN (SELECT id FROM old_attempts);
  RETURN NULL;
END
$$;

CREATE TRIGGER attempts_deleted_steps AFTER DELETE ON attempts
  REFERENCING OLD TABLE AS old_attempts
  FOR EACH STATEMENT EXECUTE FUNCTION attempts_delete_steps();
-- baton-migration: end
