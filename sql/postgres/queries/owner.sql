-- The owner's names on PostgreSQL (export and import: json_build_object, jsonb).

-- name: owner_name_add
INSERT INTO owner_names (ns, name, origin) VALUES (:ns, :name, :origin) ON CONFLICT DO NOTHING;

-- name: export_owner
SELECT json_build_object('type', 'owner', 'ns', ns, 'name', name, 'origin', origin)
FROM owner_names WHERE ns = :ns ORDER BY name;

-- name: import_owner
INSERT INTO owner_names (ns, name, origin)
VALUES (CAST(:row AS jsonb) ->> 'ns', CAST(:row AS jsonb) ->> 'name', CAST(:row AS jsonb) ->> 'origin')
ON CONFLICT DO NOTHING;
