-- Level with SQLite migration 0014.
-- As SQLite migration 0014: localmem_reindex_message (migration 0005) takes each message's
-- previous turn in its session as context, which messages_by_order (ns, conversation, seq)
-- finds only by walking back over the whole conversation for the first turn of each session
-- (quadratic in a conversation's length). With the session in the index it is one index step.
CREATE INDEX messages_by_session ON messages (ns, conversation, session, seq);
