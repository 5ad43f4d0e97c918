-- Compaction commits in slices, so that no transaction holds the write
-- lock for long. The messages a compaction replaced are hidden at once
-- (seq below sessions.first_seq) and deleted in slices afterwards.
ALTER TABLE sessions ADD COLUMN first_seq INTEGER NOT NULL DEFAULT 0;

-- An archive's messages are copied in slices before it is sealed with its
-- digest and count: the digest and count are written once, from ''.
DROP TRIGGER session_archives_frozen;
CREATE TRIGGER session_archives_frozen BEFORE UPDATE OF id, session_id, cut_seq, message_count, digest, state, created_at ON session_archives
WHEN OLD.digest != '' OR NEW.id IS NOT OLD.id OR NEW.session_id IS NOT OLD.session_id OR NEW.cut_seq IS NOT OLD.cut_seq
  OR NEW.state IS NOT OLD.state OR NEW.created_at IS NOT OLD.created_at
BEGIN
  SELECT RAISE(ABORT, 'session archives are frozen');
END;
