-- Indexes for the paged lists, so that a page is a range of an index
-- however many sessions and tools there are.
--
-- sessions_open: the open sessions by id, for GET /v1/sessions (newest
-- first). A query uses it only when its WHERE clause says
-- "closed_at IS NULL" (store.qOpenSessionsPage).
--
-- tools_newest_first: the tools by session, newest session first, and by
-- name within one, for GET /api/tools (store.qToolsOfSessionsBefore). The
-- primary key (session_id, name) serves the rest of one session's tools.

CREATE INDEX sessions_open ON sessions (id) WHERE closed_at IS NULL;
CREATE INDEX tools_newest_first ON tools (session_id DESC, name);
