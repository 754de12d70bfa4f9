"""PostgreSQL maintenance: what a forget and a vacuum do after the rows are deleted, and the
planner's statistics.

A forget deletes rows by named queries (store/purge.py), then asks here for what SQLite's watch
triggers note (:func:`forget_watch`, :func:`forget_repair`), the turns whose full-text context
held a deleted message (:func:`followers`, :func:`reindex_messages`), and finally leaves nothing
of the deleted rows in any file the role can reach (:func:`vacuum_tables`: VACUUM FULL, stale
statistics cleared, ``pg_statistic`` rewritten, the WAL moved past them). Each function takes an
open :class:`~.pg.PgStore` and runs in the caller's transaction unless it says otherwise.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Sequence

from ..errors import LocalmemError
from .pgsql import own

if TYPE_CHECKING:
    from .pg import PgStore


def vacuum_tables(conn: PgStore, tables: Sequence[str], lock_timeout_s: float | None = None) -> tuple[float, list[str]]:
    """Leave nothing of the rows deleted from ``tables`` in any file of the server that the
    store's role can reach (outside any transaction), in four steps:

    1. ``VACUUM (FULL, ANALYZE)`` each table: it is written anew from its live rows, so the
       bytes of deleted rows leave its pages (a plain VACUUM only marks them free), and its
       statistics are gathered again without them.
    2. The statistics of a table left empty are cleared (:func:`_clear_stale_statistics`):
       ANALYZE writes none for a table without rows and keeps the old ones, whose histograms
       and most common values hold the deleted rows (whole messages, forgotten words).
    3. The catalog of statistics, ``pg_statistic``, is written anew: the versions ANALYZE
       replaced stay in its pages as dead tuples, as deleted rows do. Rewriting a catalog needs
       a superuser, or ``pg_maintain`` (PostgreSQL 17+).
    4. The server's write-ahead log is moved past them (:func:`_purge_wal`): its files hold the
       rows as written and the pages as they were before each change.

    What could not be done is returned with why (a table another session keeps locked for
    ``lock_timeout_s``, default the store's busy timeout; a step the role may not take; a
    server that keeps its WAL), with the seconds it took: the next vacuum or forget tries
    again."""
    import time

    started = time.perf_counter()
    deadline = started + (conn.busy_timeout_s if lock_timeout_s is None else lock_timeout_s)
    skipped = []
    conn.wait_for_locks(lock_timeout_s)
    try:
        present = []
        for table in tables:
            if not re.fullmatch(r"[a-z_]+", table):
                raise LocalmemError(f"not a table name: {table!r}")
            if conn.sql(own("table_exists"), {"t": table}).fetchone() == (True,):
                present.append(table)
        # A table's name cannot be a bound parameter: the one statement formatted here, each name
        # checked above and quoted as an identifier.
        from psycopg import sql

        vacuum = sql.SQL("VACUUM (FULL, ANALYZE, VERBOSE) {}")
        kept = _rewrite_all(conn, {t: vacuum.format(sql.Identifier(t)) for t in present}, deadline)
        skipped += [f"{t} ({why})" for t, why in kept.items()]
        try:
            skipped += _clear_stale_statistics(conn, [t for t in present if t not in kept])
        except LocalmemError as exc:  # a table locked past the busy timeout; a refusal
            skipped.append(f"the statistics of the emptied tables ({exc})")
        if not _may_rewrite_catalogs(conn):
            skipped.append("pg_statistic (needs a superuser or pg_maintain)")
        else:
            kept = _rewrite_all(conn, {"pg_statistic": own("vacuum_statistics")}, deadline)
            skipped += [f"{t} ({why})" for t, why in kept.items()]
        try:
            why = _purge_wal(conn)
        except LocalmemError as exc:
            why = str(exc)
        if why is not None:
            skipped.append(f"the server's write-ahead log ({why})")
    finally:
        conn.wait_for_locks()
    return time.perf_counter() - started, skipped


def _rewrite_all(conn: PgStore, commands: dict[str, Any], deadline: float) -> dict[str, str]:
    """Run each VACUUM FULL of ``commands`` (table: statement); run again, until ``deadline``,
    those that kept deleted row versions: a transaction open anywhere in the database (an
    autovacuum worker's ANALYZE is one) may still see them, and VACUUM FULL copies what it may
    see into the new file (its VERBOSE report counts them: "N dead row versions cannot be
    removed yet"). Returns what was not done, each with why."""
    import time

    import psycopg

    notes: list[str] = []

    def note(diag: Any) -> None:
        if diag.severity_nonlocalized == "INFO" and diag.message_detail:
            found = re.match(r"\s*(\d+)", diag.message_detail)
            if found:
                notes.append(found.group(1))

    left: dict[str, str] = {}
    todo = dict(commands)
    conn.raw.add_notice_handler(note)
    try:
        while todo:
            for table, command in todo.items():
                notes.clear()
                try:
                    conn.raw.execute(command)
                except psycopg.errors.LockNotAvailable:
                    left[table] = "held by another session"
                    continue
                dead = sum(int(n) for n in notes)
                if dead:
                    left[table] = f"{dead} deleted row version(s) a transaction still open may see"
                else:
                    left.pop(table, None)
            todo = {t: c for t, c in commands.items() if t in left and "transaction" in left[t]}
            if not todo or time.perf_counter() >= deadline:
                break
            time.sleep(0.2)
    finally:
        conn.raw.remove_notice_handler(note)
    return left


def _clear_stale_statistics(conn: PgStore, tables: Sequence[str]) -> list[str]:
    """Clear the column statistics of those of ``tables`` that are empty (their row count as the
    VACUUM FULL just before counted it, which row-level security does not hide): PostgreSQL
    18's ``pg_clear_attribute_stats``, which the table's MAINTAIN privilege allows (its owner,
    a namespace role); before 18 a superuser deletes the catalog's rows. What could not be
    cleared is returned."""
    empty = [
        str(r[0])
        for r in conn.sql(
            own("empty_tables"),
            {"t": list(tables)},
        )
    ]
    if not empty:
        return []
    args = {"t": empty}
    version = conn.sql(own("server_version_num")).fetchone()
    if version is not None and int(version[0]) >= 180000:
        conn.sql(
            own("clear_attribute_stats"),
            args,
        )
        return []
    row = conn.sql(own("is_superuser")).fetchone()
    if row is not None and row[0]:
        conn.sql(
            own("delete_statistics"),
            args,
        )
        return []
    return [f"the statistics of {', '.join(empty)} (emptied: PostgreSQL 18 or a superuser clears them)"]


def _purge_wal(conn: PgStore) -> str | None:
    """Move the server's write-ahead log past everything written so far and remove the files
    that held it: ``pg_switch_wal()`` ends the current file, then a ``CHECKPOINT`` removes every
    file before the new one. That holds only where the server deletes old files rather than
    renaming them for reuse (``wal_recycle = off``: ``localmem postgres start`` sets it; a
    recycled file keeps its old bytes until overwritten) and nothing else keeps them (WAL
    archiving, replication slots, ``wal_keep_size``, WAL summaries); and the role must be
    allowed both calls (a superuser; or ``pg_checkpoint`` and EXECUTE on ``pg_switch_wal``).
    Returns why it was not done, or None."""
    row = conn.sql(own("wal_purge_facts")).fetchone()
    assert row is not None
    superuser, may_switch, may_checkpoint, recycle, archive, keep, summarize, slots, may_list = row
    if not (superuser or (may_switch and may_checkpoint)):
        return "needs a superuser, or pg_checkpoint and EXECUTE on pg_switch_wal"
    kept = [
        *(["wal_recycle is on: old files are renamed for reuse with their bytes"] if recycle != "off" else []),
        *([f"archive_mode is {archive}"] if archive not in (None, "off") else []),
        *([f"wal_keep_size is {keep}"] if keep not in (None, "0") else []),
        *(["summarize_wal is on"] if summarize == "on" else []),
        *([f"{slots} replication slot(s)"] if slots else []),
    ]
    if kept:
        return "the server keeps its old files: " + "; ".join(kept)
    (switched,) = conn.sql(own("switch_wal")).fetchone() or (None,)
    conn.sql(own("checkpoint"))
    if may_list and switched is not None:
        # The check a reader of the directory would make: no file up to the one just ended.
        left = conn.sql(
            own("wal_files_left"),
            {"s": switched},
        ).fetchone()
        if left and left[0]:
            return f"{left[0]} file(s) up to {switched} are still there after a checkpoint"
    return None


def analyze(conn: PgStore) -> None:
    """Gather the planner's statistics of the store's tables (``ANALYZE``; a role may analyze
    only the tables it owns or maintains: the others are skipped with a notice, not an error).
    It samples at most 30,000 rows a table, so it takes about as long at a million messages as
    at a hundred thousand (0.2 s for the whole store at 10,000 here)."""
    conn.sql(own("analyze"))


def _may_rewrite_catalogs(conn: PgStore) -> bool:
    row = conn.sql(own("is_superuser")).fetchone()
    if row is not None and row[0]:
        return True
    maintain = conn.sql(own("may_maintain")).fetchone()
    return bool(maintain and maintain[0])


def followers(conn: PgStore, messages_json: str | None) -> list[int]:
    """The turn after each of the messages (a JSON array of ids) in its session: its full-text
    row holds the message as context, and must be indexed again once the message is gone."""
    if not messages_json:
        return []
    rows = conn.sql(
        own("followers"),
        {"ids": messages_json},
    )
    return [int(r[0]) for r in rows]


def forget_watch(conn: PgStore, params: dict[str, Any]) -> tuple[list[int], list[int]]:
    """What SQLite's temporary watch triggers note during a forget (store/purge.py), read before
    the deletion: the units that read the deleted ``messages`` (an episode that stays loses its
    logged replies' text) and the entities the deleted ``units`` mention (a summary written from
    them is dropped)."""
    readers = conn.sql(
        own("forget_readers"),
        {"messages": params.get("messages") or "[]"},
    )
    mentioned = conn.sql(
        own("forget_mentioned"),
        {"units": params.get("units") or "[]"},
    )
    return [int(r[0]) for r in readers], [int(r[0]) for r in mentioned]


def forget_repair(conn: PgStore, readers: Sequence[int], mentioned: Sequence[int]) -> None:
    """After a forget's deletion, in its transaction, as SQLite's purge_scrub_calls and
    purge_stale_summaries do: the logged model replies of episodes that stay but read a
    deleted message lose their text; a person's summary written from a deleted unit goes."""
    import json

    conn.sql(
        own("forget_scrub_calls"),
        {"episodes": json.dumps(list(readers))},
    )
    conn.sql(
        own("forget_stale_summaries"),
        {"entities": json.dumps(list(mentioned))},
    )


def relation_bytes(conn: PgStore, tables: Sequence[str]) -> int:
    """The bytes on disk of ``tables`` (those that exist), their indexes and TOAST included."""
    row = conn.sql(
        own("relation_bytes"),
        {"t": list(tables)},
    ).fetchone()
    return int(row[0]) if row else 0


def reindex_messages(conn: PgStore, ids: Sequence[int]) -> None:
    """Index the full text of the messages ``ids`` (those still there: the turns after forgotten
    ones) anew, and drop their context parts, which were embedded with the forgotten turn (their
    vectors by cascade; ``reembed`` frames them again with the turn now before them), as
    ``purge_reindex_followers`` does on SQLite."""
    if ids:
        import json

        arg = {"ids": json.dumps(list(ids))}
        conn.sql(own("reindex_messages"), arg)
        conn.sql(
            own("drop_context_parts"),
            arg,
        )


def fold_fts_statistics(conn: PgStore) -> bool:
    """Fold BM25's pending statistics (migration 0004) in the caller's transaction, unless
    another session is folding them; whether it did."""
    row = conn.sql(own("fold_fts_statistics")).fetchone()
    return bool(row and row[0])
