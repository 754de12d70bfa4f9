-- The sentences of a long message, each embedded on its own (the vectors live in
-- vec_message_parts, created with the other vector tables). A message's vector averages
-- everything it says, so a question about one thing said in passing ("Last week I got
-- noticed by fashion editors", inside a message about a dance studio) matches it weakly;
-- the vector channel ranks a message by its best vector, whole or part.
-- start/end are character offsets into messages.text.
CREATE TABLE message_parts (
    id         INTEGER PRIMARY KEY,
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    ns         TEXT NOT NULL,
    start      INTEGER NOT NULL,
    end        INTEGER NOT NULL CHECK (end > start)
);
CREATE INDEX message_parts_by_message ON message_parts (message_id);
