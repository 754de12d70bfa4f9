"""Hits made from the store: a message or unit's text, time and source messages, by key.

A message hit carries its parts (speaker, what was said, the captions of its images) as
fields of :class:`~localmem.types.Hit`; its ``text`` is rendered from them once, here.
"""

from __future__ import annotations

import json
from typing import Iterable, Sequence

import apsw

from ..store.queries import q
from ..types import Hit, HitSource

Key = tuple[str, int]  # ("m", message id) or ("u", unit id)


def hydrate(conn: apsw.Connection, keys: Iterable[Key]) -> dict[Key, Hit]:
    """Text, time and sources for messages and units, by key."""
    keys = list(keys)
    message_ids = [i for p, i in keys if p == "m"]
    unit_ids = [i for p, i in keys if p == "u"]
    hits: dict[Key, Hit] = {}
    if message_ids:
        for mid, ext, conv, session, speaker, _role, text, sent_at, attachments in conn.execute(
            q("messages_by_ids"), {"ids": json.dumps(message_ids)}
        ):
            captions = [a.get("caption") for a in json.loads(attachments or "[]") if a.get("caption")]
            source = HitSource(mid, ext, conv, session, speaker, sent_at)
            hits[("m", mid)] = Hit.message(f"m:{mid}", speaker, text, sent_at, [source], captions)
        for mid, newer in corrections(conn, message_ids).items():  # a corrected message says so
            if ("m", mid) in hits:
                hits[("m", mid)].superseded_by = f"m:{newer}"
    if unit_ids:
        ids = json.dumps(unit_ids)
        for uid, kind, title, text, when in conn.execute(q("units_by_ids"), {"ids": ids}):
            shown = f"{title}: {text}" if title else text
            hits[("u", uid)] = Hit(id=f"u:{uid}", kind=kind, text=shown, score=0.0, channels={}, time=when)
        for uid, mid, ext, conv, session, speaker, sent_at in conn.execute(q("unit_sources_by_ids"), {"ids": ids}):
            hits[("u", uid)].sources.append(HitSource(mid, ext, conv, session, speaker, sent_at))
    return hits


def corrections(conn: apsw.Connection, message_ids: Sequence[int]) -> dict[int, int]:
    """Of ``message_ids``, those a newer message replaces: id → the newest direct correction."""
    if not message_ids:
        return {}
    return dict(conn.execute(q("messages_replaced"), {"ids": json.dumps(list(dict.fromkeys(message_ids)))}))


def latest_messages(conn: apsw.Connection, ns: str, n: int) -> list[Hit]:
    """The ``n`` latest messages of namespace ``ns`` as hits, oldest first."""
    ids = [row[0] for row in conn.execute(q("namespace_messages_latest"), {"ns": ns, "n": n})]
    found = hydrate(conn, [("m", mid) for mid in ids])
    return [found[("m", mid)] for mid in reversed(ids) if ("m", mid) in found]
