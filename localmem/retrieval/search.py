"""Search without any LLM: vector kNN (sqlite-vec) and BM25 (FTS5) fused by RRF.

Channels produce ranked id lists over messages and units; :func:`rrf` fuses
them; hits are hydrated with their text, time and source messages.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from ..config import (  # noqa: F401 (the channel names, defined once)
    ALL_CHANNELS,
    CHANNELS,
    DEFAULT_K,
    DEFAULTS,
    QUESTION_HANDOFF,
    RANGE_WEIGHT,
    SESSION_DEFAULT,
    SPEAKER_WEIGHT,
    WHEN_WEIGHT,
    Config,
)
from ..models.protocols import Reranker
from ..store.engine import Store
from ..text.language import detect, fts_text
from ..text.person import first_person
from ..text.words import STOPWORDS, plain, porter
from ..text.words import words as all_words
from ..types import Hit, HitSource
from . import language_balance, vector_index
from .filters import Allowed, Filters, allowed_by, part_ids
from .hits import MessageRow, MessageRows, hydrate
from .hits import corrections as _corrections
from .query_time import EARLIEST, LATEST, Range, asks_present, asks_when

MAX_FTS_TERMS = 32


Key = tuple[str, int]  # ("m", message id) or ("u", unit id)


def fts_words(text: str) -> list[str]:
    """The words of free text worth matching: no stopwords, no single letters, no repeats."""
    words = all_words(text)
    # Single letters ("s" of "Elena's") match nearly everything and cost time, not recall.
    kept = [w for w in words if w not in STOPWORDS and len(w) > 1] or words
    return list(dict.fromkeys(kept))[:MAX_FTS_TERMS]


def fts_query(text: str) -> str | None:
    """A safe FTS5 expression for free text: quoted word tokens joined by OR."""
    return _or(fts_words(text))


def _or(words: Sequence[str]) -> str | None:
    return " OR ".join(f'"{w}"' for w in words) if words else None


# A word in more documents than this is left out of a BM25 query that has a rarer word: it
# would cost a score for every one of them and weighs almost nothing (stores this small are
# searched with every word).
COMMON_TERM_DOCS = 20_000


def intl_fts_words(text: str) -> list[str]:
    """:func:`fts_words` as the non-English index holds them (migration 0013): each run of
    Chinese, Japanese, Korean or Thai characters cut into its bigrams (text.language.fts_text)."""
    out = [token for word in fts_words(text) for token in fts_text(word).split()]
    return list(dict.fromkeys(out))[:MAX_FTS_TERMS]


def pruned_fts_query(conn: Store, text: str, table: str) -> str | None:
    """:func:`fts_query` without the words that match more than :data:`COMMON_TERM_DOCS` rows
    of ``table`` ("messages", "units", or "messages_intl": the index of messages not in
    English, whose words are not stemmed), unless every word does (then the rarest stays)."""
    intl = table == "messages_intl"
    words = intl_fts_words(text) if intl else fts_words(text)
    if len(words) < 2:
        return _or(words)
    stem = plain(conn) if intl else porter(conn)
    terms = {word: stem(word) for word in words}
    # one statement for every word (a round trip each costs on a server store)
    held = {
        term: int(n)
        for term, n in conn.run(
            f"{table}_terms_docs", {"terms": json.dumps(sorted({t for ts in terms.values() for t in ts}))}
        )
    }
    docs = {word: max((held.get(t, 0) for t in terms[word]), default=0) for word in words}
    kept = [w for w in words if docs[w] <= COMMON_TERM_DOCS]
    return _or(kept or [min(words, key=lambda w: docs[w])])


def rrf(rankings: Mapping[str, Sequence[Key]], k: int = DEFAULTS.rrf_k) -> list[tuple[Key, float, dict[str, int]]]:
    """Reciprocal rank fusion: ``sum(1 / (k + rank))`` over the lists an item is in (rank from 1).

    Returns ``(key, score, {channel: rank})`` best first; ties keep first-seen order.
    """
    scores: dict[Key, float] = {}
    ranks: dict[Key, dict[str, int]] = {}
    for channel, ranked in rankings.items():
        for rank, key in enumerate(ranked, 1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
            ranks.setdefault(key, {})[channel] = rank
    order = sorted(scores, key=lambda key: -scores[key])
    return [(key, scores[key], ranks[key]) for key in order]


@dataclass(frozen=True)
class SearchParams:
    """Every option of a search, declared once: the caller's (``k``, ``channels``, filters, a
    recipe's switches) and the configuration's (:meth:`from_config`)."""

    k: int = DEFAULT_K
    budget: int = DEFAULTS.channel_budget
    rrf_k: int = DEFAULTS.rrf_k  # Memory's searches (baselines too) pass Config.rrf_k
    channels: tuple[str, ...] = CHANNELS
    now: dt.date | None = None  # "now" for the temporal channel; default: the latest message time
    promote: bool = False  # CAST episodic promotion of the fused candidates
    rerank: str = "auto"  # "auto": the configured cross-encoder, if any; "none"; "llm": the local LLM
    rerank_top: int = 20  # how many of the fused candidates a reranker judges
    duplicate_similarity: float = 0.92  # units linked by synonymy at least this close are one hit
    evidence_fusion: bool = True  # gists and facts vote for their messages (see evidence_fusion)
    units: bool = True  # built memory (episodes, gists, facts, knowledge) takes part, not only messages
    parts: bool = True  # a message also ranks by its nearest sentence vector (message_parts)
    filters: Filters | None = None  # only messages (and units resting on them) that pass
    present_first: int = 0  # a question about the present gets the newest of this many top hits first
    # The vector channels embed the query without the namespace's speaker names (query_text).
    without_speakers: bool = True
    # Context of a hit (context_fusion; 0 turns each off): a message gains session_weight × its
    # session's score (the sum of the best SESSION_TOP fused scores in it); a query naming one
    # speaker multiplies that speaker's messages' scores by 1 + speaker_weight.
    session_weight: float = SESSION_DEFAULT
    # On by default: docs/decisions.md#speaker-weight.
    speaker_weight: float = SPEAKER_WEIGHT
    # A query naming a closed time range: the messages said in it have their fused scores
    # × (1 + this); 0: off (time_fusion).
    range_weight: float = RANGE_WEIGHT
    # A question states no fact; the turn after it answers it. A message hands this share of
    # its fused score, × the share of its content words that are in questions
    # (text.sentences.question_share), to the turn right after it in its session (0: off).
    question_handoff: float = QUESTION_HANDOFF
    # A question asking when (query_time.asks_when): the messages that say a time ("last
    # Friday", "in 2019") have their scores × (1 + when_weight) (0: off).
    when_weight: float = WHEN_WEIGHT
    embed_batch: int = DEFAULTS.embed_batch  # queries embedded per embedder call
    user_name: str | None = None  # a speaker's name the vector query leaves out (query_text)
    # The store owner's names as a speaker in the namespace (store/owner.py; set per search by
    # retrieval.batch): a first-person query prefers their messages (context_fusion).
    owner: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: Config) -> "SearchParams":
        """The default search with the configuration's candidates per channel, RRF constant,
        present-first count, embedding batch and user name."""
        return cls(
            budget=config.channel_budget,
            rrf_k=config.rrf_k,
            present_first=config.present_first,
            embed_batch=config.embed_batch,
            user_name=config.user_name,
        )


def run_channels(
    conn: Store,
    ns: str,
    query: str,
    query_vec: np.ndarray | None,
    params: SearchParams,
    when: Range | None = None,
    allowed: Allowed | None = None,
) -> tuple[dict[str, list[Key]], dict[Key, dict[str, float]]]:
    """Each channel's ranked keys, and each key's raw score per channel (``when``: the time
    range the query names, for the temporal channel; ``allowed``: what passes the search's
    filters, the only keys ranked)."""
    rankings: dict[str, list[Key]] = {}
    raw: dict[Key, dict[str, float]] = {}
    if "vector" in params.channels and query_vec is not None:
        found: list[tuple[float, Key]] = []
        for prefix, table in _tables(params, "messages", "units"):
            if allowed is None:
                nearest = vector_index.knn(conn, table, ns, query_vec, params.budget)
            else:
                among = allowed.messages if prefix == "m" else allowed.units
                nearest = vector_index.knn_among(conn, table, ns, query_vec, sorted(among), params.budget)
            for row_id, distance in nearest:
                found.append((distance, (prefix, row_id)))
        if params.parts:
            found = _with_parts(conn, ns, query_vec, params.budget, found, allowed)
        # A namespace in several languages: each ranks as if it were the question's (see
        # language_balance); a namespace in one language is ranked as it always was.
        found, own = language_balance.balanced(
            conn,
            ns,
            query,
            query_vec,
            found,
            lambda ids: _nearest_among(conn, ns, query_vec, params, ids),
            None if allowed is None else allowed.messages,
        )
        found.sort(key=lambda pair: pair[0])
        rankings["vector"] = [key for _, key in found[: params.budget]]
        for _, key in found[: params.budget]:
            raw.setdefault(key, {})["vector"] = round(1.0 - own[key], 4)  # cosine similarity
    if params.units:
        _memory_channels(conn, ns, query, query_vec, params, when, rankings, raw)
        if allowed is not None:  # graph, temporal and entity candidates that do not pass go
            for name in ("graph", "temporal", "entity"):
                if name in rankings:
                    rankings[name] = [key for key in rankings[name] if allowed.keeps(key)]
    if "bm25" in params.channels and fts_words(query):
        scored: list[tuple[float, Key]] = []
        # Messages in English (and too short to tell) are in messages_fts, stemmed; the others in
        # messages_intl, not stemmed: the query is matched against each in that index's form, and
        # the two lists merge by BM25 score. An English store's messages_intl is empty (no cost).
        tables = [("m", "messages"), ("m", "messages_intl")] + _tables(params, "messages", "units")[1:]
        for prefix, table in tables:
            if table == "messages_intl" and not _any_intl(conn, ns):
                continue  # an empty index finds nothing: two statements saved
            match = pruned_fts_query(conn, query, table)
            bind = {"match": match, "ns": ns, "k": params.budget}
            name = f"fts_{table}"
            if allowed is not None:
                name += "_among"
                bind["among"] = json.dumps(sorted(allowed.messages if prefix == "m" else allowed.units))
            for row_id, score in conn.run(name, bind):
                scored.append((score, (prefix, row_id)))
        scored.sort(key=lambda pair: pair[0])  # bm25() is lower-is-better
        rankings["bm25"] = [key for _, key in scored[: params.budget]]
        for score, key in scored[: params.budget]:
            raw.setdefault(key, {})["bm25"] = round(-score, 4)
    return rankings, raw


def _any_intl(conn: Store, ns: str) -> bool:
    """Whether ``ns`` may have messages in the index of those not in English (kept while the
    store is unchanged)."""

    def read() -> bool:
        row = conn.run("messages_intl_any", {"ns": ns}).fetchone()
        return bool(row and row[0])

    return conn.kept(("messages_intl_any", ns), read)


def _with_parts(
    conn: Store,
    ns: str,
    query_vec: np.ndarray,
    budget: int,
    found: list[tuple[float, Key]],
    allowed: Allowed | None = None,
) -> list[tuple[float, Key]]:
    """``found`` with each message at its nearest vector, whole or one of its parts (a
    message's sentences, embedded on their own): the one sentence that answers a question
    ranks a long message that says much else.

    Measured: docs/decisions.md#sentence-parts. Plain whole-turn retrieval (``parts=False``, as in the raw-hybrid baseline)
    does without them."""
    if allowed is None:
        nearest = vector_index.knn(conn, "parts", ns, query_vec, budget)
    else:
        nearest = vector_index.knn_among(conn, "parts", ns, query_vec, part_ids(conn, allowed.messages), budget)
    if not nearest:
        return found
    owner = dict(conn.run("part_messages", {"ids": json.dumps([pid for pid, _ in nearest])}))
    best: dict[Key, float] = {}
    for distance, key in found:
        best[key] = min(distance, best.get(key, distance))
    for part_id, distance in nearest:
        if part_id in owner:
            key = ("m", owner[part_id])
            best[key] = min(distance, best.get(key, distance))
    return [(distance, key) for key, distance in best.items()]


def _nearest_among(
    conn: Store, ns: str, query_vec: np.ndarray, params: SearchParams, ids: list[int]
) -> list[tuple[float, Key]]:
    """The vector channel's nearest among the messages ``ids``: each at its nearest vector,
    whole or one of its parts (as :func:`_with_parts`)."""
    found = [(d, ("m", i)) for i, d in vector_index.knn_among(conn, "messages", ns, query_vec, ids, params.budget)]
    if not params.parts:
        return found
    nearest = vector_index.knn_among(conn, "parts", ns, query_vec, part_ids(conn, set(ids)), params.budget)
    if nearest:
        owner = dict(conn.run("part_messages", {"ids": json.dumps([pid for pid, _ in nearest])}))
        found += [(d, ("m", owner[pid])) for pid, d in nearest if pid in owner]
    return found


def _tables(params: SearchParams, messages: str, units: str) -> list[tuple[str, str]]:
    return [("m", messages), ("u", units)] if params.units else [("m", messages)]


def _memory_channels(
    conn: Store,
    ns: str,
    query: str,
    query_vec: np.ndarray | None,
    params: SearchParams,
    when: Range | None,
    rankings: dict[str, list[Key]],
    raw: dict[Key, dict[str, float]],
) -> None:
    """The channels over built memory (graph, temporal, entity); no-ops on a raw store."""
    from . import channels

    found: dict[str, list[tuple[Key, float]]] = {}
    if "graph" in params.channels and query_vec is not None:
        if "vector" in rankings:
            seeds = [(key, raw[key]["vector"]) for key in rankings["vector"] if key[0] == "u"]
        else:  # the vector channel is switched off (an ablation): find the entry points anyway
            seeds = [(("u", i), 1.0 - d) for i, d in vector_index.knn(conn, "units", ns, query_vec, params.budget)]
        found["graph"] = channels.graph(conn, ns, seeds, params.budget)
    if "temporal" in params.channels and query_vec is not None and when is not None:
        found["temporal"] = channels.temporal(conn, ns, when, query_vec, params.budget)
    if "entity" in params.channels:
        found["entity"] = channels.entity(conn, ns, query, params.budget)
    for name, scored in found.items():
        if scored:
            rankings[name] = [key for key, _ in scored]
            for key, score in scored:
                raw.setdefault(key, {})[name] = round(score, 4)


def search(
    conn: Store,
    ns: str,
    query: str,
    query_vec: np.ndarray | None,
    params: SearchParams,
    reranker: Reranker | None = None,
) -> list[Hit]:
    """The top ``params.k`` hits for ``query`` in namespace ``ns``.

    Channels → RRF → rerank (when a ``reranker`` is given) → CAST promotion (``params.promote``)
    → near-duplicates folded → supersession marked.
    """
    when = _query_range(conn, ns, query, params) if "temporal" in params.channels or params.promote else None
    allowed = allowed_by(conn, ns, params.filters)
    rankings, raw = run_channels(conn, ns, query, query_vec, params, when, allowed)
    rows = MessageRows(conn)  # the candidates' messages, read once for every step below
    # Extra candidates so that folding duplicates still leaves k hits.
    fused = rrf(rankings, params.rrf_k)
    if params.evidence_fusion and params.units:
        fused = evidence_fusion(conn, fused)
    if params.question_handoff:
        fused = question_handoff(conn, fused, params.question_handoff, allowed, rows)
    if params.when_weight and asks_when(query):
        fused = saying_when(conn, fused, params.when_weight, params.now, rows)
    if params.session_weight or params.speaker_weight:
        fused = context_fusion(conn, query, fused, params, rows)
    if params.range_weight and when is not None:
        fused = time_fusion(conn, when, fused, params.range_weight)
    fused = fused[: params.k * 3]
    hydrated = hydrate(conn, [key for key, _, _ in fused], rows)
    out = []
    for key, score, ranks in fused:
        hit = hydrated.get(key)
        if hit is None or (allowed is not None and not allowed.keeps(key)):
            continue
        hit.score = round(score, 6)
        hit.channels = {ch: {"rank": r, "score": raw.get(key, {}).get(ch, 0.0)} for ch, r in ranks.items()}
        out.append(hit)
    if reranker is not None and out:
        out = _reranked(reranker, query, out, params.rerank_top)
    out = collapse(out, _near_duplicates(conn, out, params.duplicate_similarity))[: params.k]
    if params.promote and query_vec is not None:
        # CAST: reorder within the top k only; promotion never brings in a candidate
        out = _promoted(conn, ns, query, query_vec, when, out)
    if params.present_first and asks_present(query, params.now):
        out = newest_first(out, params.present_first, query)
    return mark_supersession(conn, out, allowed.keeps_id if allowed is not None else None)


# A message gains this × the best fused score among the units resting on it: why 0.25, and the
# best vote rather than the sum: docs/decisions.md#evidence-weight.
EVIDENCE_WEIGHT = 0.25


def evidence_fusion(
    conn: Store, fused: list[tuple[Key, float, dict[str, int]]], weight: float = EVIDENCE_WEIGHT
) -> list[tuple[Key, float, dict[str, int]]]:
    """Gists and facts vote for the messages they rest on instead of competing with them.

    ``weight`` × the best fused score among the narrow units resting on a message is added to
    that message's own (bringing in a message no channel found), and each unit is ranked just
    behind its best message, where
    :func:`collapse` shows the two as one hit. Raw messages keep their own evidence, so what
    extraction adds can lift messages but never pushes a message out for the same content.
    """
    unit_ids = [key[1] for key, _, _ in fused if key[0] == "u"]
    sources: dict[int, list[int]] = {}
    if unit_ids:
        for unit_id, message_id in conn.run("narrow_unit_sources", {"ids": json.dumps(unit_ids), "max": _FOLD_SOURCES}):
            sources.setdefault(unit_id, []).append(message_id)
    if not sources:
        return fused
    score = {key: s for key, s, _ in fused}
    ranks = {key: r for key, _, r in fused}
    boost: dict[Key, float] = {}
    for unit_id, messages in sources.items():
        for message_id in messages:
            key = ("m", message_id)
            boost[key] = max(boost.get(key, 0.0), score[("u", unit_id)])
    for key, extra in boost.items():
        score[key] = score.get(key, 0.0) + weight * extra
        ranks.setdefault(key, {})
    for unit_id, messages in sources.items():
        score[("u", unit_id)] = max(score[("m", m)] for m in messages) - 1e-9
    order = sorted(score, key=lambda key: -score[key])
    return [(key, score[key], ranks[key]) for key in order]


def question_handoff(
    conn: Store,
    fused: list[tuple[Key, float, dict[str, int]]],
    weight: float,
    allowed: Allowed | None = None,
    rows: MessageRows | None = None,
) -> list[tuple[Key, float, dict[str, int]]]:
    """Questions hand their score to their answers: a message that asks ("What was it
    called?") matches a question about its topic as well as the reply that says it
    ("Counter-Strike!"), but only the reply holds the fact. A message moves ``weight`` × its
    question share (:func:`~localmem.text.sentences.question_share`) of its fused score to
    the turn right after it in its session (bringing that turn in if no channel found it: its
    ``channels`` say ``neighbour`` with the rank of the question; a turn a channel found says
    ``question`` with that rank besides its channels). A message that asks
    nothing, or is the last of its session, keeps its score. ``rows``: the messages' rows as
    the search has read them (else read here)."""
    from ..text.sentences import question_share

    score = {key: s for key, s, _ in fused}
    ranks = {key: r for key, _, r in fused}
    ids = [key[1] for key in score if key[0] == "m"]
    if not ids:
        return fused
    place = {key: rank for rank, (key, _, _) in enumerate(fused, 1)}
    base = dict(score)
    for row in (rows or MessageRows(conn)).of(ids):
        mid, text, after = row.id, row.text, row.next_id
        share = weight * question_share(text) if "?" in text else 0.0
        if not share or after is None or (allowed is not None and not allowed.keeps(("m", after))):
            continue
        moved = share * base[("m", mid)]
        score[("m", mid)] -= moved
        key = ("m", after)
        score[key] = score.get(key, 0.0) + moved
        found = ranks.setdefault(key, {})
        # Said in the hit's channels, for "why this hit": "neighbour" when only the question
        # brought it in, "question" when a channel found it and a question's share was added.
        name = "question" if key in place else "neighbour"
        found[name] = min(found.get(name, place[("m", mid)]), place[("m", mid)])
    order = sorted(score, key=lambda key: -score[key])
    return [(key, score[key], ranks[key]) for key in order]


def saying_when(
    conn: Store,
    fused: list[tuple[Key, float, dict[str, int]]],
    weight: float,
    now: dt.date | None,
    rows: MessageRows | None = None,
) -> list[tuple[Key, float, dict[str, int]]]:
    """``fused`` with the messages that say a time (:func:`~localmem.text.times.find_time_phrases`:
    "yesterday", "last May", "in 2019") scored × (1 + ``weight``): the answer to "when" is in
    words like these, or in the date of a message that tells of the event (which every message
    has, so that alone does not tell the answer from the rest)."""
    from ..text.times import find_time_phrases

    ids = [key[1] for key, _, _ in fused if key[0] == "m"]
    if not ids:
        return fused
    ref = now or dt.date.today()  # which date a phrase means does not matter here, only that there is one
    timed = {("m", row.id) for row in (rows or MessageRows(conn)).of(ids) if find_time_phrases(row.text, ref)}
    return _scaled(fused, timed, 1.0 + weight)


def _scaled(
    fused: list[tuple[Key, float, dict[str, int]]], keys: set[Key], factor: float
) -> list[tuple[Key, float, dict[str, int]]]:
    """``fused`` with the scores of ``keys`` × ``factor``, best first again."""
    scored = [(key, score * factor if key in keys else score, ranks) for key, score, ranks in fused]
    return sorted(scored, key=lambda item: -item[1])


# A session's score is the sum of the fused scores of its best this-many messages: one strong
# match and two near it say more about a session than one alone.
SESSION_TOP = 3


def time_fusion(
    conn: Store, when: Range, fused: list[tuple[Key, float, dict[str, int]]], weight: float
) -> list[tuple[Key, float, dict[str, int]]]:
    """Messages said in the time a query names first: a question "on 25 May, 2022" or "in
    July" asks about what was said then, so their fused scores are multiplied by ``1 +
    weight``. Only a closed range: "before May" or "since 2020" names no time of its own
    (docs/decisions.md#session-weight)."""
    ids = [key[1] for key, _, _ in fused if key[0] == "m"]
    if when.start == EARLIEST or when.end == LATEST or not ids:
        return fused
    bounds = {"ids": json.dumps(ids), "start": when.start.isoformat(), "end": when.end.isoformat()}
    then = {("m", row[0]) for row in conn.run("messages_said_between", bounds)}
    return _scaled(fused, then, 1.0 + weight)


def context_fusion(
    conn: Store,
    query: str,
    fused: list[tuple[Key, float, dict[str, int]]],
    params: SearchParams,
    rows: MessageRows | None = None,
) -> list[tuple[Key, float, dict[str, int]]]:
    """Messages scored with their context: a conversation answers in turns, and sessions keep
    to a topic, so a message is more likely the one asked about when the turns next to it or
    its session match too, and when the question names its speaker.

    - two-stage: a message gains ``params.session_weight`` × its session's score;
    - speaker: when the query names exactly one of the namespace's speakers, their messages'
      scores are multiplied by ``1 + params.speaker_weight``; when it names none and speaks in
      the first person in a namespace whose owner has a name (``params.owner``), the owner's
      messages and the replies to them are, and other people's are divided by it
      (:func:`owners_side`).

    Messages without a session (``session`` is '') have no session score. Units keep their
    scores. Each step reads the scores before it.
    """
    score = {key: s for key, s, _ in fused}
    ranks = {key: r for key, _, r in fused}
    ids = [key[1] for key in score if key[0] == "m"]
    if not ids:
        return fused
    places = {row.id: (row.conversation, row.session, row.speaker) for row in (rows or MessageRows(conn)).of(ids)}
    if params.session_weight:
        sessions: dict[tuple[str, str], list[float]] = {}
        for mid, (conv, session, _speaker) in places.items():
            if session:  # a message without a session (session '') is in no session
                sessions.setdefault((conv, session), []).append(score[("m", mid)])
        total = {key: sum(sorted(values, reverse=True)[:SESSION_TOP]) for key, values in sessions.items()}
        for mid, (conv, session, _speaker) in places.items():
            score[("m", mid)] += params.session_weight * total.get((conv, session), 0.0)
    if params.speaker_weight:
        # The speakers among the candidates: the one a question names nearly always is.
        named = speaker_named(query, (speaker for _conv, _session, speaker in places.values()))
        if named is not None:
            for mid, (_conv, _session, speaker) in places.items():
                if speaker == named:
                    score[("m", mid)] *= 1.0 + params.speaker_weight
        elif params.owner and first_person(query, detect(query)):
            # "I" is the owner: their messages (and an assistant's replies to them) gain what a
            # named speaker's do, and other people's lose as much (their "my" is not the owner's).
            candidates = (rows or MessageRows(conn)).of(ids)
            side = set(owners_side(params.owner, candidates))
            for row in candidates if side else ():
                factor = 1.0 + params.speaker_weight
                score[("m", row.id)] *= factor if row.id in side else 1.0 / factor
    order = sorted(score, key=lambda key: -score[key])
    return [(key, score[key], ranks[key]) for key in order]


def owners_side(owner: Sequence[str], rows: Sequence[MessageRow]) -> list[int]:
    """Of ``rows`` (the candidates), the ids of the messages a first-person query prefers: the
    owner's (by name, or the user of an assistant chat) and an assistant's replies to them,
    when other people's messages are among them too (else none: nothing to prefer them to).

    "I" is the store's owner in every source: in a store holding their WhatsApp chats and their
    ChatGPT export, "how much is my rent?" is about the owner's "pago 750 al mes", not the
    sister's "my rent is 900" on the same topic."""
    mine = {name.lower() for name in owner}
    side = [r.id for r in rows if r.role in ("user", "assistant") or r.speaker.lower() in mine]
    others = len(rows) - len(side)
    return side if others and any(r.role == "user" or r.speaker.lower() in mine for r in rows) else []


def speaker_named(query: str, speakers: Iterable[str]) -> str | None:
    """The one of ``speakers`` that ``query`` names (a name written with a capital letter, as
    a whole word); ``None`` when it names none or several."""
    from .query_text import speaker_names

    found = {name for name in speaker_names(set(speakers)) if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", query)}
    return found.pop() if len(found) == 1 else None


def newest_first(hits: list[Hit], top: int, query: str | None = None) -> list[Hit]:
    """``hits`` with the dated ones among the first ``top`` that are on the query's subject put
    newest first, in the places they held (the others, and everything after ``top``, stay where
    they were). For a question about the present: where two statements on the subject disagree,
    the newer one holds, and a token budget filled in rank order keeps it. On the subject: the
    hit shares a content word with ``query``, or its vector similarity is within 10% of the
    best among them (a new job need not repeat the word "work"); without ``query``, every
    dated hit counts."""
    head = hits[:top]
    places = [i for i, h in enumerate(head) if h.time and (query is None or _on_subject(h, head, query))]
    dated = sorted((head[i] for i in places), key=lambda h: h.time or "", reverse=True)
    for i, hit in zip(places, dated):
        head[i] = hit
    return head + hits[top:]


def _on_subject(hit: Hit, head: Sequence[Hit], query: str) -> bool:
    from ..text.words import content_words, stem

    asked = {stem(w) for w in content_words(query)}
    if asked & {stem(w) for w in content_words(hit.text)}:
        return True
    best = max((h.channels.get("vector", {}).get("score", 0.0) for h in head), default=0.0)
    mine = hit.channels.get("vector", {}).get("score", 0.0)
    return best > 0 and mine >= 0.9 * best


def _reranked(reranker: Reranker, query: str, hits: list[Hit], top: int) -> list[Hit]:
    """The first ``top`` hits in the reranker's order, the rest after them as they were."""
    from .rerank import rerank_order

    head, tail = hits[:top], hits[top:]
    order = rerank_order(reranker, query, [(h.text, h.time) for h in head])
    out = []
    for rank, (index, score) in enumerate(order, 1):
        hit = head[index]
        hit.channels["rerank"] = {"rank": rank, "score": round(float(score), 4)}
        out.append(hit)
    return out + tail


def _unit_ids(hits: Sequence[Hit]) -> list[int]:
    return [int(h.id[2:]) for h in hits if h.id.startswith("u:")]


def _near_duplicates(conn: Store, hits: Sequence[Hit], threshold: float) -> dict[str, str]:
    """Unit hit id → the better-ranked hit it repeats (a synonymy link ≥ ``threshold``)."""
    ids = _unit_ids(hits)
    if len(ids) < 2:
        return {}
    rank = {h.id: i for i, h in enumerate(hits)}
    parent: dict[str, str] = {}
    for a, b, _w in conn.run("links_among", {"type": "synonymy", "min_weight": threshold, "ids": json.dumps(ids)}):
        first, second = sorted((f"u:{a}", f"u:{b}"), key=lambda hid: rank[hid])
        parent[second] = parent.get(first, first)
    return parent


# A correction of a correction of … is brought in at most this many steps deep.
_CHAIN = 4


def mark_supersession(conn: Store, hits: list[Hit], keep: Callable[[str], bool] | None = None) -> list[Hit]:
    """When something newer replaces a returned hit, both are returned, the newer first and
    each marked (``supersedes`` / ``superseded_by``); a newer one not yet among the hits is
    added right before the one it replaces (when ``keep`` accepts its id).

    What replaces what: a unit linked by ``supersedes`` (consolidation's changed facts); a
    message's correction (``correct m:ID``); and, for a gist or fact all of whose messages were
    corrected, the correction of its first message."""
    pairs = _supersession_pairs(conn, hits)
    if not pairs:
        return hits
    by_id = {h.id: h for h in hits}
    for _ in range(_CHAIN):
        missing = list(dict.fromkeys(new for new, old in pairs if new not in by_id and old in by_id))
        missing = [new for new in missing if keep is None or keep(new)]
        if not missing:
            break
        found = [h for h in hydrate(conn, [(new[0], int(new[2:])) for new in missing]).values()]
        for hit in found:
            by_id[hit.id] = hit
        pairs += [p for p in _supersession_pairs(conn, found) if p not in pairs]
    order = [h.id for h in hits]
    for new, old in pairs:
        if new not in by_id or old not in by_id:
            continue
        by_id[old].superseded_by = new
        if old not in by_id[new].supersedes:
            by_id[new].supersedes.append(old)
        if new in order:
            order.remove(new)
        if old in order:
            order.insert(order.index(old), new)
    return [by_id[i] for i in dict.fromkeys(order)]


def _supersession_pairs(conn: Store, hits: Sequence[Hit]) -> list[tuple[str, str]]:
    """``(newer id, older id)`` for what replaces each of ``hits`` (and, for units, what they replace)."""
    pairs = []
    ids = _unit_ids(hits)
    if ids:
        pairs += [(f"u:{new}", f"u:{old}") for new, old in conn.run("supersession_of", {"ids": json.dumps(ids)})]
    pairs += [(h.superseded_by, h.id) for h in hits if h.kind == "message" and h.superseded_by]
    narrow = [h for h in hits if h.kind in ("gist", "fact") and h.sources and not h.superseded_by]
    if narrow:
        corrected = _corrections(conn, [s.message_id for h in narrow for s in h.sources])
        for hit in narrow:
            if all(s.message_id in corrected for s in hit.sources):
                pairs.append((f"m:{corrected[hit.sources[0].message_id]}", hit.id))
    return pairs


def _query_range(conn: Store, ns: str, query: str, params: SearchParams) -> Range | None:
    """The time range the query names, relative to ``params.now`` or the latest message."""
    from .channels import latest_time
    from .query_time import parse_query_time

    return parse_query_time(query, params.now or latest_time(conn, ns))


def _promoted(
    conn: Store, ns: str, query: str, query_vec: np.ndarray, when: Range | None, hits: list[Hit]
) -> list[Hit]:
    from . import channels

    members = channels.episode_members(conn, ns, query, query_vec, when)
    if not members:
        return hits

    def inside(hit: Hit) -> bool:  # a hit is in an episode when it or anything folded into it is
        return any((i[0], int(i[2:])) in members for i in [hit.id, *hit.merged])

    return [h for h in hits if inside(h)] + [h for h in hits if not inside(h)]


def fit_budget(hits: Sequence[Hit], max_tokens: int, count: Callable[[str], int]) -> list[Hit]:
    """Whole hits in rank order while they fit ``max_tokens``; one that does not fit is
    skipped and smaller ones after it may still fill the budget."""
    out, used = [], 0
    for hit in hits:
        tokens = count(hit.text)
        if used + tokens <= max_tokens:
            out.append(hit)
            used += tokens
    return out


# A gist or fact resting on at most this many messages says what they say: it and they are one hit.
_FOLD_SOURCES = 2


def collapse(hits: list[Hit], duplicates: dict[str, str] | None = None) -> list[Hit]:
    """One hit per piece of information, at the position of its best-ranked form:

    - gists and facts resting on exactly the same messages (an event's two forms), and units
      in ``duplicates`` (id → the better-ranked id it repeats), fold into the first;
    - a message and a gist or fact resting on it (and at most one other message) are one
      hit, shown as the unit (it carries the resolved date) with the message as a source.

    A folded hit lists what it absorbed in ``merged`` and gains their sources.
    """
    duplicates = duplicates or {}
    same_sources: dict[frozenset[int], Hit] = {}
    unit_of_message: dict[int, Hit] = {}
    kept: dict[str, Hit] = {}
    out: list[Hit] = []

    def absorb(target: Hit, hit: Hit) -> None:
        target.merged.append(hit.id)
        known = {s.message_id for s in target.sources}
        target.sources += [s for s in hit.sources if s.message_id not in known]
        kept[hit.id] = target

    def claim(unit: Hit, sources: Sequence[HitSource]) -> list[Hit]:
        """Map ``sources`` to ``unit``; the message hits already placed for them, in order."""
        ids = {s.message_id for s in sources}
        for message_id in ids:
            unit_of_message[message_id] = unit
        return [h for h in out if h.kind == "message" and h.sources and h.sources[0].message_id in ids]

    for hit in hits:
        is_unit = hit.kind in ("gist", "fact") and bool(hit.sources)
        narrow = is_unit and len(hit.sources) <= _FOLD_SOURCES
        target = kept.get(duplicates.get(hit.id, ""))
        if target is None and is_unit:
            target = same_sources.get(frozenset(s.message_id for s in hit.sources))
        if target is None and hit.kind == "message" and hit.sources:
            target = unit_of_message.get(hit.sources[0].message_id)
        if target is not None:
            absorb(target, hit)
            for message in claim(target, hit.sources) if narrow else []:
                out = [h for h in out if h is not message]
                absorb(target, message)
            continue
        kept[hit.id] = hit
        if is_unit:
            same_sources[frozenset(s.message_id for s in hit.sources)] = hit
        earlier = claim(hit, hit.sources) if narrow else []
        if earlier:  # the unit takes the place of its best-ranked message
            position = next(i for i, h in enumerate(out) if h is earlier[0])
            out[position] = hit
            for message in earlier:
                out = [h for h in out if h is not message]
                absorb(hit, message)
            continue
        out.append(hit)
    return out
