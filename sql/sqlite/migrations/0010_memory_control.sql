-- Control over single memories (issue 20).
--
-- `meta`: what the caller attached to a message (`add --meta key=value`), a JSON object;
-- search and ask filter on it. `replaces`: a correction (`correct m:ID`) is a new message that
-- replaces an older one, which stays (marked replaced: some message replaces it). The link
-- points from the newer to the older message, so rows arrive in id order on restore; when
-- either side is forgotten the other becomes a plain message again.
ALTER TABLE messages ADD COLUMN meta TEXT CHECK (meta IS NULL OR json_valid(meta));
ALTER TABLE messages ADD COLUMN replaces INTEGER REFERENCES messages(id) ON DELETE SET NULL;
CREATE INDEX messages_by_replaces ON messages (replaces) WHERE replaces IS NOT NULL;
-- Search and ask filter by speaker.
CREATE INDEX messages_by_speaker ON messages (ns, speaker);

-- Messages added with `add` used to share one source per namespace (sha256 'api'), so
-- forgetting that source forgot every chat. Each conversation gets its own source now
-- (sha256 'api:<conversation>', kind 'api', uri 'add:<conversation>'), created as it was.
INSERT INTO sources (ns, kind, uri, sha256, status, created_at, finished_at)
SELECT DISTINCT s.ns, 'api', 'add:' || m.conversation, 'api:' || m.conversation, 'loaded',
       s.created_at, s.finished_at
FROM sources AS s JOIN messages AS m ON m.source_id = s.id
WHERE s.sha256 = 'api';

UPDATE messages SET source_id = (
    SELECT n.id FROM sources AS n
    WHERE n.ns = messages.ns AND n.sha256 = 'api:' || messages.conversation)
WHERE source_id IN (SELECT id FROM sources WHERE sha256 = 'api');

DELETE FROM sources WHERE sha256 = 'api';
