"""Stage 6, consolidate: lasting knowledge about people, learned episode by episode.

Nemori's predict–calibrate: for each extracted episode, in time order, the knowledge memory
already holds about the episode (nearest ``knowledge`` units to its title and narrative) is
shown to the model, which predicts the episode and keeps only what the raw messages add or
change (``full``: a predict call and a calibrate call; ``fast``: one call doing both). Each
statement becomes a ``knowledge`` unit about one person with an aspect tag (MRAgent's person →
aspect → statement, stored as a ``subject`` mention tagged with the aspect), the episode's
time and its source message. Rules around the model:

- the subject must be a person of the episode (a speaker, or someone its extraction
  named); others are dropped, so a garbled name never becomes a new entity;
- a statement that says again what a held statement about the same person says (cosine ≥
  :data:`SAME_STATEMENT`) adds its message to that unit's sources instead of a copy;
- a statement the model says contradicts a held one (``replaces``) gets a ``supersedes`` link
  to it, valid from the episode's time, only when both are about the same person; both stay.
"""

from __future__ import annotations

import difflib
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..config import CONSOLIDATE_MODES
from ..models.embedding import to_blob
from ..models.protocols import LLM, Judge, Judged
from ..models.structured import Structured, complete_structured
from ..prompts import consolidate as prompt
from ..prompts import verify as verify_prompt
from ..retrieval import vector_index
from ..store.engine import Store, now_iso
from ..store.rows import all_rows, one_row, one_value
from ..text.words import content_words, stem
from . import resolve
from .extract import (
    EpisodeMessage,
    content_hash,
    date_header,
    doubtful,
    match_sources,
    own_speaker,
)

MODES = CONSOLIDATE_MODES
HELD = 8  # knowledge items shown to the model
SAME_STATEMENT = 0.9  # cosine between statements that say the same thing (shipped embedder)
SAME_WORDS = 0.9  # word-sequence similarity of a "replacement" that only repeats

Log = Callable[..., None]


@dataclass
class Known:
    """A held knowledge unit, as shown to the model (K1…)."""

    unit_id: int
    text: str
    aspect: str
    entity_id: int | None


@dataclass
class Statement:
    subject: str
    aspect: str
    text: str
    source: int  # index of the episode message
    replaces: int  # 1-based K number, 0 for none


@dataclass
class Consolidated:
    """What consolidating one episode did."""

    added: list[int] = field(default_factory=list)  # new knowledge unit ids
    reinforced: list[int] = field(default_factory=list)  # held units that gained a source
    superseded: list[tuple[int, int]] = field(default_factory=list)  # (new, old)
    dropped: list[str] = field(default_factory=list)  # statements refused, with why


@dataclass
class Episode:
    id: int
    conversation: str
    title: str
    narrative: str
    time: str | None
    messages: list[EpisodeMessage]
    people: dict[str, int]  # normalised name or alias → entity id


def load_episode(conn: Store, episode_id: int) -> Episode:
    eid, conversation, title, text, when = one_row(conn.run("consolidate_episode", {"id": episode_id}))
    rows = all_rows(conn.run("episode_messages", {"episode_id": episode_id}))
    msgs = [EpisodeMessage(mid, sp, tx, at, json.loads(a) if a else None) for mid, sp, tx, at, a, _e in rows]
    people = {alias: entity for alias, entity in conn.run("episode_people", {"id": episode_id})}
    return Episode(eid, conversation or "", title or "", text or "", when, msgs, people)


def held(conn: Store, ns: str, query_vec: np.ndarray, limit: int = HELD) -> list[Known]:
    """The current (not superseded) knowledge nearest to the episode, nearest first."""
    near = [uid for uid, _d in vector_index.knn(conn, "units", ns, query_vec, limit * 3, kind="knowledge")]
    if not near:
        return []
    rows = {
        uid: (text, aspect, entity)
        for uid, text, aspect, entity in conn.run("knowledge_current", {"ids": json.dumps(near)})
    }
    return [Known(uid, *rows[uid]) for uid in near if uid in rows][:limit]


def think(
    llm: LLM, mode: str, known: Sequence[Known], episode: Episode
) -> tuple[dict[str, Any] | None, list[tuple[str, str, Structured]]]:
    """The model's statements for ``episode`` (None when its reply stayed invalid), and the
    calls made as (stage, prompt version, result) for the call log."""
    pairs = [(k.text, k.aspect) for k in known]
    lines = [m.line for m in episode.messages]
    day = date_header(episode.messages)
    if mode == "fast":
        result = complete_structured(
            llm, prompt.fast(pairs, episode.title, lines, day), prompt.FAST_SCHEMA, prompt.STATEMENTS_MAX_TOKENS
        )
        return (result.data if result.ok else None), [("consolidate", prompt.FAST_VERSION, result)]
    predicted = complete_structured(
        llm, prompt.predict(episode.title, pairs), prompt.PREDICT_SCHEMA, prompt.PREDICT_MAX_TOKENS
    )
    calls = [("predict", prompt.PREDICT_VERSION, predicted)]
    guess = str(predicted.data["prediction"]) if predicted.ok and predicted.data else ""
    result = complete_structured(
        llm, prompt.calibrate(pairs, guess, lines, day), prompt.CALIBRATE_SCHEMA, prompt.STATEMENTS_MAX_TOKENS
    )
    calls.append(("calibrate", prompt.CALIBRATE_VERSION, result))
    return (result.data if result.ok else None), calls


def interpret(data: dict[str, Any], episode: Episode, known_count: int) -> list[Statement]:
    out = []
    for item in data.get("statements", []):
        text = " ".join(str(item["text"]).split())
        source = int(item["source"]) if 0 <= int(item["source"]) < len(episode.messages) else -1
        replaces = int(item["replaces"]) if 1 <= int(item["replaces"]) <= known_count else 0
        out.append(Statement(str(item["subject"]).strip(), str(item["aspect"]), text, source, replaces))
    return out


def person_of(episode: Episode, name: str) -> int | None:
    """The entity of the episode's people that ``name`` names, if any."""
    norm = resolve.normalise(name, None) or name.strip().lower()
    if norm in episode.people:
        return episode.people[norm]
    first = norm.split(" ")[0] if norm else ""
    matches = {e for alias, e in episode.people.items() if alias.split(" ")[0] == first}
    return matches.pop() if len(matches) == 1 else None


# Knowledge holds over time; a statement pinned to a moment ("yesterday", "last Friday") is an
# event, which extraction already keeps as a gist.
_EVENT_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|last|next|this (?:morning|week|weekend|month|year)|"
    r"ago|recently|just now)\b",
    re.I,
)


def same_words(a: str, b: str) -> bool:
    """Whether two statements say the same words in the same order (ignoring case,
    punctuation and time words): a repeat. Order matters: "prefers tea to coffee" and
    "prefers coffee to tea" embed alike but say opposite things."""

    def words(text: str) -> list[str]:
        return [w for w in re.findall(r"\w+", _EVENT_TIME.sub(" ", text.lower()))]

    return difflib.SequenceMatcher(None, words(a), words(b)).ratio() >= SAME_WORDS


def grounded_in(text: str, messages: Sequence[EpisodeMessage]) -> bool:
    """Whether some message shares a content word stem ("paints"/"painting") with ``text``,
    beyond the speakers' names: a statement with none is the model's invention."""
    names = {stem(w) for m in messages for w in content_words(m.speaker)}
    words = {stem(w) for w in content_words(text)} - names
    return any(words & {stem(w) for w in content_words(m.text)} for m in messages)


def _speaker_named(episode: Episode, name: str) -> str | None:
    first = (resolve.normalise(name) or name.lower()).split(" ")[0] if name.strip() else ""
    speakers = {m.speaker for m in episode.messages if m.speaker}
    named = [s for s in speakers if first and resolve.normalise(s).split(" ")[0] == first]
    return named[0] if len(named) == 1 else None


def store(
    conn: Store,
    ns: str,
    episode: Episode,
    statements: Sequence[Statement],
    known: Sequence[Known],
    embedder: Any,
    model_id: str,
    version: str,
    mode: str,
) -> Consolidated:
    """Write the statements (caller's transaction) and record the episode as consolidated."""
    out = Consolidated()
    now = now_iso()
    when = episode.time
    kept: list[tuple[Statement, int]] = []
    speakers = frozenset(m.speaker.lower() for m in episode.messages if m.speaker)
    for st in statements:
        entity = person_of(episode, st.subject)
        speaker = _speaker_named(episode, st.subject)
        if entity is None and speaker is not None:  # a speaker the extraction did not list
            entity, _created = resolve.resolve(conn, ns, speaker, "person", speaker=None, context_ids=[])
            episode.people[resolve.normalise(speaker)] = entity
        if entity is None:
            out.dropped.append(f"{st.text!r}: {st.subject!r} is not a person of this episode")
            continue
        kept.append((st, entity))
    # Knowledge is embedded without a date (it holds over time), so a repeat embeds alike.
    vectors = embedder.embed([st.text for st, _e in kept]) if kept else []
    for (st, entity), vec in zip(kept, vectors):
        # As in extraction: a small model copies source numbers from the example, so the
        # cited message counts only when it is among those sharing the statement's words.
        if not grounded_in(st.text, episode.messages):
            out.dropped.append(f"{st.text!r}: no message of the episode says it")
            continue
        cited = [st.source] if st.source >= 0 else []
        said = [episode.messages[i] for i in match_sources(st.text, episode.messages, cited)]
        sources = [m.id for m in said]
        # The extraction's rules for facts hold for knowledge too: a statement copied in the
        # first person, or about one speaker from the other's messages, is dropped.
        why = (
            doubtful(st.text, said, speakers)
            or (None if own_speaker(st.subject, said, speakers) else "from another speaker's messages")
            or ("an event, not lasting knowledge" if _EVENT_TIME.search(st.text) else None)
        )
        if why:
            out.dropped.append(f"{st.text!r}: {why}")
            continue
        replaced = known[st.replaces - 1] if st.replaces else None
        if replaced is not None and replaced.entity_id != entity:
            out.dropped.append(f"{st.text!r} cannot replace {replaced.text!r}: another person")
            replaced = None
        if replaced is not None and same_words(st.text, replaced.text):
            # "Replacing" a statement with itself is a repeat: the small model does it often.
            for mid in sources:
                conn.run("unit_source_insert", {"unit_id": replaced.unit_id, "message_id": mid})
            out.reinforced.append(replaced.unit_id)
            continue
        # A change can embed close to what it replaces ("prefers tea to coffee" / "coffee to
        # tea"), so only a statement that replaces nothing can be a repeat.
        same = _same_statement(conn, ns, entity, vec) if replaced is None else None
        if same is not None:
            for mid in sources:
                conn.run("unit_source_insert", {"unit_id": same, "message_id": mid})
            out.reinforced.append(same)
            continue
        unit_id = one_value(
            conn.run(
                "knowledge_insert",
                {
                    "ns": ns,
                    "conversation": episode.conversation,
                    "episode_id": episode.id,
                    "text": st.text,
                    "subject": st.subject,
                    "aspect": st.aspect,
                    "occurred_start": when[:10] if when else None,
                    "mentioned_at": when,
                    "prompt_version": version,
                    "model_id": model_id,
                    "content_hash": content_hash("knowledge", st.text, (when or "")[:10]),
                    "created_at": now,
                },
            )
        )
        for mid in sources:
            conn.run("unit_source_insert", {"unit_id": unit_id, "message_id": mid})
        conn.run("mention_insert", {"unit_id": unit_id, "entity_id": entity, "role": "subject", "tag": st.aspect})
        conn.run("vec_unit_insert", {"id": unit_id, "ns": ns, "kind": "knowledge", "embedding": to_blob(vec)})
        out.added.append(unit_id)
        if replaced is not None:
            conn.run(
                "link_insert",
                {
                    "src_id": unit_id,
                    "dst_id": replaced.unit_id,
                    "type": "supersedes",
                    "weight": 1.0,
                    "valid_at": when,
                    "created_at": now,
                },
            )
            out.superseded.append((unit_id, replaced.unit_id))
    conn.run(
        "consolidation_insert",
        {
            "episode_id": episode.id,
            "mode": mode,
            "prompt_version": version,
            "added": len(out.added),
            "reinforced": len(out.reinforced),
            "superseded": len(out.superseded),
            "created_at": now,
        },
    )
    return out


def _same_statement(conn: Store, ns: str, entity: int, vec: np.ndarray) -> int | None:
    """A held statement about ``entity`` that says what ``vec`` says, if any."""
    rows = all_rows(conn.run("knowledge_vectors_of_entity", {"ns": ns, "entity_id": entity}))
    if not rows:
        return None
    ids = [r[0] for r in rows]
    mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    sims = vector_index.cosine(mat, vec)
    best = int(np.argmax(sims))
    return ids[best] if sims[best] >= SAME_STATEMENT else None


@dataclass
class Report:
    """What a consolidation pass did, for the ingest summary."""

    episodes: int = 0
    failed: int = 0
    added: int = 0
    reinforced: int = 0
    superseded: int = 0
    dropped: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def check(
    judge: Any, statements: Sequence[Statement], episode: Episode, threshold: float
) -> tuple[list[Statement], list[str], Structured]:
    """The statements the model confirms against the messages they rest on (P(yes) of
    extraction's fact check >= ``threshold``), the texts it does not, and the call record."""
    prompts = []
    for st in statements:
        said = match_sources(st.text, episode.messages, [st.source] if st.source >= 0 else [])
        prompts.append(verify_prompt.render([episode.messages[i].line for i in said], st.text))
    started = time.perf_counter()
    judged = judge.judge(prompts) if prompts else Judged(p_yes=[])
    p_yes = [round(float(p), 3) for p in judged.p_yes]
    kept = [st for st, p in zip(statements, p_yes) if p >= threshold]
    dropped = [st.text for st, p in zip(statements, p_yes) if p < threshold]
    return (
        kept,
        dropped,
        Structured(
            data={"p_yes": p_yes, "dropped": dropped},
            raw=[json.dumps(p_yes)],
            calls=len(prompts),
            seconds=time.perf_counter() - started,
            prompt_tokens=judged.prompt_tokens,
        ),
    )


def consolidate_episode(
    conn: Store,
    llm: LLM,
    embedder: Any,
    ns: str,
    episode_id: int,
    mode: str,
    log: Log,
    locked: Callable[[], Any],
    verify: float = 0.0,
) -> Consolidated | None:
    """Consolidate one extracted episode (one transaction); None when the model's reply stayed
    invalid (the episode is recorded, so it is not retried on every build). ``verify`` > 0:
    statements the model's yes/no check scores below it are dropped (when it can judge)."""
    episode = load_episode(conn, episode_id)
    # It looks for what is held about the episode: a search, so embedded as one.
    query_vec = embedder.embed([f"{episode.title}. {episode.narrative}"], role="query")[0]
    known = held(conn, ns, query_vec)
    data, calls = think(llm, mode, known, episode)
    statements = interpret(data, episode, len(known)) if data is not None else []
    unconfirmed: list[str] = []
    if statements and verify > 0 and isinstance(llm, Judge):
        statements, unconfirmed, record = check(llm, statements, episode, verify)
        calls.append(("verify-knowledge", verify_prompt.VERSION, record))
    with locked(), conn:
        for stage, version, result in calls:
            log(stage=stage, prompt_version=version, result=result)
        version = next(v for stage, v, _r in reversed(calls) if stage != "verify-knowledge")
        if data is None:
            conn.run(
                "consolidation_insert",
                {
                    "episode_id": episode.id,
                    "mode": mode,
                    "prompt_version": version,
                    "added": 0,
                    "reinforced": 0,
                    "superseded": 0,
                    "created_at": now_iso(),
                },
            )
            return None
        out = store(conn, ns, episode, statements, known, embedder, getattr(llm, "model_id", "unknown"), version, mode)
        out.dropped.extend(f"{text!r}: the messages do not say it (fact check)" for text in unconfirmed)
        return out
