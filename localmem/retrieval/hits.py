"""Hits made from the store: a message or unit's text, time and source messages, by key.

A message hit carries its parts (speaker, what was said, the captions of its images) as
fields of :class:`~localmem.types.Hit`; its ``text`` is rendered from them once, here.
"""

from __future__ import annotations

import json
from typing import Iterable, NamedTuple, Sequence

from ..errors import LocalmemError
from ..store.engine import Store
from ..types import Hit, HitSource

Key = tuple[str, int]  # ("m", message id) or ("u", unit id)


class MessageRow(NamedTuple):
    """What a search reads of one message (the ``message_rows`` query)."""

    id: int
    external_id: str
    conversation: str
    session: str
    speaker: str
    role: str
    text: str
    sent_at: str | None
    attachments: str | None
    next_id: int | None  # the turn right after it in its session
    replaced_by: int | None  # the newest message that directly corrects it


class MessageRows:
    """The rows of the messages one search looks at, each read once: the fusion steps and the
    hits need the same few dozen messages (their text, the turn after each, where and when each
    was said, what corrects it), and the turns after them, which a question hands its score to.
    Asking for ids it has not read reads them, and the turns right after them, in one statement,
    where the steps used to send one each (four round trips on a server store)."""

    def __init__(self, conn: Store) -> None:
        self._conn = conn
        self._rows: dict[int, MessageRow] = {}
        self._absent: set[int] = set()

    def of(self, ids: Iterable[int]) -> list[MessageRow]:
        """The rows of ``ids`` that exist, in the order of ``ids`` (without repeats)."""
        wanted = list(dict.fromkeys(ids))
        missing = [i for i in wanted if i not in self._rows and i not in self._absent]
        if missing:
            for row in self._conn.run("message_rows", {"ids": json.dumps(missing)}):
                self._rows[row[0]] = MessageRow(*row)
            self._absent.update(i for i in missing if i not in self._rows)
        return [self._rows[i] for i in wanted if i in self._rows]


def hydrate(conn: Store, keys: Iterable[Key], rows: MessageRows | None = None) -> dict[Key, Hit]:
    """Text, time and sources for messages and units, by key (``rows``: the messages' rows
    as a search has read them, else they are read here)."""
    keys = list(keys)
    message_ids = [i for p, i in keys if p == "m"]
    unit_ids = [i for p, i in keys if p == "u"]
    hits: dict[Key, Hit] = {}
    if message_ids and rows is not None:
        for row in rows.of(message_ids):
            hits[("m", row.id)] = _message_hit(
                row.id,
                row.external_id,
                row.conversation,
                row.session,
                row.speaker,
                row.text,
                row.sent_at,
                row.attachments,
            )
            if row.replaced_by is not None:  # a corrected message says so
                hits[("m", row.id)].superseded_by = f"m:{row.replaced_by}"
    elif message_ids:
        for mid, ext, conv, session, speaker, _role, text, sent_at, attachments in conn.run(
            "messages_by_ids", {"ids": json.dumps(message_ids)}
        ):
            hits[("m", mid)] = _message_hit(mid, ext, conv, session, speaker, text, sent_at, attachments)
        for mid, newer in corrections(conn, message_ids).items():  # a corrected message says so
            if ("m", mid) in hits:
                hits[("m", mid)].superseded_by = f"m:{newer}"
    if unit_ids:
        ids = json.dumps(unit_ids)
        for uid, kind, title, text, when in conn.run("units_by_ids", {"ids": ids}):
            shown = f"{title}: {text}" if title else text
            hits[("u", uid)] = Hit(id=f"u:{uid}", kind=kind, text=shown, score=0.0, channels={}, time=when)
        for uid, mid, ext, conv, session, speaker, sent_at in conn.run("unit_sources_by_ids", {"ids": ids}):
            hits[("u", uid)].sources.append(HitSource(mid, ext, conv, session, speaker, sent_at))
    return hits


def _message_hit(
    mid: int,
    ext: str,
    conv: str,
    session: str,
    speaker: str,
    text: str,
    sent_at: str | None,
    attachments: str | None,
) -> Hit:
    captions = [a.get("caption") for a in json.loads(attachments or "[]") if a.get("caption")]
    source = HitSource(mid, ext, conv, session, speaker, sent_at)
    return Hit.message(f"m:{mid}", speaker, text, sent_at, [source], captions)


def corrections(conn: Store, message_ids: Sequence[int]) -> dict[int, int]:
    """Of ``message_ids``, those a newer message replaces: id → the newest direct correction."""
    if not message_ids:
        return {}
    return dict(conn.run("messages_replaced", {"ids": json.dumps(list(dict.fromkeys(message_ids)))}))


def latest_messages(conn: Store, ns: str, n: int) -> list[Hit]:
    """The ``n`` latest messages of namespace ``ns`` as hits, oldest first (``n`` at least 1)."""
    if not isinstance(n, int) or n < 1:
        raise LocalmemError("recent() needs n of at least 1")
    ids = [row[0] for row in conn.run("namespace_messages_latest", {"ns": ns, "n": n})]
    found = hydrate(conn, [("m", mid) for mid in ids])
    return [found[("m", mid)] for mid in reversed(ids) if ("m", mid) in found]
