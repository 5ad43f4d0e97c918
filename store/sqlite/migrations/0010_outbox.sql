-- The notification outbox: one row per event a person is told about,
-- keyed by the event's id (so an event is enqueued once), claimed by one
-- sender at a time until claim_until, kept a while after it was sent.
CREATE TABLE notifications (
  id          TEXT PRIMARY KEY,
  kind        TEXT NOT NULL,
  payload     TEXT NOT NULL,
  created_at  INTEGER NOT NULL,            -- unix milliseconds
  attempts    INTEGER NOT NULL DEFAULT 0,
  next_at     INTEGER NOT NULL,            -- unix milliseconds
  last_error  TEXT NOT NULL DEFAULT '',
  state       TEXT NOT NULL DEFAULT 'pending', -- pending, sent, dropped
  claim       TEXT NOT NULL DEFAULT '',
  claim_until INTEGER NOT NULL DEFAULT 0,  -- unix milliseconds
  done_at     INTEGER NOT NULL DEFAULT 0   -- unix milliseconds: sent or dropped
);
CREATE INDEX notifications_due ON notifications (state, next_at);
CREATE INDEX notifications_done ON notifications (state, done_at);
