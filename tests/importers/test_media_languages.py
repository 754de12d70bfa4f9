"""WhatsApp's placeholders for media left out of an export, in the languages of the phones that
wrote them (tests/fixtures/whatsapp-media: Android and iOS exports in 14 languages): each one is
stored as a note of what it was ("[media omitted]", with an attachment), never as a message
saying "<Medien ausgeschlossen>" that search would find; and a real message that merely looks
like one (angle brackets, or a placeholder's words in a sentence) is kept as said."""

from __future__ import annotations

from pathlib import Path

import pytest

from localmem.importers import formats
from localmem.importers.whatsapp_media import placeholder
from tests.fakes import HashEmbedder
from tests.helpers import open_memory

MEDIA = Path(__file__).resolve().parent.parent / "fixtures" / "whatsapp-media"

# fixture -> (language, the placeholders as written, the messages that only look like one)
EXPORTS = {
    "WhatsApp-Chat mit Familie Krüger.txt": (
        "de",
        ["<Medien ausgeschlossen>"] * 3,
        ["<Media Markt hat am Sonntag zu>, hat Papa geschrieben", "<3"],
    ),
    "WhatsApp Chat with Sam Rivera.txt": (
        "en",
        ["<Media omitted>"] * 2,
        ["<omitted for brevity>", "Saturday the 28th, bring the <good> wine"],
    ),
    "WhatsApp Chat con Lucía.txt": (
        "es",
        ["<Multimedia omitido>"] * 2,
        ["<Multimedia> es la asignatura que más me gusta"],
    ),
    "Conversa do WhatsApp com Ana Souza.txt": (
        "pt",
        ["<Mídia oculta>", "<Arquivo de mídia oculto>"],
        ["<Ana> disse que volta domingo"],
    ),
    "Discussion WhatsApp avec Camille.txt": ("fr", ["<Médias omis>"] * 2, ["<mise à jour> du planning : on part à 9h"]),
    "Chat WhatsApp con Giulia.txt": ("it", ["<Media omessi>"] * 2, ["<Media World> ha gli sconti fino a domenica"]),
    "WhatsApp-chat met Daan.txt": ("nl", ["<Media weggelaten>"] * 2, []),
    "Elif ile WhatsApp Sohbeti.txt": ("tr", ["<Medya dahil edilmedi>"] * 2, []),
    "WhatsApp Chat with Ольга.txt": ("ru", ["<Без медиафайлов>"] * 2, ["<без комментариев>, но огурцы отличные"]),
    "Chat WhatsApp dengan Budi.txt": ("id", ["<Media tidak disertakan>"] * 2, []),
    "Czat WhatsApp z Kasią.txt": ("pl", ["<pominięto multimedia>"] * 2, []),
    "WhatsApp-chatt med Erik.txt": ("sv", ["<Media utelämnad>"] * 2, []),
    "与王芳的 WhatsApp 聊天.txt": ("zh", ["<省略影音内容>"] * 2, []),
    "WhatsApp Chat with राहुल.txt": ("hi", ["<मीडिया छोड़ दिया गया>"] * 2, []),
    "_chat (iOS Deutsch).txt": (
        "de",
        ["Bild weggelassen", "Video weggelassen", "Audio weggelassen"],
        ["Bild weggelassen hat sie geschrieben, aber ich sehe es doch"],
    ),
    "_chat (iOS français).txt": ("fr", ["image absente", "vidéo absente"], []),
    "_chat (iOS italiano).txt": ("it", ["immagine omessa", "audio omesso"], []),
    "_chat (iOS português).txt": ("pt", ["imagem ocultada", "figurinha omitida"], []),
}


def _messages(name: str) -> list:
    parsed = formats.parse(MEDIA / name)
    return [m for _, group in parsed.sources[0].groups for m in group]


def test_fourteen_languages_android_and_ios():
    assert len({lang for lang, _, _ in EXPORTS.values()}) >= 10
    assert all((MEDIA / name).is_file() for name in EXPORTS)


@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_placeholders_become_media_notes_and_lookalikes_stay_messages(name):
    _, written, lookalikes = EXPORTS[name]
    raw = (MEDIA / name).read_text(encoding="utf-8")
    assert all(p in raw for p in written)  # the file says them as the phone did
    msgs = _messages(name)
    omitted = [m for m in msgs if m.attachments and m.attachments[0].get("omitted")]
    assert len(omitted) == len(written), [m.text for m in msgs]
    assert all(m.text.startswith("[") and m.text.endswith(" omitted]") for m in omitted)
    texts = [m.text for m in msgs]
    for placeholder_text in set(written):
        assert placeholder_text not in texts  # never a message of its own
    for kept in lookalikes:
        assert kept in texts, texts
        assert next(m for m in msgs if m.text == kept).attachments is None


def test_the_german_placeholder_is_not_stored_or_found(tmp_path):
    """The issue's case: a German Android export writes <Medien ausgeschlossen>."""
    name = "WhatsApp-Chat mit Familie Krüger.txt"
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.ingest(MEDIA / name)
        stored = [row[0] for row in mem.conn.execute("SELECT text FROM messages")]
        assert not any("ausgeschlossen" in text for text in stored), stored
        assert stored.count("[media omitted]") == 3
        found = mem.search("Medien ausgeschlossen", k=10, channels=["bm25"])
        assert not any("ausgeschlossen" in hit.text for hit in found)
        kept = mem.search("Media Markt Sonntag", k=3, channels=["bm25"])
        # kept and found (the next turn, indexed with it as its context, may rank beside it)
        assert any("<Media Markt hat am Sonntag zu>" in hit.text for hit in kept)


@pytest.mark.parametrize(
    "line",
    [
        "<Medien sind ausgeschlossen worden, sagt Tim>",  # a sentence in brackets
        "<Media Markt>",
        "<omitted>",  # left out, but of what?
        "<media>",
        "<Foto von gestern>",
        "<attached: 00000012-PHOTO.jpg>",  # a file that is there (another rule)
        "<b>Medien ausgeschlossen</b>",
        "Medien ausgeschlossen, leider",
        "<" + "Medien ausgeschlossen " * 4 + ">",  # far longer than any placeholder
        "Details omitted",
        "<3",
        "",
    ],
)
def test_lookalikes_are_not_placeholders(line):
    assert placeholder(line) is None
    assert placeholder(line, marked=True) is None


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("<Medien ausgeschlossen>", "media"),
        ("<Medien ausgelassen>", "media"),  # an older German wording
        ("<MEDIA OMITTED>", "media"),
        ("<Multimédia omitido>", "media"),
        ("<Media omessi>", "media"),
        ("<メディアは含まれていません>", "media"),
        ("<تم استبعاد الوسائط>", "media"),
        ("Bild weggelassen", "image"),
        ("GIF omitted", "GIF"),
        ("Contact card omitted", "contact"),
        ("vidéo absente", "video"),
    ],
)
def test_placeholder_kinds(line, kind):
    assert placeholder(line, marked=True) == kind


def test_an_export_in_an_unknown_wording_keeps_the_line(tmp_path):
    """A language whose words are not known: the line stays a message (nothing is lost)."""
    chat = tmp_path / "chat.txt"
    chat.write_text("14/09/2024, 21:12 - Aroha: <Kua whakakorea te pāpāho>\n", encoding="utf-8")
    msgs = [m for _, g in formats.parse(chat).sources[0].groups for m in g]
    assert [m.text for m in msgs] == ["<Kua whakakorea te pāpāho>"]
