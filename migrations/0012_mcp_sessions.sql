-- Durable MCP sessions (protocol revisions before 2026-07-28, whose
-- requests carry Mcp-Session-Id): the session, the events of its SSE
-- streams (so a host resumes one with Last-Event-ID, after a drop or a
-- restart, on any node), and its tools/call requests in flight (so the
-- result of a call whose handler died with its process still reaches the
-- stream the host resumes).
--
-- route is the MCP route the session belongs to: '' for /mcp, else the
-- client session id of /mcp/sessions/{sid}. credential is whose it is
-- (the bound of sessions alive is per credential). state is the JSON of
-- the host's initialize (the SDK's ServerSessionState).
CREATE TABLE mcp_sessions (
    id         TEXT PRIMARY KEY,
    route      TEXT NOT NULL,
    credential TEXT NOT NULL,
    state      TEXT NOT NULL,
    created_at INTEGER NOT NULL,   -- Unix ms
    used_at    INTEGER NOT NULL    -- Unix ms, the last request (coarsely)
);
CREATE INDEX mcp_sessions_credential ON mcp_sessions (credential, used_at);
CREATE INDEX mcp_sessions_used ON mcp_sessions (used_at);

-- One SSE stream of a session: "" is the GET stream, any other id a POST's
-- reply. next_idx is the index of its next event (the SDK numbers events
-- from 0 per stream; event id "<stream>_<idx>").
CREATE TABLE mcp_streams (
    session_id TEXT NOT NULL,
    stream_id  TEXT NOT NULL,
    next_idx   INTEGER NOT NULL,
    opened_at  INTEGER NOT NULL,   -- Unix ms
    PRIMARY KEY (session_id, stream_id)
);

-- The events kept of a stream (the most recent ones, bounded): data is the
-- JSON-RPC message, empty for a priming event.
CREATE TABLE mcp_events (
    session_id TEXT NOT NULL,
    stream_id  TEXT NOT NULL,
    idx        INTEGER NOT NULL,
    data       TEXT NOT NULL,
    PRIMARY KEY (session_id, stream_id, idx)
);

-- A tools/call of a session not yet answered: request_id is its JSON-RPC
-- id (canonical JSON), call_id the toolgate call it made.
CREATE TABLE mcp_inflight (
    session_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    stream_id  TEXT NOT NULL,
    call_id    TEXT NOT NULL,
    created_at INTEGER NOT NULL,   -- Unix ms
    PRIMARY KEY (session_id, request_id)
);
CREATE INDEX mcp_inflight_stream ON mcp_inflight (session_id, stream_id);
