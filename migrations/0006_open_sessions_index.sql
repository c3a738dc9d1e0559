-- The open sessions by id, for GET /v1/sessions: a page of open sessions,
-- newest first, is a range of this index, however many closed sessions the
-- table keeps as history. A query uses it only when its WHERE clause says
-- "closed_at IS NULL" (store.qOpenSessionsPage).

CREATE INDEX sessions_open ON sessions (id) WHERE closed_at IS NULL;
