"""Episode extraction (Nemori narrative + REMem gists/facts + TEMPR entities + MRAgent cue tags).

One call per episode. Each ``event`` is both a gist (its ``text``, a self-contained
statement) and a fact (``subject``–``predicate``–``object``): one list instead of two
halves the tokens a small model must generate. ``time_text`` is the time phrase as
said, so a rule-based resolver can check the model's ``date``.
"""

from __future__ import annotations

from typing import Any, Sequence

VERSION = "extract-v2"
# Large enough for the longest output the schema allows (a cut-off reply is invalid JSON;
# v1 had 900 and lost 30% of calls on conv-26 to truncation).
MAX_TOKENS = 1500
MAX_EVENTS = 6
MAX_ENTITIES = 8

ENTITY_TYPES = ["person", "place", "organization", "object", "activity", "topic", "event", "other"]

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 90},
        "narrative": {"type": "string", "maxLength": 450},
        "events": {
            "type": "array",
            "maxItems": MAX_EVENTS,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "maxLength": 160},
                    "subject": {"type": "string", "maxLength": 40},
                    "predicate": {"type": "string", "maxLength": 40},
                    "object": {"type": "string", "maxLength": 60},
                    "time_text": {"type": "string", "maxLength": 40},
                    "date": {"type": "string", "maxLength": 24},
                    "sources": {"type": "array", "maxItems": 4, "items": {"type": "integer"}},
                },
                "required": ["text", "subject", "predicate", "object", "time_text", "date", "sources"],
                "additionalProperties": False,
            },
        },
        "entities": {
            "type": "array",
            "maxItems": MAX_ENTITIES,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 30},
                    "type": {"type": "string", "enum": ENTITY_TYPES},
                    "tag": {"type": "string", "maxLength": 24},
                },
                "required": ["name", "type", "tag"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["title", "narrative", "events", "entities"],
    "additionalProperties": False,
}

SYSTEM = """You turn a piece of a chat into memory records, as JSON.
- title: a short title of what happened.
- narrative: a third-person account in past tense, using names (never "I", "you", "my"). Write \
dates as absolute dates, e.g. "yesterday (7 May 2023)".
- events: each distinct fact or event worth remembering about the people, one per item:
  text: one self-contained sentence with names and the absolute date if known;
  subject, predicate, object: the same fact as a short triple;
  time_text: the time words used in the chat ("yesterday", "last week", "in 2022"), or "";
  date: when it happened as YYYY-MM-DD, YYYY-MM or YYYY, resolved from the message date; "" if unknown;
  sources: the numbers of the messages that state it.
- entities: people, places, organizations, pets, objects, activities and topics mentioned, with a \
tag of at most two words saying what this chat says about them. Name people relative to the \
speaker when no name is given ("Caroline's mother", not "my mom").
Only use what the messages say. Keep it short.

Example messages (date 8 May 2023):
[0] Caroline: I went to a support group for trans people yesterday, it was so powerful.
[1] Melanie: That's great! I took my kids camping last week.
Example JSON:
{"title": "Caroline's support group and Melanie's camping trip", "narrative": "On 8 May 2023 \
Caroline told Melanie she had attended a support group for trans people the day before (7 May \
2023). Melanie said she had taken her kids camping the week before.", "events": [{"text": \
"Caroline attended a support group for trans people on 7 May 2023.", "subject": "Caroline", \
"predicate": "attended", "object": "support group for trans people", "time_text": "yesterday", \
"date": "2023-05-07", "sources": [0]}, {"text": "Melanie took her kids camping in the week \
before 8 May 2023.", "subject": "Melanie", "predicate": "went camping with", "object": "her \
kids", "time_text": "last week", "date": "2023-05-01", "sources": [1]}], "entities": [{"name": \
"Caroline", "type": "person", "tag": "support group"}, {"name": "Melanie", "type": "person", \
"tag": "camping"}, {"name": "Melanie's kids", "type": "person", "tag": "camping"}, {"name": \
"support group", "type": "activity", "tag": "attended"}]}"""


def build(lines: Sequence[str], date_header: str) -> list[dict[str, str]]:
    """``lines``: the episode's messages as ``Speaker: text``; ``date_header``: e.g. "8 May 2023"."""
    numbered = "\n".join(f"[{i}] {line}" for i, line in enumerate(lines))
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Messages (date {date_header}):\n{numbered}"}]
