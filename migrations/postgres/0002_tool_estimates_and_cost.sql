-- Issue 16: what a tool declares of its cost and duration, whether its
-- output must pass the safety step before a model sees it, and what calls
-- and runs cost (the same as SQLite's 0009_tool_estimates_and_cost.sql).
--
-- tools.requires_sanitization is NULL when the tool left it to the default
-- (toolgate.NeedsSanitization: every tool but a built-in one).
-- calls.estimated_cost is the tool's estimate when the call was made;
-- calls.cost what its answer reported (NULL when it reported none).
-- runs.max_cost is the run's budget (NULL: none).

ALTER TABLE tools ADD COLUMN estimated_cost DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE tools ADD COLUMN estimated_duration_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tools ADD COLUMN requires_sanitization BOOLEAN;
ALTER TABLE calls ADD COLUMN estimated_cost DOUBLE PRECISION;
ALTER TABLE calls ADD COLUMN cost DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN max_cost DOUBLE PRECISION;
