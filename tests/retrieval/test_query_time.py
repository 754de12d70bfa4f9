"""The rule-based parser of the time a query names (no LLM)."""

from __future__ import annotations

import datetime as dt

import pytest

from localmem.retrieval.query_time import EARLIEST, LATEST, asks_when, parse_query_time

NOW = dt.date(2023, 10, 22)


@pytest.mark.parametrize(
    "query, start, end",
    [
        ("What did Caroline do in June 2023?", "2023-06-01", "2023-06-30"),
        ("What did Mel paint last spring?", "2023-03-01", "2023-05-31"),
        ("Where was Ann the week before Christmas 2022?", "2022-12-18", "2022-12-24"),
        ("What happened between March and May?", "2023-03-01", "2023-05-31"),
        ("between November and February", "2022-11-01", "2023-02-28"),
        ("What did Bob do two years ago?", "2021-01-01", "2021-12-31"),
        ("What did she do on 8 May?", "2023-05-08", "2023-05-08"),
        ("on May 8th, 2023", "2023-05-08", "2023-05-08"),
        ("in 2022", "2022-01-01", "2022-12-31"),
        ("What happened last Friday?", "2023-10-20", "2023-10-20"),
        ("Who came over on Easter 2023?", "2023-04-09", "2023-04-09"),
        ("What did we do at Thanksgiving?", "2022-11-24", "2022-11-24"),
        ("What did Ann read in the summer of 2022?", "2022-06-01", "2022-08-31"),
        ("in December", "2022-12-01", "2022-12-31"),  # the most recent December
        ("What did I do on 30 December?", "2022-12-30", "2022-12-30"),  # a question looks back
        ("What happened on Friday, 20 October?", "2023-10-20", "2023-10-20"),
    ],
)
def test_ranges(query, start, end):
    found = parse_query_time(query, NOW)
    assert found is not None and (found.start.isoformat(), found.end.isoformat()) == (start, end)


def test_open_ended_ranges():
    before = parse_query_time("What did Bob do before 8 May 2023?", NOW)
    assert (before.start, before.end) == (EARLIEST, dt.date(2023, 5, 7))
    after = parse_query_time("Where did she live after the summer of 2022?", NOW)
    assert (after.start, after.end) == (dt.date(2022, 9, 1), LATEST)
    since = parse_query_time("What changed since January?", NOW)
    assert (since.start, since.end) == (dt.date(2023, 1, 1), NOW)


@pytest.mark.parametrize(
    "query",
    ["When did Caroline go to the support group?", "I may have 2000 dollars", "What is Melanie's favourite book?", ""],
)
def test_no_time_named(query):
    assert parse_query_time(query, NOW) is None


def test_contains_overlap():
    june = parse_query_time("in June 2023", NOW)
    assert june.contains(dt.date(2023, 6, 30)) and not june.contains(dt.date(2023, 7, 1))
    assert june.contains(dt.date(2023, 5, 20), dt.date(2023, 6, 2)) and not june.contains(None)


# -- relative times in what was said, written against the day it was said -------------------------

SAID_ON = dt.date(2023, 7, 15)  # a Saturday


@pytest.mark.parametrize(
    "phrase, meaning",
    [
        ("yesterday", "14 July 2023"),
        ("tonight", "15 July 2023"),
        ("two days ago", "13 July 2023"),
        ("last week", "the week before 15 July 2023"),
        ("next week", "the week after 15 July 2023"),
        ("last weekend", "the weekend before 15 July 2023"),
        ("two weekends ago", "two weekends before 15 July 2023"),
        ("a week ago", "a week before 15 July 2023"),
        ("3 weeks ago", "3 weeks before 15 July 2023"),
        ("last Friday", "the Friday before 15 July 2023"),
        ("next Tuesday", "the Tuesday after 15 July 2023"),
        ("last month", "June 2023"),
        ("two months ago", "May 2023"),
        ("last year", "2022"),
        ("in June", None),  # not relative: said as it is
        ("in 2022", None),
        ("whenever", None),
    ],
)
def test_a_relative_time_is_written_against_the_day_it_was_said(phrase, meaning):
    from localmem.text.times import anchored

    assert anchored(phrase, SAID_ON) == meaning


def test_with_dates_follows_each_relative_time_with_what_it_means():
    from localmem.text.times import with_dates

    text = "I went to a support group yesterday! Last week too. I may go again in May 2024."
    assert with_dates(text, dt.date(2023, 5, 8)) == (
        "I went to a support group yesterday [7 May 2023]! Last week [the week before 8 May 2023] too. "
        "I may go again in May 2024."
    )
    assert with_dates("Nothing relative here.", SAID_ON) == "Nothing relative here."


@pytest.mark.parametrize(
    "text, said_on, day",
    [
        ("My start date is Monday 15 April.", "2024-03-26", "2024-04-15"),  # a plan: the coming April
        ("I started at Severn Rail on 15 April.", "2024-04-18", "2024-04-15"),
        ("Signed up for the sportive on 24 March!", "2024-02-25", "2024-03-24"),
        ("We bought it on Thursday, February 15.", "2024-02-20", "2024-02-15"),
        ("Booked for the 3rd of January.", "2023-12-20", "2024-01-03"),  # across the new year
        ("Back on December 28th.", "2024-01-05", "2023-12-28"),
        ("The lease was signed on January 12, 2023.", "2024-02-20", "2023-01-12"),  # a year said is kept
        ("Born on 29 February 2024.", "2024-06-01", "2024-02-29"),
    ],
)
def test_a_day_with_its_month_is_that_day_in_the_year_nearest_the_message(text, said_on, day):
    from localmem.text.times import find_time_phrases

    found = find_time_phrases(text, dt.date.fromisoformat(said_on))
    assert [span.start.isoformat() for _phrase, span in found] == [day]
    assert found[0][1].precision == "day"


def test_on_a_weekday_is_the_last_one_or_in_a_sentence_about_the_future_the_coming_one():
    from localmem.text.times import find_time_phrases, with_dates

    said = dt.date(2024, 2, 20)  # a Tuesday
    text = "Then on Thursday we bought a Subaru! We're flying out on Saturday. I'll call on Mon."
    assert [(p, span.start.isoformat()) for p, span in find_time_phrases(text, said)] == [
        ("on Thursday", "2024-02-15"),
        ("on Saturday", "2024-02-24"),
        ("on Mon", "2024-02-26"),
    ]
    assert (
        with_dates("Then on Thursday we bought a Subaru.", said)
        == "Then on Thursday [the Thursday before 20 February 2024] we bought a Subaru."
    )
    # With its date, the weekday is part of the date.
    assert with_dates("It starts on Monday 15 April.", said) == "It starts on Monday 15 April [15 April 2024]."


def test_a_day_with_its_month_is_followed_by_its_year_only_when_none_is_said():
    from localmem.text.times import with_dates

    said = dt.date(2024, 3, 26)
    assert with_dates("My start date is Monday 15 April.", said) == "My start date is Monday 15 April [15 April 2024]."
    assert with_dates("It opened on 15 April 2023.", said) == "It opened on 15 April 2023."
    assert with_dates("I may 3D-print it, or 31 April.", said) == "I may 3D-print it, or 31 April."


@pytest.mark.parametrize(
    "answer, meaning",
    [
        ("yesterday [7 May 2023]", "7 May 2023"),  # copied from the evidence, brackets and all
        ("last Friday [the Friday before 15 July 2023]", "the Friday before 15 July 2023"),
        ("last week", "the week before 15 July 2023"),  # only a relative time: read on the day said
        ("Last week.", "the week before 15 July 2023"),
        ("ten years ago", "ten years ago"),  # answers "how long ago"
        ("the week before 9 June 2023", "the week before 9 June 2023"),
        ("June 2023", "June 2023"),
        ("pottery", "pottery"),
    ],
)
def test_an_answer_gives_its_relative_times_as_dates(answer, meaning):
    from localmem.text.times import absolute

    assert absolute(answer, SAID_ON) == meaning
    assert absolute("last week", None) == "last week"  # nothing to count from


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("When did Nate win his first tournament?", True),
        ("In what year did Joanna move?", True),
        ("Which month was the party in?", True),
        ("How long ago did she adopt Pixie?", True),
        ("What did she do when she was young?", False),  # "when" not asked
        ("Where did they meet?", False),
    ],
)
def test_asks_when(query, asks):
    assert asks_when(query) is asks
