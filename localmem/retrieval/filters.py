"""Search filters: only memories by a speaker, in a conversation, said within a time range, or
carrying some metadata.

A filter selects messages; a unit (an episode, gist, fact or knowledge) passes when every
message it rests on does, so a filtered search never returns something that rests on a
message outside the filter. The channels then rank only what passes: BM25 within the allowed
ids, the vector channel by exact distance over their stored vectors (or, when most of the
namespace passes, the namespace's nearest with enough extra that ``k`` pass), and the other
channels' candidates are dropped when they do not pass. Selecting the messages reads the
namespace's messages once (an index by speaker, time or conversation narrows it).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any, Mapping

from ..store.engine import Store


@dataclass(frozen=True)
class Filters:
    """What a filtered search keeps. ``since`` is inclusive, ``until`` exclusive (ISO text; a
    day given as ``until`` is made the next day by :func:`time_bounds`)."""

    since: str | None = None
    until: str | None = None
    speaker: str | None = None
    conversation: str | None = None
    meta: tuple[tuple[str, Any], ...] = ()

    def __bool__(self) -> bool:
        return any((self.since, self.until, self.speaker, self.conversation, self.meta))

    def to_dict(self) -> dict[str, Any]:
        return {
            "since": self.since,
            "until": self.until,
            "speaker": self.speaker,
            "conversation": self.conversation,
            "meta": dict(self.meta),
        }


def time_bounds(since: str | None, until: str | None) -> tuple[str | None, str | None]:
    """``since`` and ``until`` as ISO text (already parsed): a bare day as ``until`` means the
    whole day, so it becomes the start of the next day."""
    if until is not None and len(until) == 10:
        until = (dt.date.fromisoformat(until) + dt.timedelta(days=1)).isoformat()
    return since, until


@dataclass
class Allowed:
    """The message and unit ids that pass the filters."""

    messages: set[int]
    units: set[int]

    def keeps(self, key: tuple[str, int]) -> bool:
        return key[1] in (self.messages if key[0] == "m" else self.units)

    def keeps_id(self, hit_id: str) -> bool:
        return self.keeps((hit_id[0], int(hit_id[2:])))


def allowed(conn: Store, ns: str, filters: Filters) -> Allowed:
    """What passes ``filters`` in namespace ``ns``."""
    meta: Mapping[str, Any] = dict(filters.meta)
    messages = [
        row[0]
        for row in conn.run(
            "filter_messages",
            {
                "ns": ns,
                "speaker": filters.speaker,
                "conversation": filters.conversation,
                "since": filters.since,
                "until": filters.until,
                "meta": json.dumps(meta, ensure_ascii=False) if meta else None,
            },
        )
    ]
    units = [row[0] for row in conn.run("filter_units", {"messages": json.dumps(messages)})]
    return Allowed(set(messages), set(units))


def part_ids(conn: Store, messages: set[int]) -> list[int]:
    """The sentence parts of ``messages``."""
    return [row[0] for row in conn.run("filter_parts", {"messages": json.dumps(sorted(messages))})]


def allowed_by(conn: Store, ns: str, filters: Filters | None) -> Allowed | None:
    """What passes ``filters`` (``None`` when there are none: everything does)."""
    return allowed(conn, ns, filters) if filters else None


def make_filters(
    *,
    since: Any = None,
    until: Any = None,
    speaker: str | None = None,
    conversation: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Filters | None:
    """Checked :class:`Filters` from what a caller gave (dates or datetimes, or text either
    parses; ``meta``: keys to scalar values); ``None`` when nothing is filtered. ``until`` is
    inclusive as given: a day includes all of it, a time includes that second."""
    from ..errors import LocalmemError
    from ..text.times import day_or_time

    start = day_or_time(since, "--since")
    end = day_or_time(until, "--until")
    if end is not None and len(end) > 10:
        end = (dt.datetime.fromisoformat(end) + dt.timedelta(seconds=1)).isoformat()
    start, end = time_bounds(start, end)
    if start and end and start >= end:
        raise LocalmemError(f"--since {since} is not before --until {until}", "give a time range that is not empty")
    for name, value in (("--speaker", speaker), ("--conversation", conversation)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise LocalmemError(f"{name} needs a non-empty name")
    filters = Filters(
        start, end, speaker.strip() if speaker else None, conversation, check_meta(meta, "filter") if meta else ()
    )
    return filters or None


def as_of_bound(until: Any, as_of: Any) -> tuple[Any, dt.date | None]:
    """The ``until`` a search ``as_of`` a date or time keeps (the earlier of the two), and the
    day relative times count from then; ``(until, None)`` without ``as_of``. What was known
    then is what had been said by then (a correction keeps the time of what it corrects)."""
    from ..text.times import day_or_time

    if as_of is None:
        return until, None
    known = day_or_time(as_of, "--as-of")
    if known is None:
        return until, None
    end = day_or_time(until, "--until")
    return (known if end is None or known < end else until), dt.date.fromisoformat(known[:10])


def check_meta(meta: Mapping[str, Any], what: str = "metadata") -> tuple[tuple[str, Any], ...]:
    """``meta`` as sorted pairs, checked: keys are non-empty names without double quotes,
    values are text, numbers, true/false or null."""
    from ..errors import LocalmemError

    if not isinstance(meta, Mapping):
        raise LocalmemError(f"the {what} must be a mapping of names to values, got {type(meta).__name__}")
    for key, value in meta.items():
        if not isinstance(key, str) or not key.strip() or '"' in key:
            raise LocalmemError(f"{what} key {key!r} is not a name", "use keys like source or app_id")
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise LocalmemError(
                f"{what} value of {key!r} must be text, a number, true/false or null, got {type(value).__name__}"
            )
    return tuple(sorted(meta.items()))
