"""Episode boundary labelling (Nemori): one call labels a whole window of messages."""

from __future__ import annotations

from typing import Any, Sequence

from . import item_text

VERSION = "segment-v2"  # v2: each message on one line, its brackets as parentheses (item_text)
MAX_TOKENS = 160
MAX_BOUNDARIES = 8

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "boundaries": {
            "type": "array",
            "maxItems": MAX_BOUNDARIES,
            "items": {
                "type": "object",
                # No minimum/maximum: llama.cpp's grammar does not enforce them, so
                # out-of-range values are filtered by the caller instead of failing the call.
                "properties": {
                    "index": {"type": "integer"},
                    "confidence": {"type": "number"},
                },
                "required": ["index", "confidence"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["boundaries"],
    "additionalProperties": False,
}

SYSTEM = """You split a chat into episodes. An episode is a run of consecutive messages about one \
topic, event or activity. A new episode starts where the conversation clearly moves to a different \
topic or intent (not at a follow-up question, a reaction, or "by the way" remarks that continue it). \
Greetings belong to the episode that follows them; farewells to the one they close.
Reply with JSON: {"boundaries": [{"index": N, "confidence": C}]} where N is the number of a message \
that STARTS a new episode (never 0) and C in [0, 1] is how sure you are. No boundary: {"boundaries": []}."""


def render(lines: Sequence[str]) -> list[dict[str, str]]:
    """``lines`` are the window's messages, already formatted ``Speaker: text``."""
    numbered = "\n".join(f"[{i}] {item_text(line)}" for i, line in enumerate(lines))
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Messages:\n{numbered}\n\nWhere do new episodes start?"},
    ]
