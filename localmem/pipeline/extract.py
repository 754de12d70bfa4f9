"""Stage 3, extract: one schema-constrained call per episode → narrative, gists, facts, entities.

Times are checked by rules: the model writes the time phrase it saw (``time_text``)
and its resolved ``date``; when the rule-based resolver understands the phrase, its
answer wins over the model's (small models are often a day or a week off).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from typing import AbstractSet, Any, Sequence

from ..models.embedding import message_text, to_blob, unit_text
from ..models.protocols import LLM, Judge, Judged
from ..models.structured import Structured, complete_structured
from ..prompts import extract as prompt
from ..prompts import verify as verify_prompt
from ..store.engine import Store, now_iso
from ..store.rows import one_value
from ..text.times import Span, find_time_phrases, resolve_phrase
from ..text.words import content_words, stem
from . import resolve


@dataclass(frozen=True)
class EpisodeMessage:
    id: int
    speaker: str
    text: str
    sent_at: str | None
    attachments: list[dict[str, Any]] | None = None

    @property
    def line(self) -> str:
        return message_text(self.speaker, self.text, self.attachments)


@dataclass
class Event:
    """One extracted event: stored as a gist (its text) and a fact (its triple)."""

    text: str
    subject: str
    predicate: str
    object: str
    span: Span | None
    mentioned_at: str | None
    source_ids: list[int]
    time_checked: str  # "rule", "rule-found" (phrase found by the rules), "unresolved" or "none"
    said: str = ""  # the model's sentence before the rules appended dates (what verify() checks)


@dataclass
class EntityMention:
    name: str
    type: str
    tag: str
    role: str  # "main" when the entity speaks in the episode, else "supporting"


@dataclass
class Extraction:
    title: str
    narrative: str
    events: list[Event] = field(default_factory=list)
    entities: list[EntityMention] = field(default_factory=list)


def _ref_date(messages: Sequence[EpisodeMessage], indexes: Sequence[int]) -> dt.date | None:
    for i in list(indexes) + list(range(len(messages))):
        sent_at = messages[i].sent_at if 0 <= i < len(messages) else None
        if sent_at:
            return dt.date.fromisoformat(sent_at[:10])
    return None


def match_sources(text: str, messages: Sequence[EpisodeMessage], cited: Sequence[int]) -> list[int]:
    """The messages an event rests on: those sharing the most content words with its text.

    Small models copy source numbers from the prompt's example, so the cited indexes
    are kept only when they are among the best-matching messages.
    """
    words = content_words(text)
    scores = [len(words & content_words(f"{m.speaker} {m.text}")) for m in messages]
    best = max(scores, default=0)
    if best == 0:
        return list(cited) or list(range(len(messages)))
    good = {i for i, score in enumerate(scores) if score >= max(1, 0.7 * best)}
    kept = [i for i in cited if i in good]
    if kept:
        return sorted(kept)
    return sorted(sorted(good, key=lambda i: -scores[i])[:2])


def annotate(text: str, time_text: str, span: Span | None) -> str:
    """Keep relative times both ways: "yesterday" → "yesterday (7 May 2023)"."""
    if span is None:
        return text
    label = format_span(span)
    if label in text:
        return text
    found = re.search(rf"\b{re.escape(time_text)}\w*", text, re.I) if time_text else None
    if found:  # after the whole word: "last Tues" said, "last Tuesday" written
        return f"{text[: found.end()]} ({label}){text[found.end() :]}"
    return f"{text.rstrip('.')} ({label})."


def format_span(span: Span) -> str:
    if span.precision == "year":
        return str(span.start.year)
    if span.precision == "month":
        return span.start.strftime("%B %Y")
    if span.start == span.end:
        return f"{span.start.day} {span.start.strftime('%B %Y')}"
    return f"{span.start.day} {span.start.strftime('%B')} to {span.end.day} {span.end.strftime('%B %Y')}"


def date_header(messages: Sequence[EpisodeMessage]) -> str:
    times = [m.sent_at for m in messages if m.sent_at]
    if not times:
        return "unknown"
    first = dt.datetime.fromisoformat(times[0])
    return f"{first.day} {first.strftime('%B %Y')}, {first.strftime('%A')}"


def call(llm: LLM, messages: Sequence[EpisodeMessage]) -> Structured:
    lines = [m.line for m in messages]
    return complete_structured(llm, prompt.render(lines, date_header(messages)), prompt.SCHEMA, prompt.MAX_TOKENS)


# Conversational acts, not facts about anyone's life: small models list them eagerly.
_CHATTER = re.compile(
    r"^(?:thank|ask|greet|compliment|congratulat|wish|agree|repl|respond|apologi|"
    r"prais|admir|appreciat|said (?:hi|hello|goodbye|bye)|chatted|hope)",
    re.I,
)
_SELF = {"i", "me", "my", "myself"}
_FIRST_PERSON = re.compile(r"\b(?:I|me|my|myself|I'm|I've|[Ww]e|[Oo]ur|us|[Ww]e've|[Ww]e're)\b")
_QUESTION = re.compile(r"[^.!?]*\?")
# Reactions that carry no fact: "Wow, looks awesome!" + a question is still only a question.
_FILLER = frozenset(
    """wow awesome great cool amazing nice looks look sounds sound really thanks thank hey
hi hello glad love lovely super totally yeah yes yay aww omg good fantastic wonderful incredible
beautiful cute stunning sweet happy proud congrats congratulations true agree definitely fun huge
big""".split()
)


def doubtful(text: str, sources: Sequence[EpisodeMessage], names: frozenset[str] = frozenset()) -> str | None:
    """Why a fact is likely wrong, or ``None``. Precision over recall: a missed fact can
    still be found in the raw messages, a wrong one misleads every later answer."""
    if not text.rstrip().endswith((".", "!", ")")):
        return "cut-off"  # the model closed the string early (a stray quote) or ran out
    if _FIRST_PERSON.search(text) or "!" in text:
        return "copied"  # the message copied, not restated: "I" is ambiguous out of context
    said = "".join(m.text for m in sources)
    if any(c.isalpha() and ord(c) > 0x24F and c not in said for c in text):
        return "garbled"  # a letter of another script the messages do not have ("eyes亮")
    statements = [_QUESTION.sub("", m.text) for m in sources]
    if sources and all(len(content_words(s) - _FILLER - names) < 2 for s in statements):
        return "question"  # a question asserts nothing about its asker
    asked = content_words(" ".join(q.group(0) for m in sources for q in _QUESTION.finditer(m.text)))
    stated = content_words(" ".join(statements))
    own = content_words(text) - names
    if own & asked and not own & stated - _FILLER:
        return "question"  # "Do you like painting animals?" turned into "... likes painting animals"
    return None


# Reporting verbs: "Caroline said talk to you soon!" restates the chat, not a fact about anyone
# (such items were nearly all wrong or empty, docs/decisions.md#reporting-verbs; the raw message
# is still searchable).
_REPORTING = re.compile(
    r"^(?:said|says|say|told|tells|talked|talks|expressed|expresses|shared|shares|"
    r"mentioned|mentions|discussed|discusses|stated|explained|described)\b",
    re.I,
)


def is_chatter(predicate: str, text: str) -> bool:
    """True for "thanked", "asked", "said"... (the event is the talk itself)."""
    predicate = predicate.strip()
    if _CHATTER.match(predicate) or _REPORTING.match(predicate):
        return True
    words = text.split()
    return len(words) > 1 and bool(_CHATTER.match(words[1]) or _REPORTING.match(words[1]))


def own_speaker(subject: str, sources: Sequence[EpisodeMessage], speakers: AbstractSet[str]) -> bool:
    """A fact about a speaker must come from that speaker's own messages.

    Small models attribute a reply's content to the wrong side of the chat ("Caroline said
    it was rewarding" from Melanie's message); people rarely state facts about the person
    they are talking to, so those are dropped.
    """
    lowered = subject.lower()
    named = {sp for sp in speakers if re.search(rf"\b{re.escape(sp)}\b", lowered)}
    if not named or not sources:
        return True
    return named <= {m.speaker.lower() for m in sources}


def event_time(
    time_text: str, idx: Sequence[int], messages: Sequence[EpisodeMessage], ref: dt.date | None
) -> tuple[str, Span | None, str]:
    """The event's time phrase, span and how it was found.

    The model's phrase counts only when the cited messages contain it (small models
    copy the example's times); otherwise, when the fact rests on one message and that
    message holds exactly one phrase the rules understand, that one is used (with two
    messages, the phrase may belong to the other one's story).
    """
    said = " ".join(messages[i].text for i in idx)
    if ref is None:
        return "", None, "none"
    if time_text and time_text.lower() in said.lower():
        span = resolve_phrase(time_text, ref)
        if span is not None:
            return time_text, span, "rule"
        found = [
            (p, sp)
            for p, sp in find_time_phrases(said, ref)
            if time_text.lower() in p.lower() or p.lower() in time_text.lower()
        ]
        if found:
            return found[0][0], found[0][1], "rule"
        return time_text, None, "unresolved"
    found = find_time_phrases(said, ref) if len(idx) == 1 else []
    if len(found) == 1:
        return found[0][0], found[0][1], "rule-found"
    return "", None, "none"


def interpret(data: dict[str, Any], messages: Sequence[EpisodeMessage]) -> Extraction:
    """Turn the model's validated JSON into events and entity mentions with checked times."""
    speakers = {m.speaker.lower() for m in messages}
    out = Extraction(title=data["title"].strip(), narrative=data["narrative"].strip())
    seen_texts: set[str] = set()
    names = frozenset(w for m in messages for w in content_words(m.speaker))
    for ev in data["facts"]:
        text, predicate = ev["text"].strip(), ev["predicate"].strip()
        if not text or is_chatter(predicate, text) or text.lower() in seen_texts:
            continue
        seen_texts.add(text.lower())
        cited = [ev["source"]] if 0 <= ev["source"] < len(messages) else []
        idx = match_sources(text, messages, cited)
        if doubtful(text, [messages[i] for i in idx], names):
            continue
        if not own_speaker(ev["subject"], [messages[i] for i in idx], speakers):
            continue
        ref = _ref_date(messages, idx)
        time_text, span, how = event_time(ev["time"].strip(), idx, messages, ref)
        subject = ev["subject"].strip()
        if subject.lower() in _SELF and idx:
            subject = messages[idx[0]].speaker
        mentioned = next((messages[i].sent_at for i in idx if messages[i].sent_at), None)
        out.events.append(
            Event(
                annotate(text, time_text, span),
                subject,
                predicate,
                ev["object"].strip(),
                span,
                mentioned,
                [messages[i].id for i in idx],
                how,
                text,
            )
        )
    seen: set[str] = set()
    for ent in data["entities"]:
        name = ent["name"].strip()
        if not name or name.lower() in seen or not grounded(name, messages):
            continue
        seen.add(name.lower())
        role = "main" if name.lower() in speakers else "supporting"
        out.entities.append(EntityMention(name, ent["type"], ent["tag"].strip()[:24], role))
    for speaker in sorted(speakers - seen):  # speakers are always main characters
        name = next(m.speaker for m in messages if m.speaker.lower() == speaker)
        out.entities.append(EntityMention(name, "person", "", "main"))
    return out


def verify(judge: Judge, ex: Extraction, messages: Sequence[EpisodeMessage], threshold: float) -> Structured:
    """Drop from ``ex`` the events the model does not confirm against their own messages
    (P(yes) < ``threshold``). Returns the call record for the log: ``data["p_yes"]`` per
    event in extraction order, ``data["dropped"]`` the texts removed."""
    by_id = {m.id: m for m in messages}
    order = sorted(range(len(ex.events)), key=lambda i: ex.events[i].source_ids)  # shared prefixes
    prompts = [
        verify_prompt.render(
            [by_id[s].line for s in ex.events[i].source_ids if s in by_id], ex.events[i].said or ex.events[i].text
        )
        for i in order
    ]
    started = time.perf_counter()
    judged = judge.judge(prompts) if prompts else Judged(p_yes=[])
    p_yes = [0.0] * len(ex.events)
    for i, score in zip(order, judged.p_yes):
        p_yes[i] = round(float(score), 3)
    dropped = [ev.text for ev, p in zip(ex.events, p_yes) if p < threshold]
    ex.events = [ev for ev, p in zip(ex.events, p_yes) if p >= threshold]
    return Structured(
        data={"p_yes": p_yes, "dropped": dropped},
        raw=[json.dumps(p_yes)],
        calls=len(prompts),
        seconds=time.perf_counter() - started,
        prompt_tokens=judged.prompt_tokens,
    )


def grounded(name: str, messages: Sequence[EpisodeMessage]) -> bool:
    """Whether the messages support an entity name: its words occur in them, and "X's Y"
    (X a speaker) needs X to have said "my Y" or someone to have said "X's Y".

    Small models invent relatives by analogy ("Caroline's husband" because Melanie
    mentioned hers).
    """
    lowered = name.lower()
    said = " ".join(m.line.lower() for m in messages)
    said_stems = {stem(w) for w in re.findall(r"\w+", said)}
    if not all(stem(w) in said_stems for w in content_words(lowered)):
        return False
    owner, sep, thing = lowered.partition("'s ")
    speakers = {m.speaker.lower() for m in messages}
    if not sep or owner not in speakers:
        return True
    head = stem(thing.split()[-1]) if thing.split() else ""
    own = [stem(w) for m in messages if m.speaker.lower() == owner for w in re.findall(r"\w+", m.text.lower())]
    said_mine = any(w in ("my", "our") and head in own[i + 1 : i + 3] for i, w in enumerate(own))
    return said_mine or f"{owner}'s {thing}" in said


def content_hash(*parts: str) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()[:32]


@dataclass
class Stored:
    """What storing one episode's extraction produced."""

    units: dict[str, int] = field(default_factory=dict)
    entities_new: int = 0
    links: dict[str, int] = field(default_factory=dict)
    rows: list[tuple[int, str, str | None, Any]] = field(default_factory=list)


def store(
    conn: Store,
    ns: str,
    episode_id: int,
    conversation: str,
    messages: Sequence[EpisodeMessage],
    ex: Extraction,
    embedder: Any,
    model_id: str,
    decided: dict[str, int | None] | None = None,
) -> Stored:
    """Write the episode's narrative, gists, facts, entities and mentions (caller's transaction)."""
    out = Stored()
    conn.run("derived_units_delete", {"episode_id": episode_id})
    conn.run(
        "episode_update",
        {
            "id": episode_id,
            "title": ex.title,
            "text": ex.narrative,
            "stage": "done",
            "prompt_version": prompt.VERSION,
            "model_id": model_id,
        },
    )
    now = now_iso()
    pending: list[tuple[int, str, str, str | None, list[int]]] = []  # id, kind, text, when, sources
    for ev in ex.events:
        start = ev.span.start.isoformat() if ev.span else None
        end = ev.span.end.isoformat() if ev.span else None
        precision = ev.span.precision if ev.span else "unknown"
        fact_text = f"{ev.subject} {ev.predicate} {ev.object}".strip()
        for kind, text in (("gist", ev.text), ("fact", fact_text)):
            unit_id = one_value(
                conn.run(
                    "unit_insert",
                    {
                        "ns": ns,
                        "kind": kind,
                        "conversation": conversation,
                        "episode_id": episode_id,
                        "text": text,
                        "subject": ev.subject if kind == "fact" else None,
                        "predicate": ev.predicate if kind == "fact" else None,
                        "object": ev.object if kind == "fact" else None,
                        "occurred_start": start,
                        "occurred_end": end,
                        "time_precision": precision,
                        "mentioned_at": ev.mentioned_at,
                        "prompt_version": prompt.VERSION,
                        "model_id": model_id,
                        "content_hash": content_hash(kind, text, start or ""),
                        "data": json.dumps({"time_checked": ev.time_checked}),
                        "created_at": now,
                    },
                )
            )
            out.units[kind] = out.units.get(kind, 0) + 1
            for mid in ev.source_ids:
                conn.run("unit_source_insert", {"unit_id": unit_id, "message_id": mid})
            pending.append((unit_id, kind, text, start, ev.source_ids))
    context: list[int] = []
    entity_ids: dict[str, int] = {}
    for ent in ex.entities:
        entity_id, created = resolve.resolve(
            conn, ns, ent.name, ent.type, speaker=_speaker_for(ent, messages), context_ids=context, decided=decided
        )
        out.entities_new += created
        context.append(entity_id)
        entity_ids[ent.name.lower()] = entity_id
        conn.run(
            "mention_insert",
            {"unit_id": episode_id, "entity_id": entity_id, "role": ent.role, "tag": ent.tag or None},
        )
    for unit_id, kind, text, _when, _src in pending:
        lowered = text.lower()
        for name, entity_id in entity_ids.items():
            if name and name in lowered:
                conn.run(
                    "mention_insert", {"unit_id": unit_id, "entity_id": entity_id, "role": "mentioned", "tag": None}
                )
    texts = [unit_text(text, when) for _, _, text, when, _ in pending]
    texts.append(unit_text(f"{ex.title}. {ex.narrative}", messages[0].sent_at if messages else None))
    vectors = embedder.embed(texts) if texts else []
    for (unit_id, kind, _t, when, _s), vec in zip(pending, vectors):
        conn.run("vec_unit_insert", {"id": unit_id, "ns": ns, "kind": kind, "embedding": to_blob(vec)})
        out.rows.append((unit_id, kind, when, vec))
    conn.run("vec_unit_insert", {"id": episode_id, "ns": ns, "kind": "episode", "embedding": to_blob(vectors[-1])})
    return out


def borderline(conn: Store, ns: str, messages: Sequence[EpisodeMessage], ex: Extraction) -> list[resolve.Borderline]:
    """The extraction's entity mentions that need the model to resolve (see resolve.find_borderline)."""
    return resolve.find_borderline(
        conn, ns, [resolve.Mentioned(e.name, e.type, e.tag) for e in ex.entities], {m.speaker for m in messages}
    )


def _speaker_for(ent: EntityMention, messages: Sequence[EpisodeMessage]) -> str | None:
    """Who said "my ..." : the first speaker whose message contains the entity's words."""
    if not ent.name.lower().startswith(("my ", "our ")):
        return None
    tail = ent.name.lower().split(" ", 1)[1]
    return next((m.speaker for m in messages if tail in m.text.lower()), None)
