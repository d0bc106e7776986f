"""The simulated clock and the timestamp formats GitLab emits.

Tests move the clock forward (POST /_sim/time) to exercise updated_after
windows and ref expiry without sleeping.  Rate limiting deliberately uses
the real wall clock instead, because Retry-After and RateLimit-Reset must
mean something to a client that really waits.
"""

import datetime
import threading

UTC = datetime.timezone.utc


class Clock:
    def __init__(self):
        self._offset = datetime.timedelta(0)
        self._last = None
        self._lock = threading.Lock()

    def now(self):
        """Current simulated time, UTC, millisecond precision.

        Never goes backwards, and two calls never return the same instant:
        GitLab stores microseconds, so two events in one request still sort
        in creation order, and a client's "updated_after the largest
        updated_at seen" is not fooled by identical millisecond stamps.
        """
        with self._lock:
            t = datetime.datetime.now(UTC) + self._offset
            t = t.replace(microsecond=t.microsecond // 1000 * 1000)
            if self._last is not None and t <= self._last:
                t = self._last + datetime.timedelta(milliseconds=1)
            self._last = t
            return t

    def advance(self, seconds):
        with self._lock:
            self._offset += datetime.timedelta(seconds=seconds)

    def set(self, when):
        """Jump to an absolute time; only forwards, so times stay ordered."""
        with self._lock:
            real = datetime.datetime.now(UTC)
            target = when - real
            if target > self._offset:
                self._offset = target

    def reset(self):
        with self._lock:
            self._offset = datetime.timedelta(0)
            self._last = None


def iso(t):
    """API bodies: 2022-05-13T07:26:38.402Z."""
    if t is None:
        return None
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + \
        "%03dZ" % (t.microsecond // 1000)


def iso_seconds(t):
    """Merge request hook object_attributes: 2013-12-03T17:23:34Z."""
    if t is None:
        return None
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_words(t):
    """Note hooks and hook `changes`: 2015-05-17 18:21:36 UTC."""
    if t is None:
        return None
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def parse_iso8601(text):
    """Parse a client-supplied ISO 8601 time; None when it is not one.

    Accepts what Grape's DateTime coercion accepts in practice: a date, or a
    date-time with optional fraction and a Z or +hh:mm offset.  A '+' that
    the client forgot to percent-encode arrives as a space and is rejected,
    which is how such a bug shows up against a strict server.
    """
    if not isinstance(text, str) or not text:
        return None
    try:
        t = datetime.datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return t.astimezone(UTC)
