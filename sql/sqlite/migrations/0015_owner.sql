-- Who "I" is in a namespace (issue 51): the names the store's owner goes by as a speaker
-- (their own name or handle in WhatsApp, Slack, Discord...). Messages with the role 'user' (the
-- user of an assistant chat export) are the owner's without a name here. 'suggested' names
-- come from an import (the exporter of a WhatsApp chat, the sender in most conversations);
-- 'set' ones from the owner (`localmem owner set`), and replace the suggestions.
-- (Reserved number for this wave: 0016; numbered 0015 here so the branch migrates without a gap.)
CREATE TABLE owner_names (
    ns     TEXT NOT NULL,
    name   TEXT NOT NULL,
    origin TEXT NOT NULL CHECK (origin IN ('set', 'suggested')),
    PRIMARY KEY (ns, name)
);
