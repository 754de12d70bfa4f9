-- Level with SQLite migration 0015.
-- As SQLite migration 0015 (the owner's names per namespace), under the namespace policy of
-- migration 0002: a namespace role reads and sets only its own namespaces' owner.
CREATE TABLE owner_names (
    ns     TEXT NOT NULL,
    name   TEXT NOT NULL,
    origin TEXT NOT NULL CHECK (origin IN ('set', 'suggested')),
    PRIMARY KEY (ns, name)
);
SELECT localmem_protect('owner_names');
