-- Several nodes (issue 15). The same tables exist on SQLite, where one
-- process serves the file, so that both backends keep one code path.
-- * leases: a named right held by one node until expires_at (Unix ms):
--   "sweeper" for the one node that sweeps deadlines, grace and expiry,
--   "node:<id>" for each live node, renewed while it runs.
-- * runs.node and calls.node: the node driving a run, or running a call
--   of a tool inside the gateway (NULL for a client's call). When that
--   node's lease lapses, another node claims the work and goes on with it.

CREATE TABLE leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);

ALTER TABLE runs ADD COLUMN node TEXT;
ALTER TABLE calls ADD COLUMN node TEXT;
