-- The whole schema on PostgreSQL, as SQLite's 0001-0008 leave it, in one
-- file: the same tables, columns, partial indexes and call_history view,
-- so that the store keeps one SQL code path for both. Differences:
-- * Times stay BIGINT Unix milliseconds; JSON stays TEXT (one scan path).
-- * Flags (auto_approve, read_only) are BOOLEAN; rate_limited stays an
--   integer marker (1, else NULL) as on SQLite.
-- * Keys are compared byte by byte (COLLATE "C"), as SQLite does: ids are
--   page cursors ("id < ?") and names sort, whatever the database's locale.
-- * events: seq is per session, bumped from sessions.event_seq inside the
--   inserting transaction (store.AppendEvent), so that a session's cursor
--   order is its commit order across nodes; the key is (session_id, seq).
-- * tools, calls and events name their session without a foreign key.
--   Every event bumps its session's row (event_seq) while the call it
--   belongs to was inserted in the same transaction, and a foreign key
--   check takes a KEY SHARE lock on that same row: under many concurrent
--   writers to one session, PostgreSQL 15 was seen failing such a
--   transaction with "new multixact has more than one updating member"
--   (XX000; 1 in 7 runs of TestGroupCommitIsolatesFailures). Sessions are
--   never deleted, the engine stores a tool or call only for a session it
--   found open, and an event for a session that does not exist is refused
--   all the same: AppendEvent finds no row to bump.

CREATE TABLE settings (
    key   TEXT COLLATE "C" PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE sessions (
    id             TEXT COLLATE "C" PRIMARY KEY,
    token_hash     TEXT NOT NULL UNIQUE,           -- hex SHA-256 of the token; the token itself is never stored
    client_name    TEXT NOT NULL DEFAULT '',
    client_version TEXT NOT NULL DEFAULT '',
    platform       TEXT NOT NULL DEFAULT '',
    metadata       TEXT NOT NULL DEFAULT '{}',
    auto_approve   BOOLEAN NOT NULL DEFAULT FALSE,
    created_at     BIGINT NOT NULL,
    last_seen_at   BIGINT NOT NULL,
    closed_at      BIGINT,
    close_reason   TEXT NOT NULL DEFAULT '',       -- 'closed' or 'expired'
    event_seq      BIGINT NOT NULL DEFAULT 0,      -- the cursor of the session's newest event
    version        BIGINT NOT NULL DEFAULT 0,      -- bumped with changed_at by every change but events and sightings (SQLite's 0008)
    changed_at     BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX sessions_changed ON sessions (changed_at);
CREATE INDEX sessions_seen ON sessions (last_seen_at) WHERE closed_at IS NULL;
CREATE INDEX sessions_open ON sessions (id) WHERE closed_at IS NULL;

CREATE TABLE tools (
    session_id        TEXT COLLATE "C" NOT NULL,
    name              TEXT COLLATE "C" NOT NULL,
    description       TEXT NOT NULL,
    parameters        TEXT NOT NULL,
    timeout_ms        BIGINT NOT NULL DEFAULT 0,
    requires_approval TEXT NOT NULL DEFAULT 'never',
    rate_per_minute   INTEGER NOT NULL DEFAULT 0,
    rate_per_hour     INTEGER NOT NULL DEFAULT 0,
    read_only         BOOLEAN NOT NULL DEFAULT FALSE,
    registered_at     BIGINT NOT NULL,
    PRIMARY KEY (session_id, name)
);
CREATE INDEX tools_newest_first ON tools (session_id DESC, name);

CREATE TABLE calls (
    id              TEXT COLLATE "C" PRIMARY KEY,  -- UUIDv7: time-ordered
    session_id      TEXT COLLATE "C",                          -- NULL for a built-in tool
    tool            TEXT COLLATE "C" NOT NULL,
    args            TEXT NOT NULL,
    status          TEXT NOT NULL,
    output          TEXT,
    error_code      TEXT,
    error_message   TEXT,
    error_details   TEXT,
    progress        TEXT,
    timeout_ms      BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    delivered_at    BIGINT,
    completed_at    BIGINT,
    deadline        BIGINT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    idempotency_key TEXT,
    run_id          TEXT COLLATE "C",
    rate_limited    INTEGER,                       -- 1 for a call of a tool with a rate limit, else NULL
    node            TEXT                           -- the node running a call of a tool inside the gateway
);
CREATE UNIQUE INDEX calls_by_idempotency_key ON calls (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX calls_open ON calls (deadline)
WHERE (status = 'pending' OR status = 'delivered' OR status = 'awaiting_approval');
-- A session's open calls, counted against --max-open-calls-per-session
-- by whichever node creates the next one (store.AdmitCall).
CREATE INDEX calls_open_by_session ON calls (session_id)
WHERE (status = 'pending' OR status = 'delivered' OR status = 'awaiting_approval');
CREATE INDEX calls_by_session ON calls (session_id, id);
CREATE INDEX calls_by_run ON calls (run_id, id) WHERE run_id IS NOT NULL;
CREATE INDEX calls_rate_limited ON calls (session_id, tool, created_at) WHERE rate_limited IS NOT NULL;

-- The per-session event log a client reads from its stream or poll; seq is
-- the cursor, dense within a session. data is the complete JSON object sent
-- to the client.
CREATE TABLE events (
    session_id TEXT COLLATE "C" NOT NULL,
    seq        BIGINT NOT NULL,
    type       TEXT NOT NULL,
    call_id    TEXT COLLATE "C",
    data       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX events_by_age ON events (created_at);

CREATE TABLE runs (
    id                 TEXT COLLATE "C" PRIMARY KEY,  -- UUIDv7
    session_id         TEXT COLLATE "C" REFERENCES sessions(id),  -- NULL: built-in tools only
    started_by_session TEXT NOT NULL DEFAULT '',      -- the session whose token started it; '' for the agent key
    model              TEXT NOT NULL,
    status             TEXT NOT NULL,                 -- 'running', 'finished' or 'failed'
    max_steps          INTEGER NOT NULL,
    steps              INTEGER NOT NULL DEFAULT 0,    -- model turns taken
    input_messages     INTEGER NOT NULL,              -- how many of its messages were the input
    output             TEXT,
    error_code         TEXT,
    error_message      TEXT,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    finished_at        BIGINT,
    node               TEXT                           -- the node driving it
);
CREATE INDEX runs_running ON runs (id) WHERE status = 'running';

CREATE TABLE run_messages (
    run_id     TEXT COLLATE "C" NOT NULL REFERENCES runs(id),
    seq        INTEGER NOT NULL,                      -- 0, 1, 2, ... within the run
    step       INTEGER NOT NULL,                      -- 0 for the input, else the model turn it belongs to
    message    TEXT NOT NULL,                         -- one chat-format message as JSON
    created_at BIGINT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

-- Named rights held by one node until expires_at: "sweeper", "node:<id>".
CREATE TABLE leases (
    name       TEXT COLLATE "C" PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);

-- One row per call, readable with psql while the gateway runs; the same
-- columns and the same ISO-8601 UTC text for times as on SQLite.
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
    to_char(to_timestamp(c.created_at / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')   AS created_at,
    to_char(to_timestamp(c.delivered_at / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS delivered_at,
    to_char(to_timestamp(c.completed_at / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS completed_at,
    c.completed_at - c.created_at                                 AS duration_ms,
    c.attempts                                                    AS attempts
FROM calls c
LEFT JOIN sessions s ON s.id = c.session_id;
