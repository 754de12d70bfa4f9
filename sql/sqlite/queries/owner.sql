-- The owner queries whose text differs by engine, as SQLite runs them;
-- each name is also in sql/postgres/queries/owner.sql (PostgreSQL). The portable ones are in
-- sql/shared/queries/owner.sql.

-- name: owner_name_add
INSERT OR IGNORE INTO owner_names (ns, name, origin) VALUES (:ns, :name, :origin);

-- name: export_owner
SELECT json_object('type', 'owner', 'ns', ns, 'name', name, 'origin', origin)
FROM owner_names WHERE ns = :ns ORDER BY name;

-- name: import_owner
INSERT OR IGNORE INTO owner_names (ns, name, origin)
VALUES (:row ->> 'ns', :row ->> 'name', :row ->> 'origin');
