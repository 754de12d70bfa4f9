-- The store's owner per namespace (migration 0015): the names "I" goes by as a speaker.

-- name: owner_names
-- The owner's names in :ns, as set or suggested.
SELECT name, origin FROM owner_names WHERE ns = :ns ORDER BY name;

-- name: owner_clear
DELETE FROM owner_names WHERE ns = :ns;

-- name: owner_confirm
-- The suggested names become the owner's own choice.
UPDATE owner_names SET origin = 'set' WHERE ns = :ns;

-- name: owner_user_messages
-- How many messages of :ns have the role 'user' (an assistant chat's user: the owner).
SELECT count(*) FROM messages WHERE ns = :ns AND role = 'user';

-- name: owner_speaker_counts
-- The speakers of :ns without a role, with their messages and conversations, most first.
SELECT speaker, count(*), count(DISTINCT conversation) FROM messages
WHERE ns = :ns AND role IS NULL GROUP BY speaker ORDER BY count(*) DESC, speaker;
