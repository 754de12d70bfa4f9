"""Searching many queries at once: the checked search parameters, the queries' vectors
embedded in batches, the reranker the parameters ask for, then :func:`search.search` per query.

Every search option is a field of :class:`~localmem.retrieval.search.SearchParams`: what it
takes from the configuration (:meth:`~localmem.retrieval.search.SearchParams.from_config`) and
what the caller chooses (channels, sizes, a recipe), checked by :func:`search_params`. The models are loaded only when a query
needs them: no vectors in the store, or no vector channel, means no embedder.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence, TypedDict

from ..config import ALL_CHANNELS, DEFAULT_K, RERANK_MODES
from ..errors import LocalmemError
from ..store.engine import Store
from ..text.files import without_surrogates

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

    from ..models.factory import Models
    from ..models.protocols import Reranker
    from ..types import Hit
    from .search import SearchParams

# Queries embedded at once by :func:`search_many` unless the caller says otherwise.
DEFAULT_BATCH = 64


class SearchArgs(TypedDict, total=False):
    """The keywords that shape a search, the same for :meth:`Memory.search
    <localmem.memory.Memory.search>`, ``search_many``, ``search_params`` and ``ask``
    (:func:`checked_params` checks them). Each may be left out.

    ``k``: hits (default 10; ``ask``: the config's ``ask_candidates``). ``budget``: candidates
    per channel (default: the config's ``channel_budget``, at least ``k``). ``recipe``: a
    search preset (which channels, whether built memory and sentence parts take part; see
    :class:`~localmem.retrieval.search.SearchParams`); ``channels``, ``promote`` and
    ``rerank`` override it. ``promote``: move candidates from the best-matching episodes (for
    the query's people and time) ahead, keeping their order (CAST). ``rerank``: "auto" uses
    the configured cross-encoder if any, "none" keeps the fusion order, "llm" asks the LLM
    whether each of the top candidates is relevant (slow).

    Filters: only messages said ``since`` .. ``until`` (inclusive; a date, a time, or text
    either parses), by ``speaker``, in ``conversation``, whose metadata holds every pair of
    ``meta``; and the units resting only on such messages
    (:mod:`localmem.retrieval.filters`). ``as_of``: what was known then: only what was said up to
    that date or time (an ``until`` no later than it), and relative times counted from it."""

    k: int
    budget: int | None
    channels: Sequence[str] | None
    promote: bool | None
    rerank: str | None
    recipe: "SearchParams | None"
    since: Any
    until: Any
    as_of: Any
    speaker: str | None
    conversation: str | None
    meta: Mapping[str, Any] | None


def checked_params(
    configured: "SearchParams", now: dt.date | None = None, **args: Unpack[SearchArgs]
) -> "SearchParams":
    """The :class:`~localmem.retrieval.search.SearchParams` that ``args`` ask for on top of
    ``configured`` (:meth:`~localmem.retrieval.search.SearchParams.from_config`), checked
    (:func:`search_params`, then the filters of :func:`~localmem.retrieval.filters.make_filters`),
    counting relative times from ``now``."""
    from .filters import as_of_bound, make_filters

    unknown = set(args) - set(SearchArgs.__annotations__)
    if unknown:
        raise TypeError(f"unexpected keyword argument {sorted(unknown)[0]!r}")
    until, known = as_of_bound(args.get("until"), args.get("as_of"))
    if known is not None and now is None:
        now = known
    params = search_params(
        configured,
        args.get("k", DEFAULT_K),
        args.get("budget"),
        args.get("channels"),
        args.get("promote"),
        args.get("rerank"),
        recipe=args.get("recipe"),
        now=now,
    )
    filters = make_filters(
        since=args.get("since"),
        until=until,
        speaker=args.get("speaker"),
        conversation=args.get("conversation"),
        meta=args.get("meta"),
    )
    return replace(params, filters=filters)


def search_params(
    configured: "SearchParams",
    k: int = DEFAULT_K,
    budget: int | None = None,
    channels: Sequence[str] | None = None,
    promote: bool | None = None,
    rerank: str | None = None,
    *,
    recipe: "SearchParams | None" = None,
    now: dt.date | None = None,
) -> "SearchParams":
    """The checked search parameters: ``recipe`` (default: ``configured``) with these sizes,
    ``channels``, ``promote`` and ``rerank`` where given, and the configuration's fields of
    ``configured`` (candidates per channel, the RRF constant, present first, the embedding
    batch, the user's name)."""
    base = recipe or configured
    chosen = tuple(channels) if channels else base.channels
    unknown = set(chosen) - set(ALL_CHANNELS)
    if unknown:
        raise LocalmemError(f"unknown channel(s) {', '.join(sorted(unknown))}", f"available: {', '.join(ALL_CHANNELS)}")
    if k < 1:
        raise LocalmemError("k must be at least 1")
    rerank = rerank or base.rerank
    if rerank not in RERANK_MODES:
        raise LocalmemError(f"unknown rerank mode {rerank!r}", f"use one of: {', '.join(RERANK_MODES)}")
    return replace(
        base,
        k=k,
        budget=max(budget or configured.budget, k),
        rrf_k=configured.rrf_k,
        channels=chosen,
        promote=base.promote if promote is None else promote,
        rerank=rerank,
        now=now,
        present_first=configured.present_first,
        embed_batch=configured.embed_batch,
        user_name=configured.user_name,
    )


def search_many(
    conn: "Store",
    namespace: str,
    models: "Models",
    queries: Iterable[str],
    params: "SearchParams",
    batch: int = DEFAULT_BATCH,
    *,
    names: "SpeakerNames | None" = None,
) -> Iterator[list["Hit"]]:
    """The hits of each of ``queries`` in ``namespace``, yielded per query; the queries are
    embedded ``batch`` at a time. A query is not stored, so a lone surrogate in it is
    repaired, not refused. ``names``: the speakers' names kept between searches."""
    pending: list[str] = []
    for query in queries:
        pending.append(without_surrogates(query))
        if len(pending) >= batch:
            yield from search_batch(conn, namespace, models, pending, params, names=names)
            pending = []
    if pending:
        yield from search_batch(conn, namespace, models, pending, params, names=names)


def search_one(
    conn: "Store",
    namespace: str,
    models: "Models",
    query: str,
    params: "SearchParams",
    *,
    names: "SpeakerNames | None" = None,
) -> list["Hit"]:
    """The hits of one query (as it is: no repair)."""
    return next(iter(search_batch(conn, namespace, models, [query], params, names=names)))


def search_batch(
    conn: "Store",
    namespace: str,
    models: "Models",
    queries: list[str],
    params: "SearchParams",
    *,
    names: "SpeakerNames | None" = None,
) -> Iterator[list["Hit"]]:
    """The hits of each of ``queries``, embedded together (nothing is embedded when the store
    has no vectors); ``names``: as in :func:`vector_texts`. Each search reads the store's
    change state once (:meth:`~localmem.store.engine.Store.same_state`: what it has read before is kept
    while the store is unchanged), the first with the embedding of the batch."""
    from ..store.owner import names as owner_names
    from . import search

    def embedded() -> tuple[Any, "Reranker | None"]:
        vectors: Any = [None] * len(queries)
        if conn.has_vectors() and ({"vector", "temporal", "graph"} & set(params.channels) or params.promote):
            from ..models.embedding import embed_batched

            embedder = models.embedder
            conn.check_embedder(embedder.model_id, embedder.dim)
            texts = vector_texts(conn, namespace, queries, params, params.user_name, names)
            vectors = embed_batched(embedder, texts, params.embed_batch, role="query")
        reranker = None
        if params.rerank == "llm":
            reranker = models.llm_reranker()
        elif params.rerank == "auto":
            reranker = models.reranker
        return vectors, reranker

    with conn.same_state():
        vectors, reranker = embedded()
        if params.speaker_weight:  # the owner's names: a first-person query prefers their messages
            params = replace(params, owner=tuple(owner_names(conn, namespace)))
        hits = search.search(conn, namespace, queries[0], vectors[0], params, reranker) if queries else None
    if hits is None:
        return
    yield hits
    for query, vec in zip(queries[1:], vectors[1:]):
        with conn.same_state():  # the caller may have written, or another process, since the last
            hits = search.search(conn, namespace, query, vec, params, reranker)
        yield hits


def vector_texts(
    conn: "Store",
    namespace: str,
    queries: Sequence[str],
    params: "SearchParams",
    user_name: str | None,
    names: "SpeakerNames | None" = None,
) -> list[str]:
    """What the vector channels embed for ``queries``: without the speakers' names, unless
    the search recipe says otherwise (see :mod:`localmem.retrieval.query_text`). ``names``:
    where those names are kept between searches (without it they are read afresh)."""
    if not params.without_speakers:
        return list(queries)
    return speakerless(conn, namespace, queries, user_name, names)


def speakerless(
    conn: "Store",
    namespace: str,
    queries: Sequence[str],
    user_name: str | None,
    names: "SpeakerNames | None" = None,
) -> list[str]:
    """``queries`` without the namespace's speakers' names (see :mod:`localmem.retrieval.query_text`)."""
    from .query_text import without_names

    found = (names or SpeakerNames())(conn, namespace, user_name)
    return [without_names(query, found) for query in queries]


class SpeakerNames:
    """The speakers' names a vector query leaves out, kept between searches and read again
    only when the store has changed since (finding them scans the namespace's messages three
    times: a fifth of a search's time on 10,000 messages). ``data_version`` moves when another
    connection commits, ``total_changes`` when this one writes; another namespace or user name
    reads them again too. Each :class:`~localmem.memory.Memory` keeps one (its calls run one
    at a time)."""

    def __init__(self) -> None:
        self._kept: tuple[tuple[Any, ...], list[str]] | None = None

    def __call__(self, conn: "Store", namespace: str, user_name: str | None) -> list[str]:
        from .query_text import speaker_names
        from .speakers import speakers

        state = (id(conn), *conn.change_state(), namespace, user_name)
        if self._kept is None or self._kept[0] != state:
            known = speakers(conn, namespace, user_name)
            self._kept = (state, speaker_names(name for aliases in known.values() for name in aliases))
        return self._kept[1]
