"""The kernel's views write times in the side panel's short form (``when`` in ``dom.ts``)."""

from __future__ import annotations

from datetime import datetime

from skillnb.jupyter.views.widgets import clock_time

NOW = datetime(2026, 12, 1, 18, 39, 36).astimezone()


def local(*parts: int) -> datetime:
    return datetime(*parts).astimezone()  # type: ignore[arg-type]  # year, month, day, ...


def test_today_is_the_time_alone_on_a_24_hour_clock() -> None:
    assert clock_time(local(2026, 12, 1, 9, 5, 59), NOW) == "09:05"
    assert clock_time(local(2026, 12, 1, 18, 39, 36), NOW) == "18:39"


def test_another_day_adds_month_and_day_another_year_the_year() -> None:
    assert clock_time(local(2026, 3, 4, 12, 3), NOW) == "Mar 4 12:03"
    assert clock_time(local(2025, 3, 4, 0, 3), NOW) == "Mar 4 2025 00:03"
