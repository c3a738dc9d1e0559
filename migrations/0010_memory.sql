-- Issue 16: the notes the agent keeps across runs (the built-in tools
-- memory_write, memory_read and memory_search), searched by full text.
--
-- scope is whose notes they are: '' for the agent's own (runs started with
-- the agent key, POST /v1/calls), else the id of the session whose token
-- started the run. A key names one note within its scope.
--
-- id is an explicit INTEGER PRIMARY KEY because memories_fts refers to the
-- rows by rowid: an implicit rowid may be renumbered by VACUUM, which
-- would leave the index pointing at other rows.
CREATE TABLE memories (
    id         INTEGER PRIMARY KEY,
    scope      TEXT NOT NULL,
    key        TEXT NOT NULL,
    text       TEXT NOT NULL,
    created_at INTEGER NOT NULL,   -- Unix ms
    updated_at INTEGER NOT NULL,   -- Unix ms, the last memory_write of the key
    UNIQUE (scope, key)
);

-- The full-text index of the notes' keys and texts (FTS5, external
-- content: the text is stored once, in memories), kept in step with
-- memories by the triggers below, so a change made with SQL is indexed
-- too. Words are split on anything but letters and digits and compared
-- without case; accents count, as they do on PostgreSQL.
CREATE VIRTUAL TABLE memories_fts USING fts5(
    key, text,
    content = 'memories', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 0'
);

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, key, text) VALUES (new.id, new.key, new.text);
END;

CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, key, text) VALUES ('delete', old.id, old.key, old.text);
END;

CREATE TRIGGER memories_fts_update AFTER UPDATE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, key, text) VALUES ('delete', old.id, old.key, old.text);
    INSERT INTO memories_fts (rowid, key, text) VALUES (new.id, new.key, new.text);
END;
