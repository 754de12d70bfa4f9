"""A long message is shown as the sentences that match the question, with their neighbours."""

from __future__ import annotations

from localmem.answer.excerpts import excerpt, shorten
from localmem.text.sentences import spans
from localmem.types import Hit, HitSource
from tests.fakes import HashEmbedder

LONG = (
    "Thanks for the detailed maintenance plan. I clean the chains every two weeks in summer. "
    "The drivetrain on the tourer is original and probably due. I've got three of them, so it adds up. "
    "The gravel bike needs new tyres before autumn. Anyway, what lube would you use in winter? "
    "I ride in the rain a lot, mostly on the commute to Temple Meads."
)


def _hit(text: str, mid: int = 7) -> Hit:
    source = HitSource(mid, "x", "c", "", "user", "2024-05-01T10:00:00")
    return Hit.message(f"m:{mid}", "user", text, "2024-05-01T10:00:00", [source])


def test_sentences_cut_at_stops_and_lines():
    assert [LONG[s:e] for s, e in spans(LONG)][:2] == [
        "Thanks for the detailed maintenance plan.",
        "I clean the chains every two weeks in summer.",
    ]
    # A point inside a number ends nothing: excerpts once showed "0. 5%" and "4. 5 to 5. 5".
    text = "Replace it at 0.5% wear.\nAim for pH 4.5 to 5.5, and it costs £7.50! Really?"
    assert [text[s:e] for s, e in spans(text)] == [
        "Replace it at 0.5% wear.",
        "Aim for pH 4.5 to 5.5, and it costs £7.50!",
        "Really?",
    ]


def test_an_excerpt_keeps_a_decimal_whole():
    text = (
        "Chains wear slowly. Use a chain checker every month. Replace the chain at 0.5% wear on an "
        "11-speed drivetrain. Cassettes last longer than chains. Clean it after rain."
    )
    start = text.index("Replace")
    assert "at 0.5% wear on an 11-speed" in excerpt(_hit(text), [(start, start + 40, 0.9), (0, 19, 0.1)])


def test_excerpt_keeps_the_matching_sentence_and_its_neighbours():
    start = LONG.index("I've got three")
    parts = [(0, 40, 0.1), (start, start + 50, 0.8), (LONG.index("I ride"), len(LONG), 0.2)]
    text = excerpt(_hit(LONG), parts)
    assert text.startswith("user: … The drivetrain") and "I've got three of them" in text
    assert "before autumn." in text and text.endswith("…") and "Temple Meads" not in text


def test_shorten_reads_the_stored_part_vectors(mem):
    mem.add("user", LONG, time="2024-05-01T10:00", role="user")
    mem.add("user", "I went to the shop.", time="2024-05-02T10:00", role="user")
    hits = mem.search("How many bikes do I own?", k=5)
    query = mem.embedder.embed(["How many bikes do I own? three of them"])[0]
    out = shorten(mem.conn, hits, query, lambda t: len(t.split()), long_tokens=40)
    long = next(h for h in out if "drivetrain" in h.text or "three of them" in h.text)
    assert "…" in long.text and len(long.text) < len(LONG)
    short = next(h for h in out if "shop" in h.text)
    assert short.text == "user: I went to the shop."
    assert isinstance(mem.embedder, HashEmbedder)
