-- What a run's step supervisor recorded of its call (the run engine's
-- step file), so that a host on another machine that adopts the run finds
-- the result of a step supervised on the first.
CREATE TABLE step_states (
  run_id text PRIMARY KEY,
  body   bytea NOT NULL
);
