-- Fewer B-trees written per call. Every index on calls is written when a
-- call is stored, and those on status again each time its status changes
-- (pending → delivered → final), all on the single writer's hot path.
-- * calls_by_status goes: listing by status is served by calls_open for the
--   open statuses and by a scan of the newest calls for the final ones.
-- * idempotency_key keeps its uniqueness through a partial index, so the
--   calls made without a key (nearly all) add no entry. A column's UNIQUE
--   constraint cannot be dropped in place, so the table is rebuilt.

DROP VIEW call_history;

CREATE TABLE calls_rebuilt (
    id              TEXT PRIMARY KEY,
    session_id      TEXT REFERENCES sessions(id),
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
    idempotency_key TEXT,
    run_id          TEXT
);
INSERT INTO calls_rebuilt (id, session_id, tool, args, status, output, error_code, error_message, error_details, progress,
                           timeout_ms, created_at, delivered_at, completed_at, deadline, attempts, idempotency_key, run_id)
SELECT id, session_id, tool, args, status, output, error_code, error_message, error_details, progress,
       timeout_ms, created_at, delivered_at, completed_at, deadline, attempts, idempotency_key, run_id
FROM calls;
DROP TABLE calls;
ALTER TABLE calls_rebuilt RENAME TO calls;

CREATE UNIQUE INDEX calls_by_idempotency_key ON calls (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX calls_open ON calls (deadline) WHERE status IN ('awaiting_approval', 'pending', 'delivered');
CREATE INDEX calls_by_session ON calls (session_id, id);
CREATE INDEX calls_by_tool ON calls (tool, id);
CREATE INDEX calls_by_run ON calls (run_id, id) WHERE run_id IS NOT NULL;
CREATE INDEX calls_by_session_tool ON calls (session_id, tool, created_at);

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
