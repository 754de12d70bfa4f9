"""Turning parsed input into memory, in order: ingest, segment, extract, resolve, link,
consolidate; :mod:`~localmem.pipeline.pipeline` runs the per-episode loops and
:mod:`~localmem.pipeline.worker` runs them in a background thread."""
