"""WhatsApp's placeholders for media left out of an export ("Export chat" → "Without media"),
recognised by their shape and their words rather than by a list of whole strings.

Each app writes one line where the file was, in the phone's language:

- Android: the whole message is one angle-bracketed line naming media and that it was left
  out: ``<Media omitted>``, ``<Medien ausgeschlossen>``, ``<Multimedia omitido>``,
  ``<Médias omis>``, ``<Без медиафайлов>``, ``<Medya dahil edilmedi>``, ``<省略影音内容>``;
- iOS: the kind of file and that it was left out, after an invisible U+200E mark:
  ``‎image omitted``, ``‎Bild weggelassen``, ``‎imagen omitida``, ``‎vidéo absente``.

The wording differs by language and by app version (German Android wrote ``<Medien
ausgelassen>`` before ``<Medien ausgeschlossen>``), so a placeholder is a line made of nothing
but words from two vocabularies: what (media, or a kind of file) and left out, with at least
one of each; a few small words (articles, "file", "was") may sit between them. A line with any
other word is a message: ``<Media Markt hat zu>``, ``<3``, ``<omitted for brevity>``, ``<Foto
von gestern>``, or a sentence that ends in "omitted", are kept as said. A language whose words
are not here leaves its placeholder as a message, as before: add its words below.
"""

from __future__ import annotations

import re
import unicodedata

# Words naming what was left out: media in general (Android), or a kind of file (iOS) -> the
# attachment's type in English ("media" when it names none).
_WHAT = {
    # media in general
    **dict.fromkeys(
        (
            "media",
            "medien",
            "médias",
            "medias",
            "multimedia",
            "multimédia",
            "multimedia-bestand",
            "mídia",
            "midia",
            "mídias",
            "medya",
            "média",
            "médiafájl",
            "medier",
            "medie",
            "медиа",
            "медиафайлы",
            "медиафайлов",
            "медиафайл",
            "медіа",
            "медіафайли",
            "медіафайлів",
            "πολυμέσα",
            "mediji",
            "multimédia",
            "multimedija",
            "phương tiện",
            "मीडिया",
            "メディア",
            "媒体",
            "影音内容",
            "影音",
            "多媒体",
            "미디어",
            "미디어 파일",
            "מדיה",
            "الوسائط",
            "وسائط",
            "رسانه",
            "সংযুক্ত মিডিয়া",
            "মিডিয়া",
        ),
        "media",
    ),
    **dict.fromkeys(
        (
            "image",
            "bild",
            "imagen",
            "imagem",
            "immagine",
            "afbeelding",
            "photo",
            "foto",
            "görüntü",
            "fotoğraf",
            "изображение",
            "фото",
            "zdjęcie",
            "obraz",
            "gambar",
            "bilde",
            "billede",
            "kuva",
            "画像",
            "图片",
            "사진",
        ),
        "image",
    ),
    **dict.fromkeys(("video", "vídeo", "vidéo", "видео", "відео", "wideo", "動画", "视频", "동영상"), "video"),
    **dict.fromkeys(("audio", "áudio", "аудио", "аудіо", "ses", "オーディオ", "音频", "오디오"), "audio"),
    **dict.fromkeys(
        ("sticker", "figurinha", "стикер", "naklejka", "çıkartma", "ステッカー", "贴图", "스티커"), "sticker"
    ),
    "gif": "GIF",
    **dict.fromkeys(
        (
            "document",
            "dokument",
            "documento",
            "documenten",
            "документ",
            "belge",
            "dokumen",
            "ドキュメント",
            "文档",
            "문서",
        ),
        "document",
    ),
    **dict.fromkeys(
        (
            "contact card",
            "kontaktkarte",
            "tarjeta de contacto",
            "cartão de contato",
            "carte de contact",
            "scheda contatto",
            "contactkaart",
            "kontakt",
            "контакт",
            "kişi kartı",
        ),
        "contact",
    ),
}
# Words saying it was left out of the export.
_LEFT_OUT = (
    "omitted",
    "excluded",
    "ausgeschlossen",
    "ausgelassen",
    "weggelassen",
    "nicht enthalten",
    "omitido",
    "omitida",
    "omitidos",
    "omitidas",
    "oculto",
    "oculta",
    "ocultado",
    "ocultada",
    "ocultos",
    "ocultas",
    "não incluído",
    "não incluída",
    "omis",
    "omise",
    "omises",
    "absent",
    "absente",
    "non inclus",
    "omesso",
    "omessa",
    "omessi",
    "omesse",
    "non incluso",
    "weggelaten",
    "niet bijgevoegd",
    "dahil edilmedi",
    "без",
    "пропущено",
    "пропущен",
    "опущено",
    "отсутствует",
    "пропущені",
    "tidak disertakan",
    "dikecualikan",
    "pominięto",
    "pominięte",
    "pominięty",
    "vynechána",
    "vynecháno",
    "kihagyva",
    "utelämnad",
    "utelämnat",
    "utelämnade",
    "udeladt",
    "utelatt",
    "jätetty pois",
    "παραλείφθηκαν",
    "παραλείφθηκε",
    "bỏ qua",
    "đã bỏ qua",
    "छोड़ दिया गया",
    "छोड़ दी गई",
    "省略",
    "已省略",
    "は含まれていません",
    "含まれていません",
    "なし",
    "생략",
    "생략됨",
    "לא נכללה",
    "לא נכלל",
    "تم استبعاد",
    "حذف شد",
    "বাদ দেওয়া হয়েছে",
)
# Small words that may stand between them ("<Arquivo de mídia oculto>", "<Medien wurden
# ausgeschlossen>"); never enough alone.
_FILLERS = (
    "file",
    "files",
    "de",
    "di",
    "da",
    "do",
    "del",
    "des",
    "du",
    "la",
    "le",
    "les",
    "el",
    "los",
    "the",
    "was",
    "were",
    "wurde",
    "wurden",
    "arquivo",
    "ficheiro",
    "fichier",
    "fichiers",
    "archivo",
    "bestand",
    "contenuto",
    "conținut",
    "contenido",
    "conteúdo",
    "内容",
    "は",
    "が",
    "을",
    "를",
    "이",
    "ファイル",
    "文件",
    "파일",
    "ha",
)
# Longest first, so that "medien" is not taken out of "medienfile" and "omitido" before "omit".
_PHRASES = sorted(
    [(w, "what") for w in _WHAT] + [(w, "left out") for w in _LEFT_OUT] + [(w, "filler") for w in _FILLERS],
    key=lambda item: -len(item[0]),
)
# Scripts written without spaces between words (Chinese, Japanese): a phrase is found anywhere.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_MAX_CHARS = 48  # the longest placeholder seen is about 30 characters


def _words(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


def _match(inner: str) -> list[tuple[str, str]] | None:
    """The phrases ``inner`` is made of (each with its class), or None when anything else is in it."""
    rest = _words(inner)
    found: list[tuple[str, str]] = []
    for phrase, kind in _PHRASES:
        if phrase not in rest:
            continue
        if _UNSPACED.search(phrase):
            pattern = re.escape(phrase)
        else:  # a word of a spaced script counts only as a whole word ("omis" is not in "omission")
            pattern = rf"(?<!\w){re.escape(phrase)}(?!\w)"
        rest, n = re.subn(pattern, " ", rest)
        found += [(phrase, kind)] * n
    if re.sub(r"[\s.,:;!\-–…()]+", "", rest):
        return None  # a word that is not a placeholder's
    return found


def placeholder(line: str, *, marked: bool = False) -> str | None:
    """The kind of media (``"media"``, ``"image"``, ``"video"``…) when ``line`` (a message's
    first line, invisible marks removed) is a placeholder for a file left out of the export;
    else None. ``marked``: the line started with iOS's U+200E mark."""
    text = line.strip()
    if not text or len(text) > _MAX_CHARS:
        return None
    bracketed = text.startswith("<") and text.endswith(">")
    inner = text[1:-1] if bracketed else text
    if not inner.strip() or "<" in inner or ">" in inner or ":" in inner:
        return None  # "<attached: x.jpg>" names a file that is there
    found = _match(inner)
    if not found:
        return None
    classes = [kind for _, kind in found]
    if "what" not in classes or "left out" not in classes:
        return None
    kinds = [_WHAT[phrase] for phrase, kind in found if kind == "what"]
    kind = next((k for k in kinds if k != "media"), "media")
    if not bracketed and not marked and kind == "media" and len(found) > 2:
        return None  # an unmarked, unbracketed line must look like iOS's "<kind> omitted"
    return kind
