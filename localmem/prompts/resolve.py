"""Borderline entity resolution: is a newly mentioned name one of the known people of that name?

Asked only when the rules cannot tell (a bare personal name that matches a known person,
with no shared context), all of an episode's cases in one call.
"""

from __future__ import annotations

from typing import Any, Sequence

VERSION = "resolve-v1"
MAX_CASES = 6
MAX_TOKENS = 120

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answers": {
            "type": "array",
            "maxItems": MAX_CASES,
            "items": {
                "type": "object",
                "properties": {
                    "case": {"type": "integer"},
                    "match": {"type": "integer"},
                },
                "required": ["case", "match"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["answers"],
    "additionalProperties": False,
}

SYSTEM = """You decide whether a name in a new chat refers to a person already known, as JSON.
For each case you get the new mention (what the chat says about them and who else is in it) and \
the known people with that name (what was said about them before and who they appeared with).
Answer with the number of the known person it is, or -1 when it is a different person. Say -1 \
when the details clearly disagree (another job, another family, another place); otherwise pick \
the known person.
Reply as {"answers": [{"case": 0, "match": 1}, ...]}, one answer per case."""


def render(cases: Sequence[str]) -> list[dict[str, str]]:
    """``cases``: each already rendered as text (see :func:`localmem.resolve.render_case`)."""
    body = "\n\n".join(f"Case {i}:\n{case}" for i, case in enumerate(cases))
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": body}]
