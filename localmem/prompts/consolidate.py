"""Consolidation (Nemori predict–calibrate, MRAgent person → aspect → statement).

What memory already knows about an episode's people is shown as numbered ``K`` items. In
``full`` mode one call predicts the episode from its title and that knowledge (``PREDICT``),
and a second compares the prediction with the raw messages (never the narrative) and keeps
only what the prediction missed or got wrong (``CALIBRATE``). ``fast`` merges the two into
one call: the model first writes what the knowledge leads it to expect, then the statements
the messages add. A statement that contradicts a ``K`` item names it in ``replaces``; the
caller honours that only for the same person (nothing is deleted: the old statement stays,
marked as replaced). Statements are present tense and carry no dates: the caller stamps
them with the episode's time.
"""

from __future__ import annotations

from typing import Any, Sequence

from . import item_text

PREDICT_VERSION = "predict-v1"  # shows no messages
CALIBRATE_VERSION = "calibrate-v3"  # v3: messages on one line, brackets as parentheses (item_text)
FAST_VERSION = "consolidate-fast-v3"  # v3: likewise
MAX_STATEMENTS = 3
MAX_STATEMENT_CHARS = 120
MAX_PREDICTION_CHARS = 400
PREDICT_MAX_TOKENS = 160
# Covers the longest reply the schemas allow.
STATEMENTS_MAX_TOKENS = 420

ASPECTS = [
    "identity",
    "career",
    "education",
    "family",
    "relationships",
    "home",
    "hobby",
    "preference",
    "health",
    "pets",
    "plans",
    "beliefs",
    "other",
]

_STATEMENT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "subject": {"type": "string", "maxLength": 40},
        "aspect": {"type": "string", "enum": ASPECTS},
        "text": {"type": "string", "minLength": 8, "maxLength": MAX_STATEMENT_CHARS},
        "source": {"type": "integer", "minimum": 0, "maximum": 99},
        "replaces": {"type": "integer", "minimum": 0, "maximum": 99},
    },
    "required": ["subject", "aspect", "text", "source", "replaces"],
    "additionalProperties": False,
}

PREDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"prediction": {"type": "string", "maxLength": MAX_PREDICTION_CHARS}},
    "required": ["prediction"],
    "additionalProperties": False,
}

CALIBRATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"statements": {"type": "array", "maxItems": MAX_STATEMENTS, "items": _STATEMENT}},
    "required": ["statements"],
    "additionalProperties": False,
}

FAST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "expected": {"type": "string", "maxLength": 80},
        "statements": {"type": "array", "maxItems": MAX_STATEMENTS, "items": _STATEMENT},
    },
    "required": ["expected", "statements"],
    "additionalProperties": False,
}

_RULES = f"""A statement is lasting knowledge about one person: who they are, their job or studies, family, relationships, where they live, hobbies, preferences, health, pets, plans, beliefs. It must still be true in six months, be specific, and stand alone: "Dana works as a nurse in Leeds", not "she started today".
- Write each statement in the present tense with the person's name, without dates.
- "aspect": one of {", ".join(ASPECTS)}.
- "source": the number of the message it comes from.
- "replaces": the number of the K item it contradicts (a new job, a move, a changed preference), else 0. A second hobby or another friend does not contradict the first.
- Leave out small talk, feelings of the moment, and anything the K items already say.
- No new knowledge: "statements": []."""

PREDICT_SYSTEM = (
    "You predict what happened in a conversation episode from its title and what is already known "
    "about the people in it. Write two or three plain sentences. Reply with JSON only."
)

CALIBRATE_SYSTEM = f"""You keep a memory of lasting knowledge about people. You get what memory knows (K items), a prediction of an episode made from that knowledge, and the episode's real messages. List only what the messages say that the prediction missed or got wrong.
{_RULES}
Reply with JSON only."""

FAST_SYSTEM = f"""You keep a memory of lasting knowledge about people. You get what memory knows (K items), an episode's title and its real messages.
First write in "expected" one sentence: what the K items and the title let you expect. Then list in "statements" only what the messages add to it or change.
{_RULES}
Reply with JSON only.

Example:
K items:
[K1] Noor works as a nurse. (career)
[K2] Noor likes hiking. (hobby)
Title: Noor's new job and climbing
Messages:
[0] Noor: I quit the hospital, I'm a paramedic now!
[1] Noor: I also started climbing on Sundays.
{{"expected": "Noor talks about nursing and hiking.", "statements": [{{"subject": "Noor", "aspect": "career", "text": "Noor works as a paramedic.", "source": 0, "replaces": 1}}, {{"subject": "Noor", "aspect": "hobby", "text": "Noor goes climbing on Sundays.", "source": 1, "replaces": 0}}]}}"""


def known_lines(known: Sequence[tuple[str, str]]) -> str:
    """``known``: (statement, aspect) pairs, numbered K1… in order."""
    return "\n".join(f"[K{i}] {text} ({aspect})" for i, (text, aspect) in enumerate(known, 1)) or "(nothing yet)"


def _messages(lines: Sequence[str]) -> str:
    return "\n".join(f"[{i}] {item_text(line)}" for i, line in enumerate(lines))


def predict(title: str, known: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": PREDICT_SYSTEM},
        {"role": "user", "content": f"Known:\n{known_lines(known)}\nEpisode title: {title}\nWhat happened?"},
    ]


def calibrate(
    known: Sequence[tuple[str, str]], prediction: str, lines: Sequence[str], day: str
) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": CALIBRATE_SYSTEM},
        {
            "role": "user",
            "content": f"K items:\n{known_lines(known)}\nPrediction: {prediction}\n"
            f"Messages ({day}):\n{_messages(lines)}",
        },
    ]


def fast(known: Sequence[tuple[str, str]], title: str, lines: Sequence[str], day: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": FAST_SYSTEM},
        {
            "role": "user",
            "content": f"K items:\n{known_lines(known)}\nTitle: {title}\nMessages ({day}):\n{_messages(lines)}",
        },
    ]
