-- Times are Unix milliseconds (INTEGER): compact, fast to compare, and the
-- call_history view turns them into readable text.

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE sessions (
    id             TEXT PRIMARY KEY,
    token_hash     TEXT NOT NULL UNIQUE,           -- hex SHA-256 of the token; the token itself is never stored
    client_name    TEXT NOT NULL DEFAULT '',
    client_version TEXT NOT NULL DEFAULT '',
    platform       TEXT NOT NULL DEFAULT '',
    metadata       TEXT NOT NULL DEFAULT '{}',
    auto_approve   INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL,
    last_seen_at   INTEGER NOT NULL,
    closed_at      INTEGER,
    close_reason   TEXT NOT NULL DEFAULT ''        -- 'closed' or 'expired'
);

CREATE TABLE tools (
    session_id        TEXT NOT NULL REFERENCES sessions(id),
    name              TEXT NOT NULL,
    description       TEXT NOT NULL,
    parameters        TEXT NOT NULL,
    timeout_ms        INTEGER NOT NULL DEFAULT 0,
    requires_approval TEXT NOT NULL DEFAULT 'never',
    rate_per_minute   INTEGER NOT NULL DEFAULT 0,
    rate_per_hour     INTEGER NOT NULL DEFAULT 0,
    read_only         INTEGER NOT NULL DEFAULT 0,
    registered_at     INTEGER NOT NULL,
    PRIMARY KEY (session_id, name)
);

CREATE TABLE calls (
    id              TEXT PRIMARY KEY,              -- UUIDv7: time-ordered
    session_id      TEXT REFERENCES sessions(id),  -- NULL for a built-in tool
    tool            TEXT NOT NULL,
    args            TEXT NOT NULL,
    status          TEXT NOT NULL,
    output          TEXT,
    error_code      TEXT,
    error_message   TEXT,
    error_details   TEXT,
    progress        TEXT,
    timeout_ms      INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    delivered_at    INTEGER,
    completed_at    INTEGER,
    deadline        INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    idempotency_key TEXT UNIQUE,
    run_id          TEXT
);
CREATE INDEX calls_open ON calls (deadline) WHERE status IN ('awaiting_approval', 'pending', 'delivered');
CREATE INDEX calls_by_session ON calls (session_id, id);
CREATE INDEX calls_by_tool ON calls (tool, id);
CREATE INDEX calls_by_status ON calls (status, id);

-- The per-session event log a client reads from its stream or poll; seq is
-- the cursor. data is the complete JSON object sent to the client.
CREATE TABLE events (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    type       TEXT NOT NULL,
    call_id    TEXT,
    data       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX events_by_session ON events (session_id, seq);

-- One row per call, readable from the sqlite3 shell while the gateway runs.
CREATE VIEW call_history AS
SELECT
    c.id                                                          AS call_id,
    c.session_id                                                  AS session_id,
    COALESCE(s.client_name, '')                                   AS client_name,
    c.tool                                                        AS tool,
    c.status                                                      AS status,
    c.args                                                        AS args,
    c.output                                                      AS output,
    c.error_code                                                  AS error_code,
    c.error_message                                               AS error_message,
    strftime('%Y-%m-%dT%H:%M:%fZ', c.created_at / 1000.0, 'unixepoch')   AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', c.delivered_at / 1000.0, 'unixepoch') AS delivered_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', c.completed_at / 1000.0, 'unixepoch') AS completed_at,
    c.completed_at - c.created_at                                 AS duration_ms,
    c.attempts                                                    AS attempts
FROM calls c
LEFT JOIN sessions s ON s.id = c.session_id;
