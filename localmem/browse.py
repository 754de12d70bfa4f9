"""``mem.browse``: what a :class:`~localmem.memory.Memory` remembers, read-only.

:class:`Browse` checks its arguments and calls :mod:`localmem.store.browse` (and
:mod:`localmem.store.manage` for the sources) on the namespace of the Memory it belongs to. It
shares that Memory's connection and lock (:class:`~localmem.store.handle.Handle`), so its
calls take turns with the Memory's. Nothing here writes, or loads a model. The results are the
dataclasses of :mod:`localmem.store.results`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import DEFAULT_LIST_LIMIT, check_choice
from .errors import LocalmemError
from .serial import one_at_a_time

if TYPE_CHECKING:
    from .store import results
    from .store.handle import Handle


@one_at_a_time
class Browse:
    """Lists and views of what was remembered in one namespace: episodes, facts, entities,
    speakers and sources; one memory in full; messages in their conversation; counts over time.

    >>> for episode in mem.browse.episodes(limit=5):
    ...     print(episode.title)
    """

    def __init__(self, store: "Handle", namespace: str) -> None:
        self._store, self.namespace = store, namespace
        self._lock = store.lock

    def _locked(self) -> Any:
        return self._store.locked()

    def episodes(self, limit: int = DEFAULT_LIST_LIMIT) -> list["results.Episode"]:
        """The latest episodes of this namespace."""
        from .store import browse

        return browse.episodes(self._store.conn, self.namespace, limit)

    def facts(
        self,
        *,
        entity: str | None = None,
        start: str | None = None,
        end: str | None = None,
        limit: int = DEFAULT_LIST_LIMIT,
    ) -> list["results.Fact"]:
        """Facts in time order, optionally about ``entity`` and within ``start``..``end`` (ISO)."""
        from .store import browse

        return browse.facts(self._store.conn, self.namespace, entity=entity, start=start, end=end, limit=limit)

    def entities(self, limit: int = DEFAULT_LIST_LIMIT) -> list["results.Entity"]:
        """The entities of this namespace, most mentioned first."""
        from .store import browse

        return browse.entities(self._store.conn, self.namespace, limit)

    def get(self, item: str) -> "results.MessageDetail | results.UnitDetail":
        """One memory of this namespace in full: a message (``m:ID``: text, speaker, role,
        conversation, time, metadata, source, corrections, the units resting on it) or a unit
        (``u:ID``: text, times, source messages, entities, links)."""
        from .store import browse

        return browse.get(self._store.conn, self.namespace, item)

    def show(self, item: str | int) -> "results.MessageDetail | results.UnitDetail":
        """:meth:`get`; a bare number is a unit id (as before ids were printed ``u:ID``)."""
        return self.get(f"u:{item}" if isinstance(item, int) else item)

    def describe(self, items: "list[str | int]") -> dict[str, str]:
        """Words for ids, for people (:mod:`localmem.text.labels`): a message (``m:ID``) as who
        said it, when and in which conversation; a unit (``u:ID``) as its kind and title; a
        source (its number) as its file's name. Keyed by the id as given (as text); an id this
        namespace does not hold is left out.

        >>> mem.browse.describe(["m:12", "u:3", 2])
        {'m:12': 'm:12 Jonas, 2024-09-14 21:15, in “Jonas”', 'u:3': 'u:3, the episode “Dinner”', '2': ...}
        """
        from .text import labels

        out: dict[str, str] = {}
        sources: dict[str, Any] | None = None
        for item in items:
            key = str(item)
            if key.isdigit():  # a source
                if sources is None:
                    sources = {str(s.id): s for s in self.sources()}
                if key in sources:
                    out[key] = labels.source(key, sources[key].uri, sources[key].kind)
                continue
            try:
                found = self.get(key).to_dict()
            except LocalmemError:  # not in this namespace (or not an id): no words
                continue
            if found.get("kind") == "message":
                out[key] = f"{labels.message_of(found)}: {labels.clip(found['text'], 80)}"
            else:
                out[key] = labels.unit(found["id"], found["kind"], found.get("title"), found.get("text"))
        return out

    def sources(self) -> list["results.Source"]:
        """The sources (imports) of this namespace."""
        from .store import manage

        return manage.sources(self._store.conn, self.namespace)

    def timeline(self, period: str = "month", *, speaker: str | None = None) -> list["results.TimelinePeriod"]:
        """Messages and episodes of this namespace per ``period`` ("week" or "month"), oldest
        first, the empty periods between too; ``speaker``: only their messages, and the
        episodes they speak in."""
        from .store import browse

        check_choice("period", period, ("week", "month"))
        return browse.timeline(self._store.conn, self.namespace, period, speaker)

    def speakers(self, limit: int = DEFAULT_LIST_LIMIT) -> list["results.SpeakerSummary"]:
        """Who speaks in this namespace, the most messages first."""
        from .store import browse

        return browse.speakers(self._store.conn, self.namespace, limit)

    def conversations(self, limit: int = DEFAULT_LIST_LIMIT) -> list[dict[str, Any]]:
        """The conversations of this namespace, the most messages first: ``conversation``,
        ``messages``, ``first`` and ``last`` (times)."""
        from .store import browse

        return browse.conversations(self._store.conn, self.namespace, limit)

    def conversations_by_source(self, limit: int = DEFAULT_LIST_LIMIT) -> list[dict[str, Any]]:
        """The conversations of this namespace per source (import), the latest first within each,
        with their people and episodes (:func:`localmem.store.browse.conversations_by_source`)."""
        from .store import browse

        return browse.conversations_by_source(self._store.conn, self.namespace, limit)

    def built(self) -> dict[str, Any]:
        """What was built from this namespace's messages and what was not: episodes, those
        with a summary, messages in no episode, units per kind, vectors."""
        from .store import browse

        return browse.built(self._store.conn, self.namespace)

    def names(self, limit: int = 200) -> tuple[list[str], list[str]]:
        """The speakers and the conversations of this namespace by name, the most messages first."""
        from .store import browse

        return browse.names(self._store.conn, self.namespace, limit)

    def said_by(self, speaker: str, limit: int = DEFAULT_LIST_LIMIT, offset: int = 0) -> list[dict[str, Any]]:
        """What ``speaker`` said, the latest first (``id``, ``conversation``, ``text``, ``time``,
        ``attachments``); ``offset``: how many of the latest to skip."""
        from .store import browse

        if not isinstance(limit, int) or not isinstance(offset, int) or limit < 1 or offset < 0:
            raise LocalmemError("said_by needs a limit of at least 1 and an offset of at least 0")
        return browse.said_by(self._store.conn, self.namespace, speaker, limit, offset)

    def opening(self, item: str, n: int = 3) -> list[dict[str, str]]:
        """The first ``n`` messages (``speaker``, ``text``) of episode ``item`` (``u:ID``)."""
        from .store import browse
        from .store.refs import parse

        kind, number = parse(item)
        if kind != "u":
            raise LocalmemError(f"{item} is not an episode")
        return browse.opening(self._store.conn, self.namespace, number, n)

    def period(self, start: str, end: str, limit: int = DEFAULT_LIST_LIMIT) -> "results.Period":
        """The conversations with messages said in [``start``, ``end``) (ISO dates or times) and
        the episodes that started then."""
        from .store import browse
        from .text.times import day_or_time

        first, last = day_or_time(start, "start"), day_or_time(end, "end")
        if first is None or last is None:
            raise LocalmemError("a period needs a start and an end", "give dates like 2024-03-01")
        return browse.period(self._store.conn, self.namespace, first, last, limit=limit)

    def context(self, item: str, around: int = 3) -> "results.ConversationWindow":
        """Message ``item`` (``m:ID``) in its conversation, with the ``around`` messages said
        before and after it."""
        from .store import browse

        if not isinstance(around, int) or not 0 <= around <= 200:
            raise LocalmemError(f"around must be a number from 0 to 200, got {around!r}")
        return browse.context(self._store.conn, self.namespace, item, around)

    def conversation(self, name: str, first: int = 0, last: int = 49) -> "results.ConversationWindow":
        """The messages of conversation ``name`` at places (``seq``) ``first`` to ``last``, in
        order, and whether there are more before and after."""
        from .store import browse

        if last < first or last - first > 1000:
            raise LocalmemError("a conversation window is 1 to 1,000 messages long")
        return browse.window(self._store.conn, self.namespace, name, first, last)
