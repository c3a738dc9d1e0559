-- Two B-trees fewer written with every call.
-- * calls_by_session_tool served only the rate-limit count; it is replaced
--   by a partial index holding just the calls of rate-limited tools, marked
--   by the new column rate_limited (1, else NULL). The calls of the last
--   hour to tools registered with a limit, and to built-in tools (whose
--   limits are in code, not in the database), are marked, so a limit
--   still holds across the upgrade. From now on a call counts against a
--   limit when it was made while the tool had one.
-- * calls_by_tool goes: a history filtered by tool walks the calls newest
--   first (the primary key), which finds a page of a tool in common use
--   quickly; the list is read from the read pool, never by the writer.

DROP INDEX calls_by_tool;
DROP INDEX calls_by_session_tool;

ALTER TABLE calls ADD COLUMN rate_limited INTEGER;

UPDATE calls SET rate_limited = 1
WHERE created_at >= CAST(strftime('%s', 'now') AS INTEGER) * 1000 - 3600000
  AND (session_id IS NULL
       OR EXISTS (SELECT 1 FROM tools t
                  WHERE t.session_id = calls.session_id AND t.name = calls.tool
                    AND (t.rate_per_minute > 0 OR t.rate_per_hour > 0)));

CREATE INDEX calls_rate_limited ON calls (session_id, tool, created_at) WHERE rate_limited IS NOT NULL;
