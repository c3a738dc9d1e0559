-- A version for each session's row and tools (issue 15): bumped, with
-- changed_at, by every change of the session other than its events and
-- its last sight (created, closed, tools registered or removed,
-- auto-approval). A node applies what it reads of a session only when it
-- is not older than what it holds, and after a missed notification it
-- reads again only the sessions changed (or seen) since it last looked.

ALTER TABLE sessions ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN changed_at INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET version = 1, changed_at = created_at;
CREATE INDEX sessions_changed ON sessions (changed_at);
-- The open sessions by when they were last seen, for a node to learn which
-- sessions other nodes hold (store.SessionsSeenSince).
CREATE INDEX sessions_seen ON sessions (last_seen_at) WHERE closed_at IS NULL;
