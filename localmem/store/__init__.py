"""The file: connection set-up and migrations, named SQL, export and import, forgetting, housekeeping,
read-only views, printed ids and encryption. Imports nothing above :mod:`localmem.models`."""
