"""Reading inputs: format detection and one module per source; parsing only, never the database.

:func:`localmem.importers.formats.parse` is the entry point; a folder or .zip is walked by
:mod:`~localmem.importers.tree`."""
