-- Retention deletes a run with the fire history rows that name it.
CREATE INDEX automation_fires_run ON automation_fires (run_id);
