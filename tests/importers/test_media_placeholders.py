"""Imports keep what the user gave: a WhatsApp message that was only a photo, a voice note or a
sticker is stored as a note of what it was ("[image omitted]"), in the languages whose
placeholders we know, never as an empty message; and a file uploaded through the web page
keeps its own name as its source."""

from __future__ import annotations

from pathlib import Path

import pytest

from localmem.importers import formats
from tests.fakes import HashEmbedder
from tests.helpers import open_memory

MEDIA = Path(__file__).resolve().parent.parent / "fixtures" / "whatsapp-media"


def _messages(name: str) -> list:
    parsed = formats.parse(MEDIA / name)
    return [m for _, group in parsed.sources[0].groups for m in group]


def test_android_german_placeholders_are_media_notes():
    msgs = _messages("WhatsApp Chat mit Wandergruppe.txt")
    assert [m.text for m in msgs] == [
        "Hast du die Fotos vom Wochenende?",
        "[media omitted]",
        "[media omitted]",
        "Das zweite ist vom Gipfel, bei Nebel",
        "Wunderschön! Nächstes Mal komme ich mit",
        "[media omitted]",
        "Die Sprachnachricht war der Wetterbericht für Samstag",
    ]  # the deleted message is skipped, as in English
    assert msgs[1].attachments == [{"type": "media", "omitted": True}]
    assert {m.conversation for m in msgs} == {"Wandergruppe"}


def test_ios_spanish_placeholders_name_the_kind():
    msgs = _messages("WhatsApp Chat - Grupo viaje.txt")
    texts = [m.text for m in msgs]
    assert texts == [
        "¿Alguien tiene las entradas del museo?",
        "[image omitted]",
        "Aquí están, para el sábado a las 10",
        "[audio omitted]",
        "[sticker omitted]",
        "[image: 00000031-PHOTO-2024-04-04-09-15-00.jpg]",
        "El mapa del barrio gótico",
        "[media omitted]",
    ]
    assert msgs[5].attachments == [{"type": "image", "file": "00000031-PHOTO-2024-04-04-09-15-00.jpg"}]


def test_ios_english_every_kind():
    texts = [m.text for m in _messages("WhatsApp Chat - Book club photos.txt")]
    assert texts == [
        "[image omitted]",
        "That's my copy, very dog-eared",
        "[image: 00000012-PHOTO-2024-02-14-19-09-02.jpg]",
        "[document omitted]",
        "[contact omitted]",
        "The cover alone is worth it",
        "[GIF omitted]",
    ]


def test_a_sentence_ending_in_omitted_stays_a_message(tmp_path):
    chat = tmp_path / "chat.txt"
    chat.write_text(
        "12/01/2024, 19:02 - Sam: Details omitted\n12/01/2024, 19:03 - Kai: <Media omitted>\n", encoding="utf-8"
    )
    msgs = [m for _, g in formats.parse(chat).sources[0].groups for m in g]
    assert [(m.text, m.attachments) for m in msgs] == [
        ("Details omitted", None),
        ("[media omitted]", [{"type": "media", "omitted": True}]),
    ]


@pytest.mark.parametrize("name", sorted(p.name for p in MEDIA.iterdir()))
def test_no_message_is_stored_empty(tmp_path, name):
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        report = mem.ingest(MEDIA / name)
        assert report.added > 0
        texts = [row[0] for row in mem.conn.execute("SELECT text FROM messages")]
        assert texts and all(t.strip() for t in texts)
        assert mem.ingest(MEDIA / name).added == 0  # and a second import is a no-op


def test_a_copy_is_stored_under_the_name_it_was_given(tmp_path):
    copy = tmp_path / "localmem-upload-x1y2" / "WhatsApp Chat - Grupo viaje.txt"
    copy.parent.mkdir()
    copy.write_bytes((MEDIA / copy.name).read_bytes())
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        report = mem.ingest(copy, source_name=copy.name)
        assert str(tmp_path) not in str(report.to_dict())
        uris = [row[0] for row in mem.conn.execute("SELECT uri FROM sources")]
        assert uris == ["WhatsApp Chat - Grupo viaje.txt"]
        shown = mem.browse.get("m:1")
        assert shown.source["uri"] == "WhatsApp Chat - Grupo viaje.txt"
