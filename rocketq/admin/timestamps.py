"""Times as mqadmin reads and prints them.

mqadmin takes a point in time (``resetOffsetByTime -s``, ``printMsg -b/-e``) as ``now``, as
milliseconds since the epoch (``-1`` and other negatives pass through: to a broker, a negative
reset time means "the end of the queue"), or as local time written ``yyyy-MM-dd#HH:mm:ss:SSS``
(``UtilAll.parseDate``). It prints times as ``yyyy-MM-dd HH:mm:ss,SSS`` local time
(``UtilAll.timeMillisToHumanString2``). Both use the local time zone, as the Java tool does.
"""

from __future__ import annotations

import datetime
import re
import time
from typing import Final

MQADMIN_DATE: Final = re.compile(r"^(\d{4})-(\d{2})-(\d{2})#(\d{2}):(\d{2}):(\d{2}):(\d{3})$")
MAX_MILLIS: Final = 253402300799999
"""9999-12-31T23:59:59.999Z: the last instant any of these formats can name."""


class TimestampError(ValueError):
    """Text that is neither ``now``, milliseconds nor ``yyyy-MM-dd#HH:mm:ss:SSS``."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def parse(text: str, *, now: int | None = None) -> int:
    """Milliseconds since the epoch for mqadmin's ``-s``/``-b``/``-e`` values."""
    value = text.strip()
    if value.lower() == "now":
        return now_ms() if now is None else now
    if re.fullmatch(r"-?\d{1,19}", value):
        millis = int(value)
        if millis > MAX_MILLIS:
            raise TimestampError(f"{text!r} is beyond year 9999 in milliseconds")
        return millis
    match = MQADMIN_DATE.match(value)
    if match is None:
        raise TimestampError(f"{text!r} is not 'now', milliseconds, or yyyy-MM-dd#HH:mm:ss:SSS")
    year, month, day, hour, minute, second, milli = (int(g) for g in match.groups())
    try:
        # whole seconds through the local zone, then the milliseconds exactly: no float rounding
        seconds = int(datetime.datetime(year, month, day, hour, minute, second).astimezone().timestamp())
    except (ValueError, OverflowError, OSError) as exc:
        raise TimestampError(f"{text!r}: {exc}") from None
    return seconds * 1000 + milli


def human(millis: int) -> str:
    """``yyyy-MM-dd HH:mm:ss,SSS`` in local time; ``-`` for 0 or negatives (never stored)."""
    if millis <= 0:
        return "-"
    try:
        moment = datetime.datetime.fromtimestamp(millis / 1000)
    except (OverflowError, OSError, ValueError):
        return str(millis)
    return moment.strftime("%Y-%m-%d %H:%M:%S,") + f"{millis % 1000:03d}"
