"""Time hints in a question: "yesterday", "last week", "on March 1", "上周", "3月1日".

:func:`time_hint` finds the first time expression of a query and turns it into a
:class:`TimeRange` — a half-open ``[start, end)`` interval of aware datetimes — relative to
``now``. Days are counted in the time zone of ``now`` (the local zone by default), so
"yesterday" means the calendar day before ``now``'s day there.

It is rules only and never fails: a query without a recognisable expression gives None.
A date without a year is the latest such date not after ``now``.

Each kind of expression is one row of ``_ROWS``: its pattern, a small reader that turns
a match into the days ``[first, end)`` it covers (None: it names no day after all), and
what any match of it holds (a text without it is not searched with the pattern).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from functools import lru_cache

from memci._dataclasses import dataclass
from memci._lazy import LazyPattern
from memci._records import NamedTuple

__all__ = ["TimeRange", "time_hint", "without_time"]


_SPACE_OR_DASH = LazyPattern(r"[\s-]+")


@dataclass(frozen=True, slots=True)
class TimeRange:
    """A half-open interval ``[start, end)``; ``label`` is the text it was read from."""

    start: datetime
    end: datetime
    label: str = ""

    def __post_init__(self) -> None:
        if self.start.tzinfo is None or self.end.tzinfo is None:
            raise ValueError("TimeRange needs aware datetimes (with a time zone)")

    def contains(self, moment: datetime) -> bool:
        """Whether ``moment`` (naive means UTC) falls in the range."""
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return self.start <= moment < self.end

    def widened(self, by: timedelta) -> TimeRange:
        """Return the range grown by ``by`` on each side."""
        return TimeRange(self.start - by, self.end + by, self.label)


_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}
_WEEKDAYS = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5,
    "sunday": 6, "mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3,
    "fri": 4, "sat": 5, "sun": 6,
}
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6,
                "1": 0, "2": 1, "3": 2, "4": 3, "5": 4, "6": 5, "7": 6}
_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
              "七": 7, "八": 8, "九": 9}
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
                 "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2,
                 "few": 3, "several": 3}

_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAY_NAMES = "|".join(sorted(_WEEKDAYS, key=len, reverse=True))
_NUM = r"\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of|few|several"
_ZH_NUM = r"[\d零〇一二两三四五六七八九十]+"


def _zh_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    if not text or any(c not in _ZH_DIGITS and c != "十" for c in text):
        return None
    if "十" in text:
        tens, _, ones = text.partition("十")
        value = (_ZH_DIGITS[tens] if tens else 1) * 10
        return value + (_ZH_DIGITS[ones] if ones else 0)
    value = 0
    for c in text:
        value = value * 10 + _ZH_DIGITS[c]
    return value


def _number(text: str) -> int:
    text = text.strip().lower()
    return int(text) if text.isdigit() else _NUMBER_WORDS.get(text, 1)


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _latest(today: date, month: int, day: int, year: int | None) -> date | None:
    """Return month/day of ``year``, or the latest one not after ``today``."""
    try:
        if year is not None:
            return date(year, month, day)
        found = date(today.year, month, day)
        return found if found <= today else date(today.year - 1, month, day)
    except ValueError:
        return None


def _latest_month(today: date, month: int, year: int | None) -> date | None:
    if not 1 <= month <= 12:
        return None
    if year is not None:
        return date(year, month, 1)
    return date(today.year if month <= today.month else today.year - 1, month, 1)


# -- the pattern kinds: each reads its match into the days [first, end) it covers -------

_Days = tuple[date, date]
_Reader = Callable[[re.Match[str], date], _Days | None]
_ONE = timedelta(days=1)
_ZH_UNITS = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week",
             "月": "month", "年": "year"}


def _day(found: date | None) -> _Days | None:
    return (found, found + _ONE) if found else None


def _month(first: date | None) -> _Days | None:
    return (first, _add_months(first, 1)) if first else None


def _monday(today: date) -> date:
    return today - timedelta(days=today.weekday())


def _zh_numbers(m: re.Match[str]) -> list[int] | None:
    """The match's groups as Chinese or Arabic numbers; None when one is neither."""
    numbers = [_zh_number(g) for g in m.groups()]
    return [n for n in numbers if n is not None] if None not in numbers else None


def _iso(m: re.Match[str], today: date) -> _Days | None:
    return _day(_latest(today, int(m.group(2)), int(m.group(3)), int(m.group(1))))


def _zh_ymd(m: re.Match[str], today: date) -> _Days | None:
    nums = _zh_numbers(m)
    return _day(_latest(today, nums[1], nums[2], nums[0])) if nums is not None else None


def _zh_md(m: re.Match[str], today: date) -> _Days | None:
    nums = _zh_numbers(m)
    return _day(_latest(today, nums[0], nums[1], None)) if nums is not None else None


def _zh_ym(m: re.Match[str], today: date) -> _Days | None:
    nums = _zh_numbers(m)
    return _month(_latest_month(today, nums[1], nums[0])) if nums is not None else None


def _zh_m(m: re.Match[str], today: date) -> _Days | None:
    nums = _zh_numbers(m)
    return _month(_latest_month(today, nums[0], None)) if nums is not None else None


def _en_date(today: date, month_name: str, day: str, year: str | None) -> _Days | None:
    return _day(_latest(today, _MONTHS[month_name.lower()], int(day),
                        int(year) if year else None))


def _en_mdy(m: re.Match[str], today: date) -> _Days | None:
    return _en_date(today, m.group(1), m.group(2), m.group(3))


def _en_dmy(m: re.Match[str], today: date) -> _Days | None:
    return _en_date(today, m.group(2), m.group(1), m.group(3))


def _en_slash(m: re.Match[str], today: date) -> _Days | None:
    return _day(_latest(today, int(m.group(1)), int(m.group(2)), None))


def _en_month(m: re.Match[str], today: date) -> _Days | None:
    return _month(_latest_month(today, _MONTHS[m.group(1).lower()],
                                int(m.group(2)) if m.group(2) else None))


def _day_before_yesterday(m: re.Match[str], today: date) -> _Days | None:
    back = 3 if m.group(0) == "大前天" else 2
    return today - back * _ONE, today - (back - 1) * _ONE


def _yesterday(m: re.Match[str], today: date) -> _Days | None:
    return today - _ONE, today


def _today(m: re.Match[str], today: date) -> _Days | None:
    return today, today + _ONE


def _ago_days(today: date, count: int, unit: str) -> _Days:
    """Around the day, week, month or year ``count`` units before ``today``."""
    if unit == "day":
        center = today - count * _ONE
        return center - _ONE, center + 2 * _ONE
    if unit == "week":
        center = today - timedelta(weeks=count)
        return center - 3 * _ONE, center + 4 * _ONE
    if unit == "month":
        first = _add_months(today.replace(day=1), -count)
        return first, _add_months(first, 1)
    return date(today.year - count, 1, 1), date(today.year - count + 1, 1, 1)


def _ago(m: re.Match[str], today: date) -> _Days | None:
    return _ago_days(today, _number(m.group(1)), m.group(2).lower())


def _zh_ago(m: re.Match[str], today: date) -> _Days | None:
    return _ago_days(today, _zh_number(m.group(1)) or 1, _ZH_UNITS[m.group(2)])


def _past_days(today: date, count: int, unit: str) -> _Days:
    """The last ``count`` days, weeks or months, today included."""
    days = count * {"day": 1, "week": 7, "month": 30}[unit]
    return today - timedelta(days=days), today + _ONE


def _past(m: re.Match[str], today: date) -> _Days | None:
    return _past_days(today, _number(m.group(1)), m.group(2).lower())


def _zh_past(m: re.Match[str], today: date) -> _Days | None:
    return _past_days(today, _zh_number(m.group(1)) or 1, _ZH_UNITS[m.group(2)])


def _weekday_in(today: date, which: str, weekday: int) -> _Days:
    """The day ``weekday`` of this week, ``prev`` week or ``prev2`` weeks back.

    Any other ``which`` ("on Monday", "last Monday", "周一") is the latest such day
    before today.
    """
    monday = _monday(today)
    if which == "this":
        found = monday + timedelta(days=weekday)
    elif which == "prev2":
        found = monday - timedelta(weeks=2) + timedelta(days=weekday)
    elif which == "prev":
        found = monday - timedelta(weeks=1) + timedelta(days=weekday)
    else:
        back = (today.weekday() - weekday) % 7 or 7
        found = today - timedelta(days=back)
    return found, found + _ONE


def _en_weekday(m: re.Match[str], today: date) -> _Days | None:
    which = (m.group(1) or "").lower()
    if not which and len(m.group(2)) <= 3:
        return None  # "sun", "sat", "wed" alone are too often plain words
    # Only "this" names a calendar week; "last Monday" is the latest Monday.
    return _weekday_in(today, "this" if which == "this" else "", _WEEKDAYS[m.group(2).lower()])


_ZH_WHICH = {"上": "prev", "上个": "prev", "上上": "prev2", "这": "this", "本": "this",
             "这个": "this"}


def _zh_weekday(m: re.Match[str], today: date) -> _Days | None:
    return _weekday_in(today, _ZH_WHICH.get(m.group(1) or "", ""), _ZH_WEEKDAYS[m.group(2)])


def _last_weekend(m: re.Match[str], today: date) -> _Days | None:
    monday = _monday(today)
    return monday - 2 * _ONE, monday


def _weekend(m: re.Match[str], today: date) -> _Days | None:
    # The latest weekend: this one when it is here, else the last.
    monday = _monday(today)
    saturday = monday + 5 * _ONE if today.weekday() >= 5 else monday - 2 * _ONE
    return saturday, saturday + 2 * _ONE


def _year(m: re.Match[str], today: date) -> _Days | None:
    year = int(m.group(1) or m.group(2))
    return date(year, 1, 1), date(year + 1, 1, 1)


def _last_week(m: re.Match[str], today: date) -> _Days | None:
    monday = _monday(today)
    return monday - timedelta(weeks=1), monday


def _this_week(m: re.Match[str], today: date) -> _Days | None:
    monday = _monday(today)
    return monday, monday + timedelta(weeks=1)


def _rolling(m: re.Match[str], today: date) -> _Days | None:
    """"The past week / month / year": the days up to today, not the calendar unit before."""
    days = {"week": 7, "month": 30, "year": 365}[m.group(1).lower()]
    return today - timedelta(days=days), today + _ONE


def _before_last(m: re.Match[str], today: date) -> _Days | None:
    """"The week / weekend / month / year before last": the one before the last one."""
    unit = m.group(1).lower()
    if unit == "weekend":
        saturday = _monday(today) - timedelta(days=9)
        return saturday, saturday + 2 * _ONE
    if unit == "week":
        monday = _monday(today) - timedelta(weeks=2)
        return monday, monday + timedelta(weeks=1)
    if unit == "month":
        first = _add_months(today.replace(day=1), -2)
        return first, _add_months(first, 1)
    return date(today.year - 2, 1, 1), date(today.year - 1, 1, 1)


# Northern-hemisphere seasons by their first month: winter runs from December into the
# next year, so "the winter of 2022" starts in December 2022.
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}


def _season(m: re.Match[str], today: date) -> _Days | None:
    """"last summer", "this spring", "in the summer of 2022", "winter 2021"."""
    which, name, year = (m.group(1) or "").lower(), m.group(2).lower(), m.group(3)
    if not which and not year:
        return None  # "in summer", "summer camp": no particular one
    first = date(int(year) if year else today.year, _SEASONS[name], 1)
    if not year:
        # The latest such season that has begun ("this" included); "last": one before
        # the latest that has ended.
        while first > today:
            first = date(first.year - 1, first.month, 1)
        if which == "last" and _add_months(first, 3) > today:
            first = date(first.year - 1, first.month, 1)
    return first, _add_months(first, 3)


_PART = {"early": (1, 11), "mid": (11, 21), "middle of": (11, 21), "late": (21, 32),
         "end of": (21, 32), "beginning of": (1, 11), "start of": (1, 11)}


def _part_of_month(m: re.Match[str], today: date) -> _Days | None:
    """"early June", "mid-May 2023", "late March", "the end of April": a third of it."""
    first = _latest_month(today, _MONTHS[m.group(2).lower()],
                          int(m.group(3)) if m.group(3) else None)
    if first is None:
        return None
    low, high = _PART[_SPACE_OR_DASH.sub(" ", m.group(1).lower()).strip()]
    end = _add_months(first, 1)
    return first.replace(day=low), min(end, first + timedelta(days=high - 1))


def _last_month(m: re.Match[str], today: date) -> _Days | None:
    return _add_months(today.replace(day=1), -1), today.replace(day=1)


def _this_month(m: re.Match[str], today: date) -> _Days | None:
    return _month(today.replace(day=1))


def _last_year(m: re.Match[str], today: date) -> _Days | None:
    return date(today.year - 1, 1, 1), date(today.year, 1, 1)


def _this_year(m: re.Match[str], today: date) -> _Days | None:
    return date(today.year, 1, 1), date(today.year + 1, 1, 1)


class _Row(NamedTuple):
    """One kind of expression: its pattern, its reader, what any match of it holds.

    ``needs``: strings of which a match holds at least one, casefolded (:data:`_DIGIT`:
    a decimal digit). A text that holds none is not searched with the pattern, so a
    process whose questions name no time never compiles it (~5 ms for all of them, in a
    fresh process's first build). ``tests/test_time_gates.py`` checks every row's needs
    against what its pattern matches.
    """

    pattern: LazyPattern
    read: _Reader
    needs: tuple[str, ...]


_DIGIT = r"\d"  # in a row's needs: any decimal digit, as ``\d`` matches it
_ANY_DIGIT = LazyPattern(r"\d")
_DIGITS = (_DIGIT,)
_MONTH_STEMS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                "dec")  # every name in _MONTHS starts with one
_WEEKDAY_STEMS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")  # and in _WEEKDAYS

#: Every kind of expression, the more specific first (when two match at the same place,
#: the one listed first wins).
_ROWS: list[_Row] = [_Row(*row) for row in (
    (LazyPattern(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\b"), _iso,
     _DIGITS),
    (LazyPattern(rf"({_ZH_NUM})年({_ZH_NUM})月({_ZH_NUM})[日号]"), _zh_ymd,
     ("年",)),
    (LazyPattern(rf"({_ZH_NUM})月({_ZH_NUM})[日号]"), _zh_md,
     ("月",)),
    (LazyPattern(rf"({_ZH_NUM})年({_ZH_NUM})月(?!份?[\d零〇一二两三四五六七八九十])"), _zh_ym,
     ("年",)),
    (LazyPattern(rf"(?<![\d年])({_ZH_NUM})月份?(?![\d零〇一二两三四五六七八九十]+[日号])"), _zh_m,
     ("月",)),
    (LazyPattern(
        rf"\b({_MONTH_NAMES})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?\b", re.I),
     _en_mdy,
     _MONTH_STEMS),
    (LazyPattern(
        rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_NAMES})\.?(?:,?\s+(\d{{4}}))?\b",
        re.I), _en_dmy,
     _MONTH_STEMS),
    (LazyPattern(r"(?<![\d/])(\d{1,2})/(\d{1,2})(?![\d/])"), _en_slash,
     ("/",)),
    (LazyPattern(rf"\b(?:in|during|of|since)\s+({_MONTH_NAMES})(?:\s+(\d{{4}}))?\b", re.I),
     _en_month,
     _MONTH_STEMS),
    (LazyPattern(r"\b(?:the\s+)?(week|weekend|month|year)\s+before\s+last\b", re.I),
     _before_last,
     ("before",)),
    (LazyPattern(r"\b(?:the|this)\s+past\s+(week|month|year)\b", re.I), _rolling,
     ("past",)),
    (LazyPattern(r"\b(?:(last|this)\s+|(?:in|during)?\s*the\s+)?(spring|summer|fall|autumn|winter)"
                r"(?:\s+(?:of\s+)?((?:19|20)\d{2}))?\b", re.I), _season,
     ("spring", "summer", "fall", "autumn", "winter")),
    (LazyPattern(rf"\b(early|mid|middle of|late|end of|beginning of|start of)[\s-]*"
                rf"(?:the\s+month\s+of\s+)?({_MONTH_NAMES})(?:,?\s+(\d{{4}}))?\b", re.I),
     _part_of_month,
     _MONTH_STEMS),
    (LazyPattern(r"\bday before yesterday\b|大前天|前天", re.I), _day_before_yesterday,
     ("yesterday", "前天")),
    (LazyPattern(r"\byesterday\b|\blast night\b|昨天|昨日|昨晚|昨夜", re.I), _yesterday,
     ("yesterday", "last night", "昨")),
    (LazyPattern(r"\btoday\b|\bthis (?:morning|afternoon|evening)\b|\btonight\b"
                r"|今天|今日|今早|今晚", re.I), _today,
     ("today", "morning", "afternoon", "evening", "tonight", "今")),
    (LazyPattern(rf"\b({_NUM})\s+(day|week|month|year)s?\s+ago\b", re.I), _ago,
     ("ago",)),
    (LazyPattern(rf"({_ZH_NUM})\s*(?:个)?(天|日|周|星期|礼拜|月|年)(?:以|之)?前"), _zh_ago,
     ("前",)),
    (LazyPattern(rf"\b(?:past|last|previous)\s+({_NUM})\s+(day|week|month)s\b", re.I), _past,
     ("past", "last", "previous")),
    (LazyPattern(rf"(?:最近|过去|近)({_ZH_NUM})\s*(?:个)?(天|日|周|星期|礼拜|月)"), _zh_past,
     ("近", "过去")),
    (LazyPattern(rf"\b(last|this|on|past)?\s*({_WEEKDAY_NAMES})\b", re.I), _en_weekday,
     _WEEKDAY_STEMS),
    (LazyPattern(r"(上上|上|这|本|这个|上个)?(?:周|星期|礼拜)([一二三四五六日天1-7])"),
     _zh_weekday,
     ("周", "星期", "礼拜")),
    (LazyPattern(r"\blast weekend\b|上周末|上个周末", re.I), _last_weekend,
     ("weekend", "周末")),
    (LazyPattern(r"\b(?:this|the|at the|on the) weekend\b|周末", re.I), _weekend,
     ("weekend", "周末")),
    (LazyPattern(r"\b(?:in|during|since)\s+((?:19|20)\d{2})\b"
                r"|((?:19|20)\d{2})年(?!\s*[\d零〇一二两三四五六七八九十]+月)", re.I), _year,
     ("19", "20")),
    (LazyPattern(r"\b(?:last|previous|past) week\b|\ba week ago\b"
                r"|上周|上个?星期|上个?礼拜|上一周", re.I), _last_week,
     ("week", "周", "星期", "礼拜")),
    (LazyPattern(r"\bthis week\b|这周|本周|这个?星期|这个?礼拜", re.I), _this_week,
     ("week", "周", "星期", "礼拜")),
    (LazyPattern(r"\b(?:last|previous|past) month\b|上个?月", re.I), _last_month,
     ("month", "月")),
    (LazyPattern(r"\bthis month\b|这个月|本月", re.I), _this_month,
     ("month", "月")),
    (LazyPattern(r"\b(?:last|previous|past) year\b|去年", re.I), _last_year,
     ("year", "去年")),
    (LazyPattern(r"\bthis year\b|今年", re.I), _this_year,
     ("year", "今年")),
)]


def _calendar_span(read: _Reader, m: re.Match[str], today: date) -> _Days | None:
    """The days ``read`` finds in ``m``; None when they leave the calendar (years 1-9999).

    "5000 years ago", "99999999 days ago", or "yesterday" on 0001-01-01 name no day a
    message can carry, so they are read as no time at all.
    """
    try:
        return read(m, today)
    except (OverflowError, ValueError):
        return None


def _folded(text: str) -> str:
    """``text`` as case-insensitive patterns see it (``ı`` matches ``i`` there too)."""
    return text.casefold().replace("ı", "i")


def _may_match(needs: tuple[str, ...], folded: str, digits: bool) -> bool:
    """Whether a row with ``needs`` can match a text (``folded``, with ``digits`` or not)."""
    return any(digits if need == _DIGIT else need in folded for need in needs)


def time_hint(query: str, *, now: datetime | None = None) -> TimeRange | None:
    """Return the time range the query names, relative to ``now``; None if none.

    The earliest expression in the text wins; when two start at the same place, the more
    specific (listed first) does. (A build asks twice for its question, the query analyzer
    and the search: the answer for a given query and moment is kept.)
    """
    return _time_hint(query, now if now is not None else datetime.now().astimezone())


@lru_cache(maxsize=256)
def _time_hint(query: str, moment: datetime) -> TimeRange | None:
    zone: tzinfo = moment.tzinfo if moment.tzinfo is not None else UTC
    moment = moment.replace(tzinfo=zone)
    today = moment.date()
    best: tuple[int, int, re.Match[str], _Reader] | None = None
    folded, digits = _folded(query), _ANY_DIGIT.search(query) is not None
    for order, (pattern, read, needs) in enumerate(_ROWS):
        if not _may_match(needs, folded, digits):
            continue
        for match in pattern.finditer(query):
            if best is not None and (match.start(), order) >= best[:2]:
                break
            if match.group(0).strip() and _calendar_span(read, match, today) is not None:
                best = (match.start(), order, match, read)
                break
    if best is None:
        return None
    span = _calendar_span(best[3], best[2], today)
    assert span is not None
    first, end = span
    try:
        start, stop = datetime.combine(first, time(), zone), datetime.combine(end, time(), zone)
        start.astimezone(UTC), stop.astimezone(UTC)  # comparable with stored times
    except (OverflowError, ValueError):
        return None
    return TimeRange(start, stop, best[2].group(0).strip())


def without_time(query: str, time_range: TimeRange | None) -> str:
    """Return ``query`` without the time expression ``time_range`` was read from, if any.

    The range replaces those words in a search; searched as keywords they match any text
    that mentions, say, a week.
    """
    if time_range is None or not time_range.label or time_range.label not in query:
        return query
    return query.replace(time_range.label, " ", 1)
