-- Agent runs, stored step by step: the run, then every message it adds
-- (the model's turns and the tool results) in order, so that after a
-- restart a run goes on from its last stored step. Times are Unix ms.

CREATE TABLE runs (
    id                 TEXT PRIMARY KEY,              -- UUIDv7
    session_id         TEXT REFERENCES sessions(id),  -- NULL: built-in tools only
    started_by_session TEXT NOT NULL DEFAULT '',      -- the session whose token started it; '' for the agent key
    model              TEXT NOT NULL,
    status             TEXT NOT NULL,                 -- 'running', 'finished' or 'failed'
    max_steps          INTEGER NOT NULL,
    steps              INTEGER NOT NULL DEFAULT 0,    -- model turns taken
    input_messages     INTEGER NOT NULL,              -- how many of its messages were the input
    output             TEXT,
    error_code         TEXT,
    error_message      TEXT,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    finished_at        INTEGER
);
CREATE INDEX runs_running ON runs (id) WHERE status = 'running';

CREATE TABLE run_messages (
    run_id     TEXT NOT NULL REFERENCES runs(id),
    seq        INTEGER NOT NULL,                      -- 0, 1, 2, ... within the run
    step       INTEGER NOT NULL,                      -- 0 for the input, else the model turn it belongs to
    message    TEXT NOT NULL,                         -- one chat-format message as JSON
    created_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE INDEX calls_by_run ON calls (run_id, id) WHERE run_id IS NOT NULL;
-- Rate limits count a tool's recent calls in one session.
CREATE INDEX calls_by_session_tool ON calls (session_id, tool, created_at);
