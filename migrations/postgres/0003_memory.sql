-- Issue 16: the notes the agent keeps across runs (the built-in tools
-- memory_write, memory_read and memory_search), searched by full text;
-- the same table as SQLite's 0010_memory.sql.
--
-- scope is whose notes they are: '' for the agent's own (runs started with
-- the agent key, POST /v1/calls), else the id of the session whose token
-- started the run. A key names one note within its scope.
--
-- search is the full-text index's document, the key weighted above the
-- text. The 'simple' configuration (no stemming, no stop words) and ASCII
-- punctuation turned into spaces split words as SQLite's unicode61
-- tokenizer does (on anything but letters and digits, so "e-mail" is
-- "e mail" and "bob@example.com" "bob example com"), so that a query finds
-- the same notes on either database.
CREATE TABLE memories (
    scope      TEXT COLLATE "C" NOT NULL,
    key        TEXT COLLATE "C" NOT NULL,
    text       TEXT NOT NULL,
    created_at BIGINT NOT NULL,   -- Unix ms
    updated_at BIGINT NOT NULL,   -- Unix ms, the last memory_write of the key
    search     tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('simple', regexp_replace(key, '[[:punct:]]', ' ', 'g')), 'A') ||
        setweight(to_tsvector('simple', regexp_replace(text, '[[:punct:]]', ' ', 'g')), 'B')
    ) STORED,
    PRIMARY KEY (scope, key)
);

CREATE INDEX memories_search ON memories USING GIN (search);
