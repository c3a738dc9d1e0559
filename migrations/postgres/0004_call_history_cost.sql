-- Issue 16: the call_history view shows what each call was estimated to
-- cost (the tool's estimate when it was made) and what its answer reported
-- it cost; NULL where there was none. The columns are added at the end, so
-- a query naming the older columns reads the same (as SQLite's
-- 0011_call_history_cost.sql).

DROP VIEW call_history;

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
    c.attempts                                                    AS attempts,
    c.estimated_cost                                              AS estimated_cost,
    c.cost                                                        AS cost
FROM calls c
LEFT JOIN sessions s ON s.id = c.session_id;
