"""The double entry's second implementation over the two halves of a run file, the second half in another process.

Most of the double entry's time is its plain reader, a Python loop over every
line (222,000 at BSARD scale: 0.18 of its 0.25 s of CPU), and a loop cannot be
made faster without becoming the clever code it is there to check. What can be
done is to read half the file in another process: the file is cut at a line
where the query changes near its middle, each half is read by the same plain
reader and scored by the same second implementation, and the parent joins the
two sets of per-query values.

That join gives exactly what one reading gives, because every per-query value
depends on one query's rows only, on one condition: no query has rows in both
halves. A grouped file (the usual) meets it by the choice of the cut; an
ungrouped file may not, and the parent sees it (the halves' queries intersect)
and answers None, so the caller reads the whole in one process as before.
Whatever happens to the child (an exception, a signal, a short write), the
parent reads the second half itself: the split may cost time, never a value.

A child is forked only while a core is idle (:func:`idle_core`: the kernel's CPU pressure, else the
load average): on a machine whose cores are all busy it would add the fork's
cost (copying the page tables, pages copied on write: 30–50 ms in a worker
measured on the loaded 2-core machine) to a run's CPU and give back nothing. Only a file of at most
``MAX_BYTES`` of text is split (both halves are held as
``{qid: {docid: score}}`` dicts); a larger one is read in batches in one
process (``verify._batches_of_file``). ``os.fork`` is used directly rather than
``multiprocessing``: a Celery prefork child is a daemonic process, which
``multiprocessing`` forbids to have children, and the child needs nothing but
memory it shares with the parent (copy on write) and a pipe.

The child is forked once and kept (:class:`Helper`): a process's first split
forks it, and it reads the later halves it is sent over a pipe, one at a time,
until the process that forked it goes away. A child forked for each run cost
that run twice over in pages copied on write: while it lived, the parent's own
half took 93-95 ms of CPU against 77-80 ms without it (6,000 more page faults,
the worker's process on a BSARD-scale run), and the child as many again, on
both halves' way to the result. A kept helper's pages are its own after its
first run. What it needs to compute (the judgments and the second
implementation, ``verify.SecondImplementation``) is sent when it differs from
what it has; a ``second`` that cannot be sent (a closure) is computed by a
child forked for that run, as before. A half not joined (an error in the first
entry, a time limit) ends the helper (the next split forks another), so that
an answer never waits in the pipe for the wrong run; so does a helper that grew
past :data:`HELPER_MAX_RSS_KIB` once it has answered.
"""

from __future__ import annotations

import os
import pickle
import resource
import signal
import struct
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from . import reference

#: The most text (bytes, after gunzip) split into two processes; a longer run is read in batches in one.
MAX_BYTES = 32 << 20
#: Lines looked at past the middle for the next query's first line; a query longer than this is not split around.
MAX_LOOK = 100_000
#: A helper whose peak resident memory passed this many KiB leaves once it has answered (its next split forks a
#: fresh one): a run of MAX_BYTES held as dicts does not stay in a worker's memory.
HELPER_MAX_RSS_KIB = 768 * 1024

Values = dict[str, dict[str, float]]
#: The second implementation on some queries: ``(judgments of the queries, their rows) -> per-query values``.
Second = Callable[[dict[str, dict[str, int]], dict[str, dict[str, float]]], Values]

_CHILD_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def values_in_two(source: reference.TextSource, qrels: Mapping[str, dict[str, int]], wanted: set[str],
                  second: Second, *, max_bytes: int = MAX_BYTES) -> Values | None:
    """The second implementation's values of the ``wanted`` queries the run has, read and computed in two processes.

    None when the run is not split: larger than ``max_bytes``, too short to
    cut, no line near the middle where the query changes, no ``os.fork``, or
    a query with rows in both halves (an ungrouped file). The caller then
    reads it in one process.
    """
    later = LaterHalf.start(source, qrels, wanted, second, max_bytes=max_bytes)
    if later is None:
        return None
    try:
        return later.values()
    finally:
        later.close()


class LaterHalf:
    """A run file's later half being read and scored in another process while this process goes on (the worker:
    with its first entry); :meth:`values` reads the first half here and joins the two. :meth:`close` stops a
    process not joined, whatever happened meanwhile (an error in the first entry, say): a child forked for this
    run is killed and reaped, the kept helper (:class:`Helper`) is ended."""

    def __init__(self, half: Callable[[bytes], tuple[Values, set[str]]], first: bytes, later: bytes,
                 helper: Helper | None = None):
        self._half, self._first, self._later, self._helper = half, first, later, helper
        self._read_end = -1
        if helper is not None:
            self._pid: int | None = helper.pid
            return
        self._read_end, write_end = os.pipe()
        self._pid = os.fork()
        if self._pid == 0:
            _child(half, later, self._read_end, write_end)  # never returns
        os.close(write_end)

    @classmethod
    def start(cls, source: reference.TextSource, qrels: Mapping[str, dict[str, int]], wanted: set[str],
              second: Second, *, max_bytes: int = MAX_BYTES, share: float = 0.5) -> LaterHalf | None:
        """The later half (from the first query change past ``share`` of the file's bytes) sent to this process's
        helper, or read by a child forked for it when ``second`` cannot be sent; or nothing to start (the file is
        not split: see :func:`values_in_two`)."""
        if not hasattr(os, "fork") or not idle_core():
            return None
        data = reference.read_text_bytes(source, max_bytes)
        cut = None if data is None else split_point(data, share=share)
        if data is None or cut is None:
            return None

        def half(text: bytes) -> tuple[Values, set[str]]:
            return _half_values(text, qrels, wanted, second)

        later = data[cut:]
        return cls(half, data[:cut], later, Helper.send(later, qrels, wanted, second))

    def values(self) -> Values | None:
        """Both halves' values joined (the first read here), or None when a query has rows in both (ungrouped)."""
        mine = self._half(self._first)
        theirs = self._join()
        later = theirs if theirs is not None else self._half(self._later)
        if mine[1] & later[1]:
            return None
        return {**mine[0], **later[0]}

    def _join(self) -> tuple[Values, set[str]] | None:
        """The other process's answer (None if it gave none); a forked child reaped, the helper kept."""
        if self._helper is not None:
            found = self._helper.answer()  # interrupted (a time limit): close() ends the helper, the answer unread
            self._helper = self._pid = None
            return found
        with os.fdopen(self._read_end, "rb") as pipe:
            answer = pipe.read()
        assert self._pid is not None
        _, status = os.waitpid(self._pid, 0)
        self._pid = None
        return _unpickled(answer) if status == 0 else None

    def close(self) -> None:
        """Stop a process not joined (nothing to do after :meth:`values`)."""
        if self._helper is not None:
            self._helper.end()
            self._helper = self._pid = None
        if self._pid is not None:
            try:
                os.kill(self._pid, signal.SIGKILL)
            finally:
                os.close(self._read_end)
                os.waitpid(self._pid, 0)
                self._pid = None


class Helper:
    """This process's kept child for later halves (see the module's docstring): forked at the first split, fed over
    one pipe, answering over another, a frame (length, pickle) each way. One at a time: a half is sent only while
    none is outstanding (a half not joined ends the helper)."""

    #: The helper of the process whose pid is the key's (a process forked from this one does not use its parent's).
    _kept: ClassVar[dict[int, Helper]] = {}

    def __init__(self) -> None:
        jobs_read, self._jobs = os.pipe()
        self._answers, answers_write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(self._jobs)
            os.close(self._answers)
            _serve(jobs_read, answers_write)  # never returns
        os.close(jobs_read)
        os.close(answers_write)
        self._state: tuple[Mapping[str, dict[str, int]], Second] | None = None

    @classmethod
    def kept(cls) -> Helper | None:
        """This process's helper, if it has one now (one forked from a parent's is never its)."""
        return cls._kept.get(os.getpid())

    @classmethod
    def send(cls, later: bytes, qrels: Mapping[str, dict[str, int]], wanted: set[str],
             second: Second) -> Helper | None:
        """This process's helper with the ``later`` half sent to it (forked, or forked again, as needed); None when
        ``second`` cannot be sent (the caller forks a child for this run)."""
        helper = cls.kept()
        if helper is not None and not helper.alive():
            helper.end()
            helper = None
        state = None
        if helper is None or not helper._has(qrels, second):
            try:  # before any fork: a second that cannot be sent is a child's for this run
                state = pickle.dumps((qrels, second), protocol=pickle.HIGHEST_PROTOCOL)
            except (pickle.PicklingError, AttributeError, TypeError):
                return None
        job = pickle.dumps(wanted, protocol=pickle.HIGHEST_PROTOCOL)
        for _ in range(2):  # a helper gone since its last answer (it grew too large, it was killed): a new one
            if helper is None:
                helper = cls._kept[os.getpid()] = cls()
            try:
                if not helper._has(qrels, second):
                    if state is None:
                        state = pickle.dumps((qrels, second), protocol=pickle.HIGHEST_PROTOCOL)
                    _write_frame(helper._jobs, b"S", state)
                    helper._state = (qrels, second)
                _write_frame(helper._jobs, b"H" + struct.pack("<Q", len(job)) + job, later)
                return helper
            except OSError:
                helper.end()
                helper = None
        return None

    def _has(self, qrels: Mapping[str, dict[str, int]], second: Second) -> bool:
        """Whether the helper holds these judgments (the same object) and an equal second implementation."""
        return self._state is not None and self._state[0] is qrels and self._state[1] == second

    def alive(self) -> bool:
        """Whether the helper still runs (one found gone is reaped here)."""
        try:
            return os.waitpid(self.pid, os.WNOHANG)[0] == 0
        except ChildProcessError:
            return False

    def answer(self) -> tuple[Values, set[str]] | None:
        """The answer to the half sent last (None when the helper gave none: it is ended, the next split forks
        another; so is a helper that says it leaves, having grown past HELPER_MAX_RSS_KIB)."""
        try:
            frame = _read_frame(self._answers)
        except OSError:
            frame = None
        found = _unpickled(memoryview(frame)[1:]) if frame else None
        if found is None or frame is None or frame[0] == ord("L"):
            self.end()
        return found

    def end(self) -> None:
        """Kill and reap the helper, and forget it."""
        if Helper._kept.get(os.getpid()) is self:
            del Helper._kept[os.getpid()]
        for fd in (self._jobs, self._answers):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _write_frame(fd: int, head: bytes, body: bytes) -> None:
    """One frame: its length (8 bytes), then ``head`` and ``body``, written whole (``body``, a run's half, is not
    copied)."""
    for view in (memoryview(struct.pack("<Q", len(head) + len(body)) + head), memoryview(body)):
        while view:
            view = view[os.write(fd, view):]


def _read_frame(fd: int) -> bytearray | None:
    """One frame's payload, None at the end of the pipe (or a frame cut short)."""
    head = _read_exactly(fd, 8)
    if head is None:
        return None
    return _read_exactly(fd, struct.unpack("<Q", head)[0])


def _read_exactly(fd: int, n: int) -> bytearray | None:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = os.readv(fd, [view[got:]])
        if k == 0:
            return None
        got += k
    return buf


def _serve(jobs: int, answers: int) -> None:
    """In the helper: answer each half sent, with the state last sent; leave at the end of the jobs' pipe, or
    after an answer once grown past HELPER_MAX_RSS_KIB."""
    status = 1
    try:
        _close_inherited(keep=(jobs, answers))
        for number in _CHILD_SIGNALS:  # the worker's own handlers (a warm shutdown) are not the helper's
            signal.signal(number, signal.SIG_DFL)
        state: Any = None
        while (frame := _read_frame(jobs)) is not None:
            view = memoryview(frame)
            if frame[0] == ord("S"):
                state = pickle.loads(view[1:])
                continue
            size = struct.unpack("<Q", view[1:9])[0]
            wanted = pickle.loads(view[9:9 + size])
            qrels, second = state
            try:
                payload = pickle.dumps(_half_values(bytes(view[9 + size:]), qrels, wanted, second),
                                       protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001 (the parent reads the half itself: the split costs time, never a value)
                payload = b""
            del view, frame
            leaving = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > HELPER_MAX_RSS_KIB
            _write_frame(answers, b"L" if leaving else b"A", payload)
            if leaving:
                break
        status = 0
    finally:
        os._exit(status)


#: Where the kernel says how often runnable tasks waited for a CPU (pressure stall information, Linux 4.20+): the
#: cgroup file first (in a container with its own cgroup namespace, the usual, the container's own, CPU quota
#: included; on a host, the root cgroup's, the same as the machine's), then the whole machine's.
PRESSURE_FILES = ("/sys/fs/cgroup/cpu.pressure", "/proc/pressure/cpu")
#: The share of the last 10 s in which some runnable task waited for a CPU, in percent, at or below which a core
#: counts as free: 15-17% was read while bench_e2e's stack scored one upload after another on the shared 2-core
#: machine (the split paying), near 100% on cores kept busy by more tasks than they have.
MAX_PRESSURE = 40.0


def cpu_pressure(files: tuple[str, ...] = PRESSURE_FILES) -> float | None:
    """``some avg10`` of the first pressure file that can be read (percent), None where none can."""
    for path in files:
        try:
            with open(path) as f:
                first = f.readline().split()
        except OSError:
            continue
        fields = dict(part.split("=", 1) for part in first[1:] if "=" in part)
        if first[:1] == ["some"] and "avg10" in fields:
            try:
                return float(fields["avg10"])
            except ValueError:
                continue
    return None


def idle_core(files: tuple[str, ...] = PRESSURE_FILES) -> bool:
    """Whether a core is likely free for the child. On a machine whose cores are all busy (every worker scoring,
    or other work) a child only adds the fork's cost to a run's CPU: the run is then read in one process.

    Asked of the kernel's CPU pressure where it tells (:func:`cpu_pressure`: runnable tasks waited for a CPU at
    most :data:`MAX_PRESSURE` % of the last 10 s), which sees a container's CPU quota and the recent seconds;
    elsewhere of the load over the last minute (``os.getloadavg``), which must leave half a core of those this
    process may run on (it lags: the bench's own uploads kept it at 1.4-1.6 on 2 cores, refusing splits that paid).
    Not the tasks runnable at this instant: at the instant a scoring starts the web process may still be
    answering its upload (2-5 runnable tasks were counted there in bench_e2e, where the split still paid).
    True where neither can be read."""
    pressure = cpu_pressure(files)
    if pressure is not None:
        return pressure <= MAX_PRESSURE
    try:
        load = os.getloadavg()[0]
    except OSError:
        return True
    return load <= len(os.sched_getaffinity(0)) - 0.5


def split_point(data: bytes, *, share: float = 0.5) -> int | None:
    """The start of the first line past ``share`` of the bytes (the middle) whose query differs from the line
    before's; None if none.

    Blank and ``#`` lines belong to neither query (they are skipped by the
    reader), so they are passed over on both sides of the cut.
    """
    cut = data.find(b"\n", int(len(data) * share)) + 1
    if cut <= 0 or cut >= len(data):
        return None
    before = _last_query_before(data, cut)
    if before is None:
        return None
    for _ in range(MAX_LOOK):
        end = data.find(b"\n", cut)
        line = data[cut:] if end < 0 else data[cut:end]
        q = _query_of(line)
        if q is not None and q != before:
            return cut
        if end < 0:
            return None
        cut = end + 1
    return None


def _last_query_before(data: bytes, cut: int) -> bytes | None:
    end = cut - 1  # the newline ending the line before the cut
    for _ in range(MAX_LOOK):
        start = data.rfind(b"\n", 0, end) + 1
        q = _query_of(data[start:end])
        if q is not None:
            return q
        if start == 0:
            return None
        end = start - 1
    return None


def _query_of(line: bytes) -> bytes | None:
    """A data line's query id, as the plain reader reads it (first token); None for a blank or ``#`` line."""
    parts = line.split(None, 1)
    if not parts or parts[0].startswith(b"#"):
        return None
    return parts[0]


def _half_values(text: bytes, qrels: Mapping[str, dict[str, int]], wanted: set[str],
                 second: Second) -> tuple[Values, set[str]]:
    """One half: the second implementation's values of its wanted queries, and every query it has rows of."""
    rows: dict[str, dict[str, float]] = {}
    for q, docs in reference.plain_run_groups([text.decode("utf-8")]):
        if q in rows:  # an ungrouped query comes back within the half: merged, as the one-process reading does
            rows[q].update(docs)
        else:
            rows[q] = docs
    judged = {q: qrels[q] for q in rows if q in wanted}
    return (second(judged, {q: rows[q] for q in judged}) if judged else {}), set(rows)


def _child(half: Callable[[bytes], tuple[Values, set[str]]], later: bytes, read_end: int, write_end: int) -> None:
    """In the forked child: compute ``half(later)``, write it pickled, leave without the parent's exit handlers."""
    status = 1
    try:
        _close_inherited(keep=(write_end,))
        for number in _CHILD_SIGNALS:  # the worker's own handlers (a warm shutdown) are not the child's
            signal.signal(number, signal.SIG_DFL)
        payload = pickle.dumps(half(later), protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(payload)
        status = 0
    finally:
        os._exit(status)


def _close_inherited(*, keep: tuple[int, ...]) -> None:
    """Close every descriptor the child inherited but its standard streams and ``keep``: the parent's database and
    broker connections among them. A socket stays open while any process holds it: the broker would go on sending
    to a connection the parent had closed, to a process that never reads it."""
    start = 3
    for fd in sorted(keep):
        os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1 << 16)


def _unpickled(answer: bytes | bytearray | memoryview) -> tuple[Values, set[str]] | None:
    """The child's answer; None for one cut short (the child killed while writing). Only our own child writes
    to this pipe, so unpickling it trusts nothing outside this process."""
    try:
        values, queries = pickle.loads(answer)
    except Exception:  # noqa: BLE001 (a short or empty answer: the half is computed again here)
        return None
    return values, queries


__all__ = ["HELPER_MAX_RSS_KIB", "MAX_BYTES", "MAX_PRESSURE", "PRESSURE_FILES", "Helper", "LaterHalf", "cpu_pressure",
           "idle_core", "split_point", "values_in_two"]
