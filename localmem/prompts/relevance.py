"""Relevance judging for ``--rerank llm``: does a passage help answer a question? (yes/no).

Scored from the next-token logits of "yes" against "no", so there is no schema and no
generated text. The question comes before the passage so that consecutive passages for
one question share the evaluated prefix.
"""

from __future__ import annotations

from . import item_text

VERSION = "relevance-v2"  # v2: the passage on one line, its brackets as parentheses (item_text)

SYSTEM = "You judge whether a passage from a chat memory helps answer a question. Answer with one word: yes or no."


def render(query: str, passage: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": f"Question: {query}\nPassage: {item_text(passage)}\nDoes the passage help answer the question?",
        },
    ]
