-- MCP tasks: the same table as SQLite's 0013_mcp_tasks.sql. call_id is
-- the task's id; route is "" for /mcp, else the session id of
-- /mcp/sessions/{sid}; owner is a hash of the credential that made it.
CREATE TABLE mcp_tasks (
    call_id    TEXT COLLATE "C" PRIMARY KEY,
    route      TEXT COLLATE "C" NOT NULL,
    owner      TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,   -- Unix ms
    expires_at BIGINT NOT NULL    -- Unix ms
);

CREATE INDEX mcp_tasks_list ON mcp_tasks (route, owner, call_id);
CREATE INDEX mcp_tasks_expiry ON mcp_tasks (expires_at);
