"""Counting between dates by the calendar: month ends, leap years, weeks."""

from __future__ import annotations

import datetime as dt

import pytest

from localmem.text.times import (
    count_between,
    months_between,
    weeks_between,
    years_between,
)

D = dt.date


@pytest.mark.parametrize(
    "start, end, months",
    [
        (D(2024, 1, 31), D(2024, 2, 29), 1),  # a shorter month's last day completes the month
        (D(2023, 1, 31), D(2023, 2, 28), 1),
        (D(2024, 1, 31), D(2024, 2, 28), 0),  # not the last day of a leap February
        (D(2024, 3, 15), D(2024, 4, 14), 0),
        (D(2024, 3, 15), D(2024, 4, 15), 1),
        (D(2023, 11, 30), D(2024, 2, 29), 3),
        (D(2024, 5, 1), D(2024, 5, 31), 0),
        (D(2024, 4, 15), D(2024, 3, 15), -1),
    ],
)
def test_months_between_counts_calendar_months(start, end, months):
    assert months_between(start, end) == months


@pytest.mark.parametrize(
    "start, end, years",
    [
        (D(2020, 2, 29), D(2021, 2, 28), 1),  # a leap-day birthday is had on 28 February
        (D(2020, 2, 29), D(2021, 2, 27), 0),
        (D(1990, 6, 15), D(2024, 6, 14), 33),
        (D(1990, 6, 15), D(2024, 6, 15), 34),
        (D(2000, 12, 31), D(2001, 12, 31), 1),
    ],
)
def test_years_between_counts_birthdays(start, end, years):
    assert years_between(start, end) == years


@pytest.mark.parametrize("days, weeks", [(0, 0), (6, 0), (7, 1), (20, 2), (184, 26), (-8, -1)])
def test_weeks_are_whole_weeks(days, weeks):
    start = D(2024, 3, 24)
    assert weeks_between(start, start + dt.timedelta(days=days)) == weeks


def test_days_across_a_leap_day_and_the_unit_names():
    assert count_between(D(2024, 2, 28), D(2024, 3, 1), "days") == 2
    assert count_between(D(2023, 2, 28), D(2023, 3, 1), "days") == 1
    assert count_between(D(2024, 1, 22), D(2024, 4, 15), "days") == 84
    with pytest.raises(ValueError):
        count_between(D(2024, 1, 1), D(2024, 1, 2), "fortnights")


def test_days_of_the_month_without_their_month():
    from localmem.text.times import days_of_month

    def days(text, said):
        return [span.start.isoformat() for _phrase, span in days_of_month(text, dt.date.fromisoformat(said))]

    assert days("The Leeds Half was on Sunday the 12th and I ran 1:48:37!", "2024-05-14") == ["2024-05-12"]
    assert days("Holyhead to Cardiff in five days, the 24th to the 28th.", "2024-08-30") == ["2024-08-24", "2024-08-28"]
    assert days("I turned 34 on the 3rd.", "2024-03-20") == ["2024-03-03"]  # past: the last one
    assert days("We're flying out on the 3rd.", "2024-05-10") == ["2024-06-03"]  # ahead: the next one
    assert days("My 3rd attempt, on the 3rd of May.", "2024-05-20") == []  # a day with its month is not one
    assert days("the 31st", "2024-03-02") == []  # nothing says it is a date
