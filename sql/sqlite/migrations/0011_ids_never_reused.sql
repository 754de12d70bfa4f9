-- A printed id (m:12, u:45, e:7, a source's number) names one row for the life of the store.
-- The tables' ids are plain INTEGER PRIMARY KEYs, which SQLite numbers max(id) + 1: once the
-- newest message was forgotten the next one got its id, and a citation a user kept (in an
-- exported answer, an MCP client's transcript) pointed at another message. The highest id
-- deleted from each table is kept here, per namespace (an export carries its namespaces' own:
-- one namespace's export says nothing of another's), by the triggers below (a cascaded delete
-- fires them too); every insert takes the id after both the table's highest and its highest
-- deleted (view next_ids). The ids in use now need no mark: they are in their tables. (Rebuilding
-- the tables as AUTOINCREMENT would copy every row with foreign keys off, which a migration's
-- transaction cannot switch.)
CREATE TABLE id_marks (
    name TEXT NOT NULL,        -- the table
    ns   TEXT NOT NULL,
    high INTEGER NOT NULL,     -- the highest id deleted from it in the namespace
    PRIMARY KEY (name, ns)
) WITHOUT ROWID;

CREATE TRIGGER sources_id_mark AFTER DELETE ON sources BEGIN
    INSERT INTO id_marks (name, ns, high) VALUES ('sources', old.ns, old.id)
    ON CONFLICT (name, ns) DO UPDATE SET high = excluded.high WHERE excluded.high > high;
END;
CREATE TRIGGER messages_id_mark AFTER DELETE ON messages BEGIN
    INSERT INTO id_marks (name, ns, high) VALUES ('messages', old.ns, old.id)
    ON CONFLICT (name, ns) DO UPDATE SET high = excluded.high WHERE excluded.high > high;
END;
CREATE TRIGGER units_id_mark AFTER DELETE ON units BEGIN
    INSERT INTO id_marks (name, ns, high) VALUES ('units', old.ns, old.id)
    ON CONFLICT (name, ns) DO UPDATE SET high = excluded.high WHERE excluded.high > high;
END;
CREATE TRIGGER entities_id_mark AFTER DELETE ON entities BEGIN
    INSERT INTO id_marks (name, ns, high) VALUES ('entities', old.ns, old.id)
    ON CONFLICT (name, ns) DO UPDATE SET high = excluded.high WHERE excluded.high > high;
END;

-- The id an insert into each table takes: `(SELECT id FROM next_ids WHERE name = 'messages')`.
CREATE VIEW next_ids (name, id) AS
SELECT 'sources', max(coalesce((SELECT max(high) FROM id_marks WHERE name = 'sources'), 0),
                      coalesce((SELECT max(id) FROM sources), 0)) + 1
UNION ALL
SELECT 'messages', max(coalesce((SELECT max(high) FROM id_marks WHERE name = 'messages'), 0),
                       coalesce((SELECT max(id) FROM messages), 0)) + 1
UNION ALL
SELECT 'units', max(coalesce((SELECT max(high) FROM id_marks WHERE name = 'units'), 0),
                    coalesce((SELECT max(id) FROM units), 0)) + 1
UNION ALL
SELECT 'entities', max(coalesce((SELECT max(high) FROM id_marks WHERE name = 'entities'), 0),
                       coalesce((SELECT max(id) FROM entities), 0)) + 1;
