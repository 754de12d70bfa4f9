"""The language detector: scripts, the closed language set, and "und" for what is too short."""

from __future__ import annotations

import pytest

from localmem.text.language import LANGUAGES, UNDETERMINED, detect, is_spaceless


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("Did you get the tickets for Saturday?", "en"),
        ("meine Schwester ist letzten Monat nach Lissabon gezogen", "de"),
        ("haha wie lustig", "de"),  # unrestricted py3langid calls this Javanese
        ("vale, nos vemos mañana", "es"),  # ... and this Galician
        ("La réunion a été repoussée à la semaine prochaine", "fr"),
        ("Adotamos um cachorrinho ontem!", "pt"),
        ("我姐姐上个月搬到北京了", "zh"),
        ("北京", "zh"),  # two Han characters are enough: the script decides
        ("土曜日のチケット取れた？", "ja"),  # kana among Han: Japanese
        ("서울에 갔어요", "ko"),
        ("ข้าวผัดอร่อยมาก", "th"),
        ("我在Lisbon", "zh"),  # a Latin name inside Chinese text
        ("Where did 李明 move last year?", "en"),  # a Chinese name inside English text
        ("Schau mal https://example.com/urlaub-2024 @maria #urlaub wie schön das ist", "de"),
    ],
)
def test_detect_names_the_language(text, lang):
    assert detect(text) == lang


@pytest.mark.parametrize("text", ["", "ok", "haha", "👍", "12:30", "Lissabon", "https://example.com/a", "@maria"])
def test_detect_says_und_when_there_is_too_little_to_tell(text):
    assert detect(text) == UNDETERMINED


def test_detect_only_answers_from_its_closed_set_or_scripts():
    samples = ["oké tot morgen", "mdr trop drôle", "kkkkk que engraçado", "jajaja qué gracioso", "ciao bella"]
    for text in samples:
        assert detect(text) in set(LANGUAGES) | {UNDETERMINED}


def test_spaceless_scripts():
    assert is_spaceless("zh") and is_spaceless("ja") and is_spaceless("th")
    assert not is_spaceless("de") and not is_spaceless("und")
