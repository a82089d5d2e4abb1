"""Progress on long work: what is being done, n of N, and the LLM calls and tokens so far.

A flow tells the reporter of the current context (:func:`current`) what it is doing:
``task("consolidate", total=12)`` when a stage starts (with its size when known), then for each
item ``item("billing")`` as it starts and ``done()`` as it ends (``each`` does both around a
loop), and ``detail("chunk 2/5")`` for where inside an item it is. The one LLM call path
(``backends.call``) adds each call with ``called(tokens)``. Nothing is shown unless a caller
installs a reporter for the duration of a call with :func:`reporting`: the Session methods do
so with the ``progress`` they are given, and the CLI gives a :class:`TerminalProgress`. The
default reporter does nothing, so a flow run from Python or by a scheduled job pays a method
call per item.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import TextIO, TypeVar

T = TypeVar("T")


class Progress:
    """Counts what a run has done; shows nothing. Override :meth:`changed` (called on every
    change) and :meth:`ended` (a stage ended; ``final``: the whole run) to show it."""

    def __init__(self) -> None:
        self.name = ""  # the stage
        self.total: int | None = None  # its items, when known
        self.count = 0  # items finished
        self.current = ""  # the item being worked on
        self.note = ""  # where inside it
        self.calls = 0  # LLM calls of the whole run
        self.tokens = 0
        self.started = time.monotonic()  # of the stage

    def task(self, name: str, total: int | None = None) -> None:
        """A new stage of the run: ``name``, with ``total`` items when known."""
        if self.name:
            self.ended(final=False)
        self.name, self.total, self.count, self.current, self.note = name, total, 0, "", ""
        self.started = time.monotonic()
        self.changed(started=False, stage=True)

    def item(self, what: str) -> None:
        """Work on ``what`` starts (an entry, a domain, a file, a page)."""
        self.current, self.note = what, ""
        self.changed(started=True)

    def done(self, n: int = 1) -> None:
        """``n`` more items are finished."""
        self.count += n
        self.current = self.note = ""
        self.changed(started=False)

    def each(self, items: Iterable[T], name: Callable[[T], str] = str) -> Iterator[T]:
        """``items``, each shown as started (``item``) before the loop body and as finished
        (``done``) after it, ``continue`` included."""
        for value in items:
            self.item(name(value))
            yield value
            self.done()

    def detail(self, text: str) -> None:
        """Where inside the current item the work is (``part 2/5``)."""
        self.note = text
        self.changed(started=False)

    def called(self, tokens: int) -> None:
        """One LLM call was made, of ``tokens`` tokens (in and out)."""
        self.calls += 1
        self.tokens += max(0, tokens)
        self.changed(started=False)

    def finish(self) -> None:
        """The run ended (or failed)."""
        self.ended(final=True)

    def changed(self, *, started: bool, stage: bool = False) -> None:
        """Something changed; ``started``: a new item began; ``stage``: a new stage."""

    def ended(self, *, final: bool) -> None:
        """The stage ended; ``final``: so did the run."""

    def line(self) -> str:
        """``consolidate billing (3/12), chunk 2/4 · 5 LLM calls, 12,345 tokens``"""
        text = self.name
        if self.current:
            text += f" {self.current}"
        if self.total is not None:
            text += f" ({min(self.count + (1 if self.current else 0), self.total)}/{self.total})"
        elif self.count:
            text += f" ({self.count})"
        if self.note:
            text += f", {self.note}"
        return text + self._cost(" · ")

    def summary(self) -> str:
        """``consolidate: 12 of 12, 5 LLM calls, 12,345 tokens, 3.1 s``"""
        if self.total is not None:
            count = f"{self.count} of {self.total}"
        else:
            count = f"{self.count} done" if self.count else "done"
        took = time.monotonic() - self.started
        return f"{self.name}: {count}{self._cost(', ')}, {took:.1f} s"

    def _cost(self, sep: str) -> str:
        if not self.calls:
            return ""
        return f"{sep}{self.calls} LLM call{'s' if self.calls != 1 else ''}, {self.tokens:,} tokens"


class TerminalProgress(Progress):
    """One line on ``stream`` (stderr on a terminal), rewritten in place (at most ten times a
    second, but always as a stage or an item of a stage of at most 200 starts) and cleared
    when the run ends. ``verbose``: kept lines instead, on a terminal or
    not (they were asked for): one per item (one a second when a stage has over 200), and one
    as each stage ends."""

    WIDTH = 100

    def __init__(self, stream: TextIO, *, verbose: bool = False) -> None:
        super().__init__()
        self.stream = stream
        self.verbose = verbose
        self._drawn = False
        self._last = 0.0
        self._broken = False

    def changed(self, *, started: bool, stage: bool = False) -> None:
        now = time.monotonic()
        few = self.total is not None and self.total <= 200
        if self.verbose:
            if started and (few or now - self._last >= 1.0):
                self._last = now
                self._write(f"{self.line()}\n")
            return
        if self._drawn and now - self._last < 0.1 and not (stage or (started and few)):
            return  # a new stage, or item of a short stage, is always drawn: it may take long
        self._last = now
        self._write(f"\r\x1b[K{self.line()[: self.WIDTH - 1]}")
        self._drawn = True

    def ended(self, *, final: bool) -> None:
        if self.verbose:
            if self.name:
                self._write(f"{self.summary()}\n")
        elif final and self._drawn:
            self._write("\r\x1b[K")
            self._drawn = False

    def _write(self, text: str) -> None:
        if self._broken:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr never fails the run
            self._broken = True


class _Silent(Progress):
    """The default: keeps nothing, shows nothing."""

    def task(self, name: str, total: int | None = None) -> None:
        pass

    def item(self, what: str) -> None:
        pass

    def done(self, n: int = 1) -> None:
        pass

    def detail(self, text: str) -> None:
        pass

    def called(self, tokens: int) -> None:
        pass


SILENT: Progress = _Silent()
_CURRENT: ContextVar[Progress | None] = ContextVar("llm_wiki_progress", default=None)


def current() -> Progress:
    """The reporter installed for this call, else one that shows nothing."""
    return _CURRENT.get() or SILENT


@contextlib.contextmanager
def reporting(progress: Progress | None) -> Iterator[Progress]:
    """Make ``progress`` the reporter while the block runs (None: keep the one in place), and
    tell it when the block ends, however it ends."""
    if progress is None:
        yield current()
        return
    token = _CURRENT.set(progress)
    try:
        yield progress
    finally:
        _CURRENT.reset(token)
        progress.finish()
