"""The documentation site (every page of docs/ but the lab notebook, docs/lab/) speaks to its
readers: no issue numbers ("issue 43", "#24"), no paths of the development machine (/work/...,
/root/...) and no talk of who ran a test. A figure says what was measured, with its date, commit,
machine and command; a placeholder (DIR, /path/to/data, ~/.cache/localmem) stands for a path."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import REPO

DOCS = REPO / "docs"

# What may not appear on a page, and why (the why is the failure's message). Words may be split
# across lines (\s+), as a wrapped paragraph splits them.
FORBIDDEN = {
    "an issue number": re.compile(r"\bissues?\s+#?\d+|(?<![\w&/#])#\d+\b", re.I),
    "a path of the development machine": re.compile(r"(?<![\w.])/(?:work|root)/"),
    "talk of who ran a test": re.compile(
        r"\bother\s+(?:engineer|helper)s?\b|\b(?:engineer|helper)s?'|\bhelpers\s+(?:do|did|ran)\b|\breviewer|\bCEO\b"
        r"|\bthe\s+hostile\s+test\b|\bchecked\s+independently\b",
        re.I,
    ),
}


def site_pages() -> list[Path]:
    """Every Markdown page MkDocs builds: docs/ without docs/lab/ (mkdocs.yml's exclude_docs)."""
    return sorted(p for p in DOCS.rglob("*.md") if "lab" not in p.relative_to(DOCS).parts[:-1])


def offences(text: str) -> list[str]:
    """``line N: what (the words)`` for each forbidden thing in a page's text."""
    return [
        f"line {text.count(chr(10), 0, m.start()) + 1}: {what} ({' '.join(m.group(0).split())!r})"
        for what, pattern in FORBIDDEN.items()
        for m in pattern.finditer(text)
    ]


def test_the_pages_are_the_sites():
    names = {p.relative_to(DOCS).as_posix() for p in site_pages()}
    assert {"index.md", "results.md", "cli.md", "configuration.md"} <= names
    assert not any(name.startswith("lab/") for name in names)


def test_no_page_of_the_site_carries_issue_numbers_dev_paths_or_who_ran_a_test():
    bad = [
        f"docs/{p.relative_to(DOCS).as_posix()} {o}"
        for p in site_pages()
        for o in offences(p.read_text(encoding="utf-8"))
    ]
    assert not bad, "\n".join(bad)


def test_the_check_catches_what_it_forbids():
    # The patterns must match the forms that crept in, and leave ordinary text alone.
    assert offences("after the page's additions of issue 43 (search filters)")
    assert offences("issue 53's measurement")
    assert offences("fixed in (#24)")
    assert offences("--distract /work/shared/data/locomo/locomo-dev.json")
    assert offences("cp x /root/store.db")
    assert offences("while other engineers' test runs used the machine")
    assert offences("the findings of the hostile test")
    assert offences("while five other\nengineers' jobs ran") == ["line 1: talk of who ran a test ('other engineers')"]
    assert offences("one other engineer's test runs")
    assert offences("a less loaded machine: five engineers' runs")
    assert not offences("see [Limits](#limits); `~/.cache/localmem`; /path/to/data; DIR/pg_hba.conf")
    assert not offences("Plain-text helpers used everywhere; an issue of the store; &#8212;")
