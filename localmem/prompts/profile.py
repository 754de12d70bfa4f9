"""A person's profile summary (CAST's character profile, in a few sentences).

Written from what memory holds about the person: their current knowledge statements (by
aspect, with dates) and the titles of the episodes they are in. Only those are shown, so
the summary can say nothing the memory does not; replaced statements are left out (the
summary describes the person now). Regenerated when what it rests on changes.
"""

from __future__ import annotations

from typing import Any, Sequence

VERSION = "profile-summary-v1"
MAX_SUMMARY_CHARS = 400
MAX_TOKENS = 150  # covers MAX_SUMMARY_CHARS
MAX_STATEMENTS = 24
MAX_EPISODES = 12

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"summary": {"type": "string", "minLength": 1, "maxLength": MAX_SUMMARY_CHARS}},
    "required": ["summary"],
    "additionalProperties": False,
}

SYSTEM = """You write a short profile of a person from what a memory holds about them.
Rules:
- Two or three sentences, third person, present tense for what holds now.
- Use only the statements and episode titles given: no guesses, no praise, no advice.
- Lead with who they are (work, home, family), then interests and plans.
Reply with JSON only: {"summary": "..."}"""


def render(
    name: str, statements: Sequence[tuple[str, str, str]], episodes: Sequence[tuple[str, str]]
) -> list[dict[str, str]]:
    """``statements``: (aspect, text, date); ``episodes``: (date, title), newest last."""
    facts = "\n".join(f"- ({aspect}, {when}) {text}" for aspect, text, when in statements) or "(none)"
    titles = "\n".join(f"- {when} {title}" for when, title in episodes) or "(none)"
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": f"Person: {name}\nWhat memory knows:\n{facts}\n"
            f"Episodes they are in:\n{titles}\nProfile of {name}:",
        },
    ]
