-- MCP tasks: a task made through /mcp (tools/call with params.task) is a
-- call; this table keeps what MCP needs besides the call itself. call_id
-- is the task's id. route is "" for /mcp, else the session id of
-- /mcp/sessions/{sid}; owner is a hash of the credential that made it.
-- Only that route and credential see the task, until expires_at.
CREATE TABLE mcp_tasks (
    call_id    TEXT PRIMARY KEY,
    route      TEXT NOT NULL,
    owner      TEXT NOT NULL,
    created_at INTEGER NOT NULL,   -- Unix ms
    expires_at INTEGER NOT NULL    -- Unix ms
);

-- tasks/list: a route's and owner's tasks, newest first (call ids are
-- UUIDv7, ordered by creation).
CREATE INDEX mcp_tasks_list ON mcp_tasks (route, owner, call_id);
-- Pruning of expired tasks.
CREATE INDEX mcp_tasks_expiry ON mcp_tasks (expires_at);
