-- The full-text triggers take each message's previous turn in its session as context
-- (migration 0013: WHERE ns, conversation AND session, seq < new.seq, the last one). With only
-- messages_by_order (ns, conversation, seq) that lookup walks back from the new turn and reads
-- each earlier row to compare its session: one step inside a session, but the first turn of
-- every session walks the whole conversation before it, so ingesting a long conversation was
-- quadratic in its length (evals/pg_big.py: a 1M-message load had not stored its messages after
-- 7 minutes; with this index it took 234 s). With the session in the index the lookup is one
-- index step for every turn.
CREATE INDEX messages_by_session ON messages (ns, conversation, session, seq);
