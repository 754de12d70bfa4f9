"""The import fixtures (tests/fixtures/imports): what each holds, counted by hand from the file,
and what ingest stored from it.

Run ``PYTHONPATH=. python -m tests.import_fixtures`` to print the table (with the real default
embedder; ``--fake`` uses the tests' hash embedder). Times are read with ``timezone = "UTC"``:
the exports that name their zone (ChatGPT, Claude, Slack, Discord) are shown in UTC, the ones
that do not (WhatsApp, notes) as written.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "imports"
IDEAS_MTIME = 1710936000  # 2024-03-20T12:00:00Z: notes/ideas.txt has no date but its file's


@dataclass(frozen=True)
class Expected:
    """What the fixture holds: messages a person reading it would count as turns, who said
    them, the first and last time, and what is left out (and why)."""

    input: str  # inside the prepared copy
    messages: int
    speakers: tuple[str, ...]
    first: str
    last: str
    left_out: str


EXPECTED = {
    "chatgpt": Expected(
        "chatgpt",
        14,
        ("assistant", "user"),
        "2024-03-02T18:05:10+00:00",
        "2024-03-10T08:02:10+00:00",
        "3 messages on an edited and a regenerated branch; 7 system, custom-instruction, tool, "
        "tool-call and reasoning messages; chat.html, user.json, message_feedback.json",
    ),
    "claude": Expected(
        "claude",
        8,
        ("assistant", "user"),
        "2024-04-06T09:12:45+00:00",
        "2024-04-08T20:03:04+00:00",
        "2 messages of an edited branch; thinking, tool_use and tool_result blocks; users.json, projects.json",
    ),
    "whatsapp-android": Expected(
        "whatsapp/WhatsApp Chat with Book club.txt",
        8,
        ("+44 7700 900123", "Priya Nair", "Tom Becker"),
        "2024-02-14T19:05:00",
        "2024-03-01T18:31:00",
        "6 system lines (encryption, created, added, joined, subject, left), 1 deleted message",
    ),
    "whatsapp-ios": Expected(
        "WhatsApp Chat - Sam Okafor.zip",
        8,
        ("Alex Rivera", "Sam Okafor"),
        "2024-01-09T20:14:03",
        "2024-02-03T11:06:10",
        "the encryption notice, a missed call, a deleted message",
    ),
    "slack": Expected(
        "slack-export.zip",
        12,
        ("Maya K", "Priya Nair", "Standup Bot", "Tom Becker"),
        "2024-03-04T10:10:00+00:00",
        "2024-03-06T08:01:40+00:00",
        "a join, a topic change, a deleted thread parent (its reply is kept)",
    ),
    "discord": Expected(
        "discord/Tiny Garden Club - Text Channels - general [1184735003339472942].json",
        6,
        ("GardenBot", "Lena", "Oskar"),
        "2024-05-01T16:02:10+00:00",
        "2024-05-02T05:15:00+00:00",
        "a join and a pin notification",
    ),
    "notes": Expected(
        "notes",
        8,
        ("Nonna Lucia", "me"),
        "2023-08-15T00:00:00",
        "2024-04-20T00:00:00",
        "garden.md (941 characters) is 5 messages, one per heading; a .png and .obsidian/ are not read",
    ),
}


def prepare(into: Path) -> Path:
    """A copy of the fixtures as the apps deliver them: the iOS WhatsApp chat and the Slack
    export zipped, ideas.txt with a known modification time."""
    root = into / "imports"
    shutil.copytree(FIXTURES, root)
    ios = root / "whatsapp" / "WhatsApp Chat - Sam Okafor"
    with zipfile.ZipFile(root / "WhatsApp Chat - Sam Okafor.zip", "w") as zf:
        zf.write(ios / "_chat.txt", "_chat.txt")
    shutil.rmtree(ios)
    with zipfile.ZipFile(root / "slack-export.zip", "w") as zf:
        for path in sorted((root / "slack-export").rglob("*.json")):
            zf.write(path, "slack-export/" + path.relative_to(root / "slack-export").as_posix())
    shutil.rmtree(root / "slack-export")
    os.utime(root / "notes" / "ideas.txt", (IDEAS_MTIME, IDEAS_MTIME))
    return root


def stored(db_path: Path, namespace: str) -> tuple[int, tuple[str, ...], str, str]:
    from tests.helpers import store_connect

    conn = store_connect(db_path)  # the store as a Memory opens it (a test database on --stores=postgres)
    try:
        count, first, last = conn.execute(
            "SELECT count(*), min(sent_at), max(sent_at) FROM messages WHERE ns = ?", (namespace,)
        ).fetchone()
        speakers = tuple(
            r[0]
            for r in conn.execute("SELECT DISTINCT speaker FROM messages WHERE ns = ? ORDER BY speaker", (namespace,))
        )
    finally:
        conn.close()
    return count, speakers, first, last


def measure(workdir: Path, embedder=None) -> list[tuple[str, Expected, tuple, dict]]:
    """Ingest each fixture into its own namespace; ``[(name, expected, stored, report)]``."""
    from localmem.config import Config
    from tests.helpers import open_memory

    root = prepare(workdir)
    db_path = workdir / "imports.db"
    rows = []
    for name, exp in EXPECTED.items():
        with open_memory(db_path, namespace=name, config=Config(timezone="UTC"), embedder=embedder) as mem:
            report = mem.ingest(root / exp.input)
        rows.append((name, exp, stored(db_path, name), report.to_dict()))
    return rows


def table(rows) -> str:
    out = [
        "| fixture | messages in file / stored | speakers in file / stored | time range in file | time range stored |",
        "|---|---|---|---|---|",
    ]
    for name, exp, (count, speakers, first, last), _ in rows:
        said = ", ".join(exp.speakers)
        got = "same" if speakers == exp.speakers else ", ".join(speakers)
        out.append(
            f"| {name} | {exp.messages} / {count} | {said} / {got} | {exp.first} … {exp.last} | {first} … {last} |"
        )
    return "\n".join(out)


def main() -> None:
    embedder = None
    if "--fake" in sys.argv:
        from tests.fakes import HashEmbedder

        embedder = HashEmbedder()
    with tempfile.TemporaryDirectory() as tmp:
        rows = measure(Path(tmp), embedder)
    print(table(rows))
    for name, exp, _, _ in rows:
        print(f"- {name}: left out by design: {exp.left_out}")


if __name__ == "__main__":
    main()
