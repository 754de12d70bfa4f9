"""Files of questions: what ``search --queries``, ``ask --questions`` and ``bench ask`` read.

One question a line: plain text, or a JSON object with ``query`` (or ``question``) and,
optionally, ``namespace`` and ``now`` (the date relative questions count from). Other keys are
ignored: such a file often carries ids or gold answers. Blank lines are skipped. Every problem
is one line naming the file and the line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError, LocalmemError
from .files import read_input

# The keys a JSON line may give a meaning to; "question" is another name for "query".
KEYS = ("query", "question", "namespace", "now")
_FORMAT = "give one question a line, or a JSON object with 'query' (and optionally 'namespace' and 'now')"


@dataclass(frozen=True)
class Question:
    """One line of a question file: its text, and where (``namespace``) and when (``now``) it
    is asked, when the line says."""

    query: str
    namespace: str | None = None
    now: str | None = None
    line: int = 0  # its line in the file


def read_questions(path: Path) -> list[Question]:
    """The questions of the file at ``path``, in order; none for a file of blank lines."""
    try:
        data = read_input(Path(path))
    except InputError as exc:
        raise LocalmemError(f"cannot read {path}: {exc.problem}", "give a file of questions, one a line") from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise LocalmemError(f"{path}:{line}: not valid UTF-8 (byte offset {exc.start})", "save it as UTF-8") from exc
    found = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        found.append(_parse(path, lineno, line) if line.startswith("{") else Question(line, line=lineno))
    return found


def _parse(path: Path, lineno: int, line: str) -> Question:
    where = f"{path}:{lineno}"
    try:
        item: dict[str, Any] = json.loads(line)  # an object: the line starts with '{'
    except json.JSONDecodeError as exc:
        raise LocalmemError(f"{where}: invalid JSON: {exc.msg}", _FORMAT) from exc
    query = item.get("query", item.get("question"))
    if not isinstance(query, str) or not query.strip():
        raise LocalmemError(f"{where}: a JSON line needs a string 'query', got {_shown(query)}", _FORMAT)
    for key in ("namespace", "now"):
        value = item.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise LocalmemError(
                f"{where}: '{key}' must be text, got {_shown(value)}", "give it as text, or leave it out"
            )
    return Question(query, item.get("namespace"), item.get("now"), lineno)


def _shown(value: object) -> str:
    return "nothing" if value is None else json.dumps(value, ensure_ascii=False)[:40]
