"""Relative times of other languages dated in a message's text (localmem.text.time_words.with_dates),
as an English message's are (localmem.text.times.with_dates)."""

from __future__ import annotations

import datetime as dt

import pytest

from localmem.text.time_words import relative_phrases, to_english, with_dates

SAID = dt.date(2024, 3, 19)  # a Tuesday


@pytest.mark.parametrize(
    ("text", "dated"),
    [
        ("Ich war gestern beim Arzt.", "Ich war gestern [18 March 2024] beim Arzt."),
        ("Vor zwei Wochen war ich in Hamburg.", "Vor zwei Wochen [2 weeks before 19 March 2024] war ich in Hamburg."),
        ("Ayer me rompí la muñeca.", "Ayer [18 March 2024] me rompí la muñeca."),
        ("Louise est née hier à 4 heures.", "Louise est née hier [18 March 2024] à 4 heures."),
        ("Adotei um cachorro ontem!", "Adotei um cachorro ontem [18 March 2024]!"),
        ("我上周去了北京。", "我上周 [the week before 19 March 2024]去了北京。"),
        ("我3天前回来了。", "我3天前 [16 March 2024]回来了。"),
        ("El año pasado fuimos a Asturias.", "El año pasado [2023] fuimos a Asturias."),
    ],
)
def test_each_relative_time_is_followed_by_the_date_it_means(text, dated):
    assert with_dates(text, SAID) == dated


def test_what_is_not_a_relative_time_stays_as_written():
    # "por la mañana" is the morning, not tomorrow; a month name is not relative; no phrase, no change.
    assert with_dates("Por la mañana voy al gimnasio.", SAID) == "Por la mañana voy al gimnasio."
    assert with_dates("Esta mañana llovió, mañana no.", SAID) == "Esta mañana llovió, mañana [20 March 2024] no."
    assert with_dates("Die Hochzeit ist im September in Sintra.", SAID) == "Die Hochzeit ist im September in Sintra."
    assert with_dates("Lessons are always on Tuesdays.", SAID) == "Lessons are always on Tuesdays."


def test_phrases_do_not_overlap_and_come_in_order():
    found = relative_phrases("Vorgestern und vor 3 Tagen, gestern abend")
    assert [english for _, _, english in found] == ["day before yesterday", "3 days ago", "last night"]
    assert all(a[1] <= b[0] for a, b in zip(found, found[1:]))


def test_an_answers_relative_time_is_given_as_the_date_it_means():
    from localmem.text.time_words import absolute

    assert absolute("gestern [18 March 2024]", SAID) == "18 March 2024"  # copied from the evidence
    assert absolute("Louise est née hier [18 March 2024].", SAID) == "Louise est née 18 March 2024."
    assert absolute("Ayer.", SAID) == "18 March 2024" and absolute("昨天", SAID) == "18 March 2024"
    assert absolute("vor zwei Wochen", SAID) == "vor zwei Wochen"  # "how long ago" is answered
    assert absolute("Am 18. März", SAID) == "Am 18. März" and absolute("ayer", None) == "ayer"


def test_a_german_day_with_its_month_is_read_once():
    # "November" is German and English: read as a day of the month, it is not read again as a month.
    assert " on 11 November 1988 " in to_english("Ich bin am 11. November 1988 geboren")
    assert " in November 2023 " in to_english("im November 2023")


def test_this_morning_in_spanish_is_today_not_tomorrow():
    assert "today" in to_english("La he adoptado esta mañana")
    assert "tomorrow" in to_english("Mañana voy al veterinario")
    assert "tomorrow" not in to_english("Corro cada mañana")
