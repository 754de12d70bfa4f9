"""Picking evidence (``ask_pick``): which of the search's candidates answers the question?

Scored from one forward pass: the next-token probabilities of the candidates' labels, read
where the reply's first token would be. Nothing is generated and there is no schema. The
instructions are the system message, the same for every question, so the backend evaluates
them once and restores them (its saved prefix state); only the question and the candidates
are new. Each label is one letter, a single token in the tokenizers of the bundled models
(Qwen2.5, SmolLM2); "I" is left out because it is also how a free reply starts ("I think").
"""

from __future__ import annotations

from typing import Sequence

from . import item_text

VERSION = "pick-v1"

# 25 labels, single tokens: "A".."Z" without "I".
LABELS = tuple(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c != "I")

SYSTEM = (
    "You find evidence in a chat memory. You are given a question and messages from the "
    "memory, each with a letter. Reply with the letter of the message that answers the "
    "question best, and nothing else."
)


def render(question: str, lines: Sequence[str]) -> list[dict[str, str]]:
    """The pick prompt for ``question`` over candidate ``lines`` (one per candidate, at most
    ``len(LABELS)``), each labelled with :data:`LABELS` in order. The question is asked again
    after the list: a small model reads the end of a long prompt best."""
    if len(lines) > len(LABELS):
        raise ValueError(f"at most {len(LABELS)} candidates can be labelled, got {len(lines)}")
    listed = "\n".join(f"{label}. {item_text(line)}" for label, line in zip(LABELS, lines))
    asked = item_text(question)
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": f"Question: {asked}\n\nMessages:\n{listed}\n\n"
            f'Which message answers the question "{asked}"? Reply with its letter only.',
        },
    ]
