"""A JSON run converted to TREC in a child process with its own hard bounds, away from the process that asks.

The web process takes a JSON run (``{qid: {docid: score}}``) in a request. The
reader (:mod:`evaluation.run_json`) is bounded in what it keeps, except one
query's documents, and it costs about 0.1 s of CPU per MiB; both are a
stranger's to choose. So the conversion runs in a child, ``python -m
evaluation.run_json_child``, started by :func:`json_run_convert_in_child`:

* its standard input is the JSON content, a file the parent wrote; its
  standard output the TREC run, a file the parent created; its standard error
  one line of JSON, the report (what was written, or the problems);
* its environment is ``PATH`` alone (:data:`CHILD_ENV`): no ``SECRET_KEY``,
  database or broker address reaches it; its Python ignores ``PYTHON*``
  variables and the user's site folder (``-E -s``);
* before it reads a byte it bounds itself (:class:`ChildLimits`): its address
  space (``RLIMIT_AS``: a ``MemoryError``), its CPU time (``RLIMIT_CPU``:
  ``SIGXCPU``, then ``SIGKILL`` a second later), the file it writes
  (``RLIMIT_FSIZE``: ``EFBIG``) and core files (none). The limits are set by
  the child and not by ``preexec_fn``, which is unsafe in a threaded server
  and makes ``subprocess`` fork the whole parent instead of spawning;
* the parent waits at most the wall-clock limit, then kills it.

A child stopped by a limit raises :class:`ConversionStopped`, naming the limit;
problems in the JSON raise ``RunFormatError`` as the reader does in process.
``cut``: the content was cut at the caller's budget; the reader reaching its
end raises :class:`ContentCut` (the caller's "too large to read"), exactly
where an in-process reader would have asked for bytes past the budget.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import resource
import signal
import subprocess
import sys

from .errors import Problem, RunFormatError
from .run_json import JsonRunStats, json_run_convert

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO, NoReturn

#: The folder that holds the ``evaluation`` package: the child's working directory (``python -m`` imports from it).
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The child's whole environment.
CHILD_ENV = {"PATH": os.defpath}

#: The child's exit statuses (0: converted; 2: its arguments, argparse's).
EXIT_PROBLEMS = 1
EXIT_MEMORY = 3
EXIT_OUTPUT = 4
EXIT_CPU = 5
EXIT_CUT = 6
#: The report on standard error is read up to this many bytes (five one-line problems are far shorter).
REPORT_BYTES = 64 * 1024


class ChildLimits:
    """The child's bounds: address space and output file in bytes, CPU and wall-clock time in seconds."""

    __slots__ = ("memory_bytes", "cpu_seconds", "wall_seconds", "output_bytes")

    def __init__(self, *, memory_bytes: int, cpu_seconds: int, wall_seconds: float, output_bytes: int) -> None:
        self.memory_bytes = memory_bytes
        self.cpu_seconds = cpu_seconds
        self.wall_seconds = wall_seconds
        self.output_bytes = output_bytes


class ConversionStopped(Exception):
    """The child stopped before its report: ``limit`` is ``memory``, ``cpu``, ``time``, ``output`` or ``crash``."""

    def __init__(self, limit: str, detail: str) -> None:
        self.limit = limit
        self.detail = detail
        super().__init__(f"{limit}: {detail}")


class ContentCut(Exception):
    """The reader reached the end of content the caller cut at its budget (``cut=True``)."""


def json_run_convert_in_child(src: BinaryIO, out: BinaryIO, *, path: str, tag: str, limits: ChildLimits,
                              cut: bool = False, root: str | None = None) -> JsonRunStats:
    """Convert the JSON run ``src`` (a file, read from its offset) into the TREC run ``out`` (a file) in a child.

    Returns what was written; raises ``RunFormatError`` (the reader's problems), :class:`ContentCut` or
    :class:`ConversionStopped`. ``out`` may hold part of the lines after a refusal. ``root``: the folder the
    child imports ``evaluation`` from (default :data:`PACKAGE_ROOT`).
    """
    command = [sys.executable, "-E", "-s", "-m", "evaluation.run_json_child",
               "--path", path, "--tag", tag, "--memory", str(limits.memory_bytes),
               "--cpu", str(limits.cpu_seconds), "--output", str(limits.output_bytes)]
    if cut:
        command.append("--cut")
    out.flush()
    with subprocess.Popen(command, stdin=src, stdout=out, stderr=subprocess.PIPE, cwd=root or PACKAGE_ROOT,
                          env=CHILD_ENV, close_fds=True) as child:
        try:
            _, report = child.communicate(timeout=limits.wall_seconds)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise ConversionStopped("time", f"still running after {limits.wall_seconds:g} s") from None
    return _outcome(child.returncode, report[-REPORT_BYTES:], path)


def _outcome(status: int, report: bytes, path: str) -> JsonRunStats:
    """What the child's exit status and report say."""
    if status == EXIT_MEMORY:
        raise ConversionStopped("memory", "MemoryError")
    if status == EXIT_OUTPUT:
        raise ConversionStopped("output", "the TREC run reached the output limit")
    if status in (EXIT_CPU, -signal.SIGXCPU, -signal.SIGKILL):  # SIGKILL: the CPU limit's hard stop
        raise ConversionStopped("cpu", f"exit status {status}")
    if status == EXIT_CUT:
        raise ContentCut()
    last = report.strip().rsplit(b"\n", 1)[-1]
    try:
        said = json.loads(last) if status in (0, EXIT_PROBLEMS) else None
    except ValueError:
        said = None
    if status == 0 and isinstance(said, dict) and "lines" in said:
        stats = JsonRunStats()
        stats.queries, stats.lines, stats.bytes = int(said["queries"]), int(said["lines"]), int(said["bytes"])
        return stats
    if status == EXIT_PROBLEMS and isinstance(said, dict) and said.get("problems"):
        raise RunFormatError(path, [Problem(line, reason, rule) for line, reason, rule in said["problems"]])
    tail = report.decode("utf-8", "replace").strip().splitlines()[-3:]
    raise ConversionStopped("crash", f"exit status {status}: {' | '.join(tail)[:500]}")


# --- the child ----------------------------------------------------------------------------------------------


class _Input:
    """Standard input as the reader reads it; at its end, :class:`ContentCut` when the caller cut the content."""

    def __init__(self, fh: BinaryIO, cut: bool) -> None:
        self.fh = fh
        self.cut = cut

    def read(self, n: int = -1) -> bytes:
        data = self.fh.read(n)
        if not data and self.cut:
            raise ContentCut()
        return data


def _bound(memory_bytes: int, cpu_seconds: int, output_bytes: int) -> None:
    """The child's limits on itself, soft and hard alike (the CPU limit's hard stop a second later)."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (output_bytes, output_bytes))
    signal.signal(signal.SIGXCPU, _cpu_spent)


def _cpu_spent(signum: int, frame: object) -> NoReturn:
    os._exit(EXIT_CPU)


def _report(value: object) -> None:
    sys.stderr.write(json.dumps(value) + "\n")
    sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    """``python -m evaluation.run_json_child --path NAME --tag TAG --memory B --cpu S --output B [--cut]``."""
    args = _arguments(argv)
    _bound(args.memory, args.cpu, args.output)
    out = sys.stdout.buffer
    try:
        source: BinaryIO = _Input(sys.stdin.buffer, args.cut)  # type: ignore[assignment]  # read() is all it asks
        stats = json_run_convert(source, out, path=args.path, tag=args.tag)
        out.flush()
    except RunFormatError as exc:
        _report({"problems": [[p.line, p.reason, p.rule] for p in exc.problems]})
        return EXIT_PROBLEMS
    except ContentCut:
        return EXIT_CUT
    except MemoryError:
        os._exit(EXIT_MEMORY)  # no clean-up: it may need memory
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            os._exit(EXIT_OUTPUT)  # the buffered lines cannot be flushed at exit either
        raise
    _report({"queries": stats.queries, "lines": stats.lines, "bytes": stats.bytes})
    return 0


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m evaluation.run_json_child",
                                     description="Convert the JSON run on standard input to TREC on standard output.")
    parser.add_argument("--path", default="run.json", help="the run's name in messages")
    parser.add_argument("--tag", default="json", help="the TREC run's tag column")
    parser.add_argument("--memory", type=int, required=True, help="address space limit, bytes")
    parser.add_argument("--cpu", type=int, required=True, help="CPU time limit, seconds")
    parser.add_argument("--output", type=int, required=True, help="largest TREC output, bytes")
    parser.add_argument("--cut", action="store_true", help="the content was cut at the caller's budget")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
