"""Forgetting: the one deletion step every kind of forget goes through, and `localmem vacuum`.

A forget must leave nothing of what it deleted in the store's bytes, the WAL included. Each kind
of forget (a namespace, a source, ...) only says which rows go, as a named query that
:func:`purge` runs; purge does the rest, the same for every kind:

- the connection overwrites deleted rows and freed pages with zeros (``secure_delete``, set in
  :func:`db.connect`); without it 29 copies of a forgotten marker and 78 of 951 vectors stayed;
- vec0 zeroes a deleted vector inside its chunk (sqlite-vec 0.1.7 and later; 0.1.6 left it,
  hence the pin); the codes caches and sentence parts go by the delete triggers;
- the message after a deleted one in its session is indexed again: its full-text row held the
  deleted message as context (a search for a forgotten word still found it), and its context
  part, embedded with the deleted message, goes (``reembed`` frames it anew); an episode that
  stays but lost messages keeps its logged model calls without their text; a person's summary
  written from forgotten memory is dropped;
- the full-text indexes are merged into one segment ('optimize') in the same transaction. FTS5
  records a delete in a contentless table as a tombstone, and the deleted terms stay in the
  index's pages until a merge rewrites them. FTS5's 'secure-delete' option removes them at once,
  but in our trial left one forgotten term's text in a leaf page of the index, and an
  optimize of one segment without tombstones does nothing, so that remnant could stay for good;
  'rebuild' cannot be used on a contentless table; automerge merges when it chooses. Optimize
  rewrites the whole index: 0.05 to 0.3 s on a 10K-message store, 0.75 s at 100K; a whole forget
  on a 10K-message store took 0.4 to 1.1 s, against 0.8 to 1.3 s before this module;
- after the commit, freed pages are handed back to the file system (``incremental_vacuum``) and
  the WAL, which holds the pages' earlier versions, is checkpointed and truncated. While another
  connection reads an older snapshot it cannot be emptied: :class:`Scrub` says so, and
  :func:`vacuum` finishes the job later.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..files import real_file
from . import leftovers
from .engine import now_iso
from .rows import one_row

if TYPE_CHECKING:
    from .pg import PgStore
    from .sqlite import SqliteStore


@dataclass
class Scrub:
    """What happened to the file after a deletion or a vacuum."""

    wal_emptied: bool  # False: another connection was still reading; the WAL keeps old pages
    freed_bytes: int  # handed back to the file system
    bytes_before: int
    bytes_after: int
    seconds: float
    vacuumed: bool = False  # the file was written anew (VACUUM), and why
    vacuum_reason: str | None = None
    # True: the file may still hold what was deleted (the WAL could not be emptied); the next
    # open of the store (or `localmem vacuum`) finishes the job.
    pending: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# The meta row a forget commits with its deletion and removes once the file holds none of what
# it deleted: while it is there, the next open of the store finishes the job (finish_pending).
PENDING = "forget_scrub_pending"

Decide = Callable[[], "tuple[str, dict[str, Any]] | None"]


def purge(store: "SqliteStore", decide: Decide) -> Scrub | None:
    """Work out what goes and delete it in one write transaction, repair what the deleted rows
    leave in rows that stay, then scrub the file (see the module docstring).

    ``decide()`` runs inside the transaction, which holds the store's write lock from its first
    read: what it chooses (the named deletion query and its parameters, or None for nothing to
    delete) is what is deleted, and nothing another writer adds can fall between the two (a
    message added meanwhile to a source about to be left empty went with it, unreported). None
    when there was nothing to delete.

    The deletion commits with the meta row ``PENDING``; the scrub after the commit removes it.
    A process killed between the two leaves it, and the next open finishes the scrub
    (:func:`finish_pending`).
    """
    conn, path = store, store.path
    started = time.perf_counter()
    before = file_size(path)
    forgotten = leftovers.Forgotten()
    conn.raw.create_scalar_function("localmem_forgotten", forgotten, -1)
    try:
        with conn:
            deletion = decide()
            if deletion is None:
                return None
            query, params = deletion
            step("decided")
            conn.run("purge_watch")
            if conn.run("codes_exist").fetchone():
                conn.run("purge_watch_codes")
            if conn.run("parts_vec_exists").fetchone():
                conn.run("purge_watch_part_codes")
            conn.run(query, params)
            conn.run("purge_reindex_followers")
            # A reembed's staged vectors were made from what is being forgotten too: they go, and
            # an unfinished reembed starts over.
            conn.run("reembed_staging_drop")
            conn.run("meta_delete", {"key": "reembed_target"})
            conn.run("purge_scrub_calls")
            conn.run("purge_stale_summaries")
            conn.run("fts_optimize")
            conn.run("purge_rewrite_fts")
            conn.run("purge_unwatch")
            if str(path) != ":memory:":
                conn.set_meta(PENDING, now_iso())
            step("deleted")
    finally:
        conn.raw.create_scalar_function("localmem_forgotten", _ignore, -1)
    step("committed")
    done = scrub(conn, path, before, started)
    step("scrubbed")
    reason = _vacuum_needed(conn, path, done, forgotten)
    if reason is not None:
        _vacuum(conn)
        again = scrub(conn, path, before, started)
        done = replace(again, freed_bytes=done.freed_bytes + again.freed_bytes, vacuumed=True, vacuum_reason=reason)
        step("vacuumed")
    if done.wal_emptied:
        done = replace(done, pending=not _clear_pending(conn))
    else:
        done = replace(done, pending=str(path) != ":memory:")
    return done


# What a forget on PostgreSQL may have deleted rows from (directly, by cascade or by trigger):
# each is written anew after the commit (pgmaint.vacuum_tables).
PG_TOUCHED = (
    "messages",
    "messages_fts",
    "messages_fts_intl",
    "units",
    "units_fts",
    "unit_sources",
    "entities",
    "entity_aliases",
    "mentions",
    "links",
    "sources",
    "message_parts",
    "vec_messages",
    "vec_units",
    "vec_message_parts",
    "llm_calls",
    "consolidations",
    "fts_stats",
    "fts_stats_delta",
    "fts_terms",
    "fts_terms_delta",
    "fts_postings",
)


def pg_purge(conn: "PgStore", decide: Decide) -> Scrub | None:
    """A forget on PostgreSQL: the deletion in one transaction with the repairs SQLite's watch
    triggers drive (the follower's full-text row indexed again without the deleted turn as its
    context, an episode that stays loses its logged replies' text,
    stale person summaries dropped), then ``VACUUM FULL`` of the tables it touched, so that the
    deleted rows' bytes leave their pages. A table another session holds past the busy timeout
    is skipped and reported (``wal_emptied`` False, ``pending`` True: as SQLite reports a WAL a
    reader keeps); ``localmem vacuum`` rewrites it later. What the server's WAL, WAL archive,
    replicas and backups hold is the operator's (docs/postgres.md)."""
    from . import pgmaint

    started = time.perf_counter()
    before = pgmaint.relation_bytes(conn, PG_TOUCHED)
    with conn:
        deletion = decide()
        if deletion is None:
            return None
        query, params = deletion
        step("decided")
        followers = pgmaint.followers(conn, params.get("messages"))
        readers, mentioned = pgmaint.forget_watch(conn, params)
        conn.run(query, params)
        pgmaint.reindex_messages(conn, followers)
        pgmaint.forget_repair(conn, readers, mentioned)
        # BM25's statistics folded now: a word only the forgotten rows held leaves them (unless
        # another session is folding; it then leaves at that fold, migration 0004).
        pgmaint.fold_fts_statistics(conn)
        # As on SQLite: a reembed's staged vectors were made from what is forgotten too (a
        # dropped table's file is removed, nothing to vacuum).
        conn.run("reembed_staging_drop")
        conn.run("meta_delete", {"key": "reembed_target"})
        step("deleted")
    step("committed")
    seconds, skipped = pgmaint.vacuum_tables(conn, PG_TOUCHED)
    step("vacuumed")
    after = pgmaint.relation_bytes(conn, PG_TOUCHED)
    said = f"; skipped: {', '.join(skipped)} (localmem vacuum tries again)" if skipped else ""
    return Scrub(
        wal_emptied=not skipped,
        freed_bytes=max(before - after, 0),
        bytes_before=before,
        bytes_after=after,
        seconds=round(time.perf_counter() - started, 3),
        vacuumed=True,
        vacuum_reason=f"VACUUM FULL of the tables a forget touches ({seconds:.2f} s){said}",
        pending=bool(skipped),
    )


def step(name: str) -> None:
    """Called as a purge passes each of its steps (decided, deleted, committed, scrubbed,
    vacuumed): a seam for the tests that stop a forget at each one (and by nothing else)."""


def _clear_pending(conn: "SqliteStore") -> bool:
    """Remove the ``PENDING`` row once the file is clean; False if the WAL could not be
    emptied of that last write (the row stays: the next open checks the file again)."""
    with conn:
        conn.run("meta_delete", {"key": PENDING})
    return checkpoint(conn)


def finish_pending(conn: "SqliteStore") -> Scrub | None:
    """Finish the scrub of a forget that committed but was stopped before its file was clean
    (killed, or a reader kept the WAL from being emptied): the file is written anew from its
    live rows (what the forget deleted is no longer known, so the whole file is rewritten)
    and the WAL emptied. None when no forget left one, or the store is read-only."""
    path = conn.path
    if str(path) == ":memory:" or conn.raw.readonly("main") or conn.get_meta(PENDING) is None:
        return None
    started = time.perf_counter()
    before = file_size(path)
    if not checkpoint(conn):
        return None  # a reader holds the WAL: the next open tries again
    _vacuum(conn)
    done = scrub(conn, path, before, started)
    if not done.wal_emptied:
        return None
    return replace(
        done,
        vacuumed=True,
        vacuum_reason="finishing a forget that stopped after its commit",
        pending=not _clear_pending(conn),
    )


def _ignore(*_values: Any) -> None:
    """``localmem_forgotten`` outside a purge (the triggers that call it exist only in one)."""


def _vacuum_needed(conn: "SqliteStore", path: Path, done: Scrub, forgotten: leftovers.Forgotten) -> str | None:
    """Why the file must be written anew for nothing deleted to stay in it, or None."""
    if str(path) == ":memory:" or not done.wal_emptied:
        return None  # nothing on disk; or the WAL still holds old pages: `localmem vacuum` later
    if int(conn.pragma("auto_vacuum")) != 2:
        return (
            "the store was made before auto_vacuum: its free pages may hold what earlier "
            "deletes left (it is switched to incremental now)"
        )
    with conn.reading():  # a snapshot: no checkpoint rewrites the file while it is read
        conn.run("purge_snapshot").fetchall()
        found = leftovers.find(path, forgotten)
    if found:
        return f"{found} piece(s) of what was deleted were left in the unused room of pages"
    return None


def scrub(conn: "SqliteStore", path: Path, before: int | None = None, started: float | None = None) -> Scrub:
    """Hand freed pages back to the file system and empty the WAL."""
    started = time.perf_counter() if started is None else started
    before = file_size(path) if before is None else before
    pages_before = int(conn.pragma("page_count"))
    if int(conn.pragma("auto_vacuum")) == 2:  # incremental
        conn.execute("PRAGMA incremental_vacuum").fetchall()
    freed = (pages_before - int(conn.pragma("page_count"))) * int(conn.pragma("page_size"))
    emptied = checkpoint(conn)
    return Scrub(emptied, max(freed, 0), before, file_size(path), round(time.perf_counter() - started, 3))


def checkpoint(conn: "SqliteStore") -> bool:
    """Copy the WAL into the file and truncate it; False if a reader kept it from finishing
    (it waits for readers up to the busy timeout)."""
    if conn.pragma("journal_mode") != "wal":
        return True
    busy, _log, _done = one_row(conn.run("purge_checkpoint"))
    return not busy


def vacuum(store: "SqliteStore") -> dict[str, Any]:
    """Compact the store: merge each full-text index into one segment, rewrite the file without
    its free pages (switching a store made before auto_vacuum to incremental), empty the WAL."""
    conn, path = store, store.path
    started = time.perf_counter()
    before = file_size(path)
    mode_before = int(conn.pragma("auto_vacuum"))
    t0 = time.perf_counter()
    with conn:
        conn.run("fts_optimize")
    fts_seconds = time.perf_counter() - t0
    _vacuum(conn)
    result = scrub(conn, path, before, started)
    if result.wal_emptied and conn.get_meta(PENDING) is not None:
        _clear_pending(conn)  # a forget stopped before its scrub: this vacuum was it
    return {
        "bytes_before": before,
        "bytes_after": result.bytes_after,
        "reclaimed_bytes": max(before - result.bytes_after, 0),
        "auto_vacuum": {0: "none", 1: "full", 2: "incremental"}.get(mode_before, str(mode_before)) + " -> incremental",
        "fts_optimize_seconds": round(fts_seconds, 3),
        "wal_emptied": result.wal_emptied,
        "seconds": round(time.perf_counter() - started, 3),
    }


def _vacuum(conn: "SqliteStore") -> None:
    """Write the file anew from its live rows (incremental auto_vacuum from then on)."""
    conn.pragma("auto_vacuum", "incremental")  # takes effect with the VACUUM below
    conn.execute("VACUUM")


def file_size(path: Path) -> int:
    """The store's size on disk: the file and its WAL (beside the real file, for a symlinked store)."""
    if str(path) == ":memory:":
        return 0
    real = real_file(path)
    return sum(p.stat().st_size for p in (real, Path(f"{real}-wal")) if p.is_file())


def pg_vacuum(conn: "PgStore") -> dict[str, Any]:
    """A vacuum on PostgreSQL: ``VACUUM FULL`` of the tables a forget touches (see :func:`pg_purge`)."""
    from . import pgmaint

    started = time.perf_counter()
    before = pgmaint.relation_bytes(conn, PG_TOUCHED)
    # BM25's pending statistics folded first: a deleted row's words wait in the append-only
    # deltas (migration 0004), where ANALYZE would sample them into pg_statistic again.
    with conn:
        pgmaint.fold_fts_statistics(conn)
    seconds, skipped = pgmaint.vacuum_tables(conn, PG_TOUCHED)
    after = pgmaint.relation_bytes(conn, PG_TOUCHED)
    return {
        "bytes_before": before,
        "bytes_after": after,
        "reclaimed_bytes": max(before - after, 0),
        "auto_vacuum": "postgres: VACUUM FULL",
        "fts_optimize_seconds": round(seconds, 3),
        "wal_emptied": not skipped,
        "seconds": round(time.perf_counter() - started, 3),
        "skipped": skipped,
    }
