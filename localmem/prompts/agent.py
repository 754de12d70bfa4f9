"""The agentic ask loop (REMem-I's tool loop with MRAgent's cue → tag → content and
person → aspect → statement tools).

Each step the model sees the question, the evidence it has kept so far and the results of
its last tool call (numbered), and replies with one JSON object: which new results to keep
and the next tool with its arguments. One flat schema for every tool keeps the grammar
small for a 1.5B model; arguments a tool does not use are ignored.
"""

from __future__ import annotations

from typing import Any, Sequence

VERSION = "agent-v3"
TOOLS = ["semantic_retrieve", "lexical_retrieve", "episode_context", "entity_units", "personal_knowledge", "answer"]
MAX_KEEP = 8
MAX_TOKENS = 260

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "keep": {"type": "array", "maxItems": MAX_KEEP, "items": {"type": "integer", "minimum": 1, "maximum": 99}},
        "tool": {"type": "string", "enum": TOOLS},
        "query": {"type": "string", "maxLength": 100},
        "entity": {"type": "string", "maxLength": 40},
        "tag": {"type": "string", "maxLength": 30},
        "start": {"type": "string", "maxLength": 10},
        "end": {"type": "string", "maxLength": 10},
        "order": {"type": "string", "enum": ["relevance", "oldest", "newest"]},
        "item": {"type": "integer", "minimum": 0, "maximum": 99},
        "count": {"type": "boolean"},
    },
    "required": ["keep", "tool"],
    "additionalProperties": False,
}

SYSTEM = """You find the answer to a question in a person's memory of past conversations, one tool call at a time.
Tools:
- semantic_retrieve: memory items similar in meaning to "query"; optional "start"/"end" dates (YYYY-MM-DD).
- lexical_retrieve: memory items containing the words of "query"; optional "start"/"end".
- episode_context: the whole conversation episode around kept evidence item number "item".
- entity_units: what memory holds about a person or thing "entity", optionally only about "tag" (one or two words, e.g. "pottery"), between "start" and "end", ordered "oldest" or "newest"; "count": true also counts them.
- personal_knowledge: lasting facts about person "entity" (job, home, family, hobbies, preferences...), optionally only the aspect "tag" (identity, career, education, family, relationships, home, hobby, preference, health, pets, plans, beliefs); replaced facts are marked.
- answer: stop searching; the answer is written from the kept evidence.
Each step: put in "keep" the numbers of new results that help answer the question (earlier kept evidence stays), then choose the next tool. Choose "answer" as soon as the kept evidence is enough, or when searching more will not help.
Reply with JSON only, for example:
{"keep": [2, 5], "tool": "entity_units", "entity": "Noor", "tag": "dog", "order": "oldest"}"""


def render(
    question: str,
    today: str | None,
    kept: Sequence[str],
    results: Sequence[str],
    last_call: str | None,
    step: int,
    steps: int,
) -> list[dict[str, str]]:
    head = f"Today is {today}.\n" if today else ""
    # Square brackets for both lists: an item's own text has none (item_text), so a message cannot
    # write "[E2]" or "[3]" the way parentheses could be.
    kept_text = "\n".join(f"[E{i}] {line}" for i, line in enumerate(kept, 1)) or "(nothing yet)"
    result_text = "\n".join(f"[{i}] {line}" for i, line in enumerate(results, 1)) or "(no results)"
    last = f"Results of {last_call}:\n{result_text}\n" if last_call else ""
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": f"{head}Question: {question}\nKept evidence:\n{kept_text}\n{last}"
            f"Step {step} of {steps}. Reply with keep and the next tool.",
        },
    ]
