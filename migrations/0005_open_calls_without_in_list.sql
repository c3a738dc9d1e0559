-- calls_open without an IN list in its WHERE clause. SQLite evaluates a
-- partial index's WHERE clause for the old and the new row on every insert
-- and update of calls, and it codes "status IN (a, b, c)" — a list of more
-- than two values — by building a temporary B-tree of the values each time:
-- two of them per statement on the writer's hot path. The same set written
-- as a chain of equalities is a few comparisons.
--
-- A query uses this index only when its WHERE clause has this exact
-- expression, in this order (store.openCall).

DROP INDEX calls_open;
CREATE INDEX calls_open ON calls (deadline)
WHERE (status = 'pending' OR status = 'delivered' OR status = 'awaiting_approval');
