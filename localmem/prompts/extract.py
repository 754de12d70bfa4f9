"""Episode extraction (Nemori narrative + REMem gists/facts + TEMPR entities + MRAgent cue tags).

One call per episode. Each ``fact`` is both a gist (its ``text``, a self-contained
sentence) and a fact (``subject``–``predicate``–``object``): one list instead of two
halves the tokens a small model must generate. The model copies the time words it saw
(``time``) and never computes dates: a rule-based resolver turns the phrase into a date
against the message's own timestamp (1.5B models are often a day, a week or a year off,
and stamp the chat's date on everything).
"""

from __future__ import annotations

from typing import Any, Sequence

from . import item_text

VERSION = "extract-v4"  # v4: each message on one line, its brackets as parentheses (item_text)
# Large enough for the longest output the schema allows: a cut-off reply is invalid JSON.
MAX_TOKENS = 1600
MAX_FACTS = 8
MAX_ENTITIES = 8

ENTITY_TYPES = ["person", "place", "organization", "object", "activity", "topic", "event", "other"]

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 80},
        "narrative": {"type": "string", "maxLength": 300},
        "facts": {
            "type": "array",
            "maxItems": MAX_FACTS,
            "items": {
                "type": "object",
                "properties": {
                    "source": {"type": "integer"},
                    "text": {"type": "string", "maxLength": 150},
                    "subject": {"type": "string", "maxLength": 40},
                    "predicate": {"type": "string", "maxLength": 40},
                    "object": {"type": "string", "maxLength": 60},
                    "time": {"type": "string", "maxLength": 40},
                },
                "required": ["source", "text", "subject", "predicate", "object", "time"],
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
    "required": ["title", "narrative", "facts", "entities"],
    "additionalProperties": False,
}

# The example uses made-up people so that copied example values are easy to spot.
SYSTEM = """You turn a piece of a chat into memory records, as JSON.
In each message, "I" and "my" mean the person who wrote that message.
- title: a short title of what happened.
- narrative: two or three sentences in the third person and past tense, using names.
- facts: go through the messages in order. For each message that tells something a friend should \
remember about someone (things they did, went to, made, bought or plan to do; their work, family, \
pets, home, likes, beliefs, identity), write one fact:
  source: the number of that message;
  text: one sentence in the third person with names (write "Priya", never "I", "she" or "my");
  subject, predicate, object: the same fact as a short triple;
  time: the time words of that message copied exactly ("yesterday", "last Friday", "next month", \
"in 2019"), or "" if it has none.
  Skip greetings, thanks, compliments, questions and small talk. No double quotes inside texts.
- entities: the people, places, organizations, pets, objects and activities mentioned, each with \
a tag of at most two words. Name people by their relation when no name is given ("Priya's \
brother", not "my brother").
Only use what the messages say.

Example messages:
[0] Priya: Guess what, I adopted a puppy last Sunday! His name is Biscuit.
[1] Tom: Aww! I'm still busy with my bakery, we open a second shop next month.
Example JSON:
{"title": "Priya's new puppy and Tom's bakery", "narrative": "Priya told Tom she had adopted a \
puppy called Biscuit. Tom said his bakery would open a second shop.", "facts": [{"source": 0, "text": \
"Priya adopted a puppy named Biscuit.", "subject": "Priya", "predicate": "adopted", "object": "a \
puppy named Biscuit", "time": "last Sunday"}, {"source": 1, "text": "Tom runs a bakery that will \
open a second shop.", "subject": "Tom", "predicate": "will open", "object": "a second bakery \
shop", "time": "next month"}], "entities": [{"name": "Priya", "type": "person", "tag": \
"puppy"}, {"name": "Tom", "type": "person", "tag": "bakery"}, {"name": "Biscuit", "type": \
"other", "tag": "puppy"}]}"""


def render(lines: Sequence[str], date_header: str) -> list[dict[str, str]]:
    """``lines``: the episode's messages as ``Speaker: text``; ``date_header``: e.g. "8 May 2023"."""
    numbered = "\n".join(f"[{i}] {item_text(line)}" for i, line in enumerate(lines))
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Messages (date {date_header}):\n{numbered}"},
    ]
