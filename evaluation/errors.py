"""Errors and notices of the metric core.

Every refusal carries the file name, the line and a reason that tells a person
what to fix, so the same exception can be shown in a form, an API answer, a
failed submission or on the command line. Notices are the warnings that do not
stop scoring (missing queries, ties, cut rows...). Neither ever contains the
contents of hidden qrels: only counts and identifiers taken from the run.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

#: Parsing stops after this many problems: enough to show a pattern, few
#: enough to read. It is also how many problems an error keeps one by one, and
#: how many different rules (kinds of problem) it tells apart.
MAX_PROBLEMS = 20

#: The run readers keep counting problems of the kinds already seen up to this
#: many lines, so that a refusal says how many lines share a problem ("all
#: 5,000 lines: …") in bounded time and memory (a count per rule).
MAX_COUNTED_PROBLEMS = 10_000

#: A group of problems keeps this many of its line numbers.
GROUP_LINES = 10


class _Record:
    """A small immutable record: equal, hashed and shown by its fields (``__slots__``), like a frozen dataclass.

    Written out rather than ``@dataclass(frozen=True)`` because every command line start imports this module
    and ``dataclasses`` (with the ``inspect`` it loads) cost about 15 ms of the ~40 ms a plain ``score`` takes.
    """

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value: object) -> None:
        if hasattr(self, name):
            raise AttributeError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._values()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={v!r}' for n, v in zip(self.__slots__, self._values()))})"


class Problem(_Record):
    """One reason to refuse a file; ``line`` is 1-based, None for the whole file.

    ``rule`` is what the problem has in common with others of its kind, without the line's text or token
    ("the score is not a number; …"): problems are grouped by it (``ProblemGroup``). None: the reason itself.
    """

    __slots__ = ("line", "reason", "rule")
    line: int | None
    reason: str
    rule: str | None

    def __init__(self, line: int | None, reason: str, rule: str | None = None) -> None:
        self.line = line
        self.reason = reason
        self.rule = rule

    @property
    def key(self) -> str:
        """What problems of the same kind share: the rule, or the reason when there is none."""
        return self.rule if self.rule is not None else self.reason


class ProblemGroup(_Record):
    """The problems of one rule: the first one's ``reason``, the first ``GROUP_LINES`` line numbers, how many."""

    __slots__ = ("rule", "reason", "lines", "count")
    rule: str
    reason: str
    lines: tuple[int, ...]
    count: int

    def __init__(self, rule: str, reason: str, lines: tuple[int, ...], count: int) -> None:
        self.rule = rule
        self.reason = reason
        self.lines = lines
        self.count = count

    @property
    def line(self) -> int | None:
        """The first line with this problem (None: the whole file)."""
        return self.lines[0] if self.lines else None

    def describe(self, *, n_lines: int | None = None, complete: bool = True, shown: int = 3) -> str:
        """One line a person reads: "line 7: <reason>" for one problem, else "all 5,000 lines: <rule> (lines 1, 2,
        3, …)" (or "1,200 of 5,000 lines", "at least 10,000 lines" when reading stopped before the end)."""
        if self.count == 1:
            return f"line {self.line}: {self.reason}" if self.line is not None else self.reason
        if not complete:
            how_many = f"at least {counted(self.count, 'line')}"
        elif n_lines is not None and self.count == n_lines:
            how_many = f"all {counted(self.count, 'line')}"
        elif n_lines is not None and self.count < n_lines:
            how_many = f"{self.count:,} of {counted(n_lines, 'line')}"
        else:
            how_many = counted(self.count, "line")
        first = ", ".join(str(n) for n in self.lines[:shown])
        more = ", …" if self.count > min(shown, len(self.lines)) else ""
        where = f" (line{'s' if self.count > 1 else ''} {first}{more})" if self.lines else ""
        return f"{how_many}: {self.rule}{where}"


def group_problems(problems: list[Problem]) -> list[ProblemGroup]:
    """The problems grouped by rule, in the order of each rule's first line (the whole file's first)."""
    found: dict[str, list[Any]] = {}
    for p in sorted(problems, key=lambda p: (p.line is not None, p.line or 0)):
        g = found.setdefault(p.key, [p, [], 0])
        g[2] += 1
        if p.line is not None and len(g[1]) < GROUP_LINES:
            g[1].append(p.line)
    return [ProblemGroup(k, g[0].reason, tuple(g[1]), g[2]) for k, g in found.items()]


class InputError(Exception):
    """A file that cannot be scored, with up to ``MAX_PROBLEMS`` problems.

    ``str(err)`` gives one ``path:line: reason`` line per problem; ``grouped()`` one line per kind of problem,
    with how many lines have it. ``groups``: the problems by rule, counted beyond the ``problems`` kept (up to
    the reader's bound); ``n_lines``: the file's lines when it was read to the end, else None; ``complete``:
    False when reading stopped at the bound (each count is then at least that).
    """

    def __init__(self, path: str, problems: list[Problem], *, groups: list[ProblemGroup] | None = None,
                 n_lines: int | None = None, complete: bool = True):
        self.path = path
        self.problems = list(problems)
        self.groups = list(groups) if groups is not None else group_problems(self.problems)
        self.n_lines = n_lines
        self.complete = complete
        super().__init__(self._format())

    @property
    def n_problem_lines(self) -> int:
        """How many lines (or whole-file problems) were found wrong, as far as they were counted."""
        return sum(g.count for g in self.groups)

    def grouped(self) -> str:
        """One line per kind of problem: ``path:line: reason`` for one, ``path:first: all 5,000 lines: rule (lines
        1, 2, 3, …)`` for several; a last line when reading stopped before the end."""
        lines = []
        for g in self.groups:
            where = f"{self.path}:{g.line}" if g.line is not None else self.path
            text = g.reason if g.count == 1 else g.describe(n_lines=self.n_lines, complete=self.complete)
            lines.append(f"{where}: {text}")
        if not self.complete:
            lines.append(f"{self.path}: stopped after {counted(self.n_problem_lines, 'problem')}; "
                         "fix these and check the file again")
        return "\n".join(lines)

    def _format(self) -> str:
        lines = []
        for p in self.problems:
            where = f"{self.path}:{p.line}" if p.line is not None else self.path
            lines.append(f"{where}: {p.reason}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self._format()


class RunFormatError(InputError):
    """A run file is malformed or does not fit the dataset (e.g. wrong docid scheme)."""


class QrelsFormatError(InputError):
    """A qrels file is malformed."""


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``counted(1, "query", "queries")`` → "1 query"; messages read as written English."""
    return f"{n:,} {singular if n == 1 else (plural or singular + 's')}"


class Notice(_Record):
    """A warning attached to a parsed file or an evaluation.

    Codes: ``missing_queries``, ``unknown_queries``, ``unknown_docids``,
    ``ties``, ``depth_cut``, ``several_tags``, ``trailing_text``, ``no_relevant``.
    ``count`` is the number of queries or rows concerned.
    """

    __slots__ = ("code", "message", "count")
    code: str
    message: str
    count: int

    def __init__(self, code: str, message: str, count: int = 0) -> None:
        self.code = code
        self.message = message
        self.count = count

    def to_dict(self) -> dict[str, object]:
        """JSON-friendly form."""
        return {"code": self.code, "message": self.message, "count": self.count}


def ties_notice(n_groups: int, n_queries: int) -> Notice:
    """The notice that ties decided the order: ``n_groups`` groups of equal scores in ``n_queries`` queries.

    Said by both scorers (``scoring.rank_rows`` and the command line's ``fastscore``) in these words, as are the
    notices below: each has its words in one place.
    """
    return Notice("ties", f"{counted(n_groups, 'group')} of equal scores in {counted(n_queries, 'query', 'queries')} "
                  f"{'was' if n_groups == 1 else 'were'} ordered by docid, descending (trec_eval's "
                  "order); the rank column is not used", n_groups)


def no_relevant_notice(n_empty: int, n_queries: int, threshold: int) -> Notice:
    """The qrels' notice that ``n_empty`` of its ``n_queries`` queries have no relevant document (``omit``)."""
    return Notice("no_relevant", f"{n_empty} of {counted(n_queries, 'query', 'queries')} {'has' if n_empty == 1 else 'have'} "
                  f"no document graded {threshold} or more; {'it is' if n_empty == 1 else 'they are'} left out of "
                  "every average", n_empty)


def unknown_queries_notice(first: list[str], count: int) -> Notice:
    """The run's ``count`` queries the qrels lack (``first``: up to five of them, in the run's order), ignored."""
    shown = ", ".join(repr(q) for q in first[:5])
    more = "…" if count > 5 else ""
    return Notice("unknown_queries", f"{counted(count, 'query', 'queries')} of the run "
                  f"{'is' if count == 1 else 'are'} not in this split and ignored (e.g. {shown}{more})", count)


def empty_counted_notice(n_empty: int, convention: str) -> Notice:
    """``n_empty`` evaluated queries without a relevant document count in the averages (``convention``: "count" or
    "trec_eval", ``conventions.EMPTY_QUERIES``)."""
    how = "trec_eval -c" if convention == "count" else "trec_eval"
    return Notice("empty_queries_counted", f"{counted(n_empty, 'query', 'queries')} of the qrels "
                  f"{'has' if n_empty == 1 else 'have'} no relevant document and "
                  f"{'counts' if n_empty == 1 else 'count'} in every average ({how})", n_empty)


def missing_queries_notice(missing: int, n_evaluated: int) -> Notice:
    """The run has no rows for ``missing`` of the ``n_evaluated`` evaluated queries: they score 0."""
    of_evaluated = counted(n_evaluated, "evaluated query", "evaluated queries")
    return Notice("missing_queries", f"the run has no rows for {missing} of the {of_evaluated}; "
                  f"{'it scores' if missing == 1 else 'they score'} 0 on every measure", missing)


def depth_cut_notice(n_cut: int, n_queries: int, depth: int) -> Notice:
    """``n_cut`` rows beyond rank ``depth`` in ``n_queries`` queries were cut after sorting."""
    return Notice("depth_cut", f"{counted(n_cut, 'row')} beyond rank {depth} in "
                  f"{counted(n_queries, 'query', 'queries')} {'was' if n_cut == 1 else 'were'} cut "
                  "after sorting by score", n_cut)


def no_shared_queries_error(path: str, n_run_queries: int, n_qrels_queries: int) -> RunFormatError:
    """The refusal of a run that has no query of the qrels: nothing to score, whatever the averaged queries.

    trec_eval stops there too ("No queries with both results and relevance info", exit 7) rather than print
    means over no query. Said by both scorers (``cli_score.score`` and ``fastscore.score_plain``).
    """
    return RunFormatError(path, [Problem(None, (
        f"none of the run's {counted(n_run_queries, 'query', 'queries')} is in the qrels "
        f"({counted(n_qrels_queries, 'query', 'queries')}): nothing to score, under any --empty-queries "
        "(trec_eval: \"No queries with both results and relevance info\"); is the run for these qrels, with "
        "the query id in its first column?"))])


class ProblemCollector:
    """Collects problems until ``limit`` of them (or ``MAX_PROBLEMS`` different rules), then raises.

    Used by the parsers so that one upload shows several bad lines at once. It keeps the first
    ``MAX_PROBLEMS`` problems one by one and counts every problem by rule (a few line numbers and a count
    each), so a ``limit`` of ``MAX_COUNTED_PROBLEMS`` costs no more memory than 20. ``lines_read``: the lines
    the reader has read so far, set by it (``_kernel.iter_chunks``); the error carries it when the file was read
    to its end.
    """

    def __init__(self, path: str, error_class: type[InputError], *, limit: int = MAX_PROBLEMS):
        self.path = path
        self.error_class = error_class
        self.limit = limit
        self.problems: list[Problem] = []
        self.count = 0
        self.lines_read: int | None = None
        self._groups: dict[str, list[Any]] = {}  # rule -> [first problem, first lines, count]

    def add(self, line: int | None, reason: str, rule: str | None = None) -> None:
        """Record a problem; raise once there are ``limit`` (enough to stop), or ``MAX_PROBLEMS`` different rules."""
        problem = Problem(line, reason, rule)
        self.count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)
        group = self._groups.get(problem.key)
        if group is None:
            group = self._groups[problem.key] = [problem, [], 0]
        group[2] += 1
        if line is not None and len(group[1]) < GROUP_LINES:
            group[1].append(line)
        if self.count >= self.limit or len(self._groups) >= MAX_PROBLEMS:
            self._raise(complete=False, at_end=False)  # enough to stop: the counts are lower bounds

    def raise_now(self) -> NoReturn:
        """Raise the collected problems (sorted by line): a problem that stops the reading."""
        self._raise(complete=True, at_end=False)

    def raise_if_any(self) -> None:
        """Raise if any problem was recorded: the reader is at the end of the file."""
        if self.problems:
            self._raise(complete=True, at_end=True)

    def _raise(self, *, complete: bool, at_end: bool) -> NoReturn:
        problems = sorted(self.problems, key=lambda p: (p.line is not None, p.line or 0))
        order = sorted(self._groups.items(), key=lambda kv: (kv[1][1] != [], min(kv[1][1], default=0)))
        groups = [ProblemGroup(key, g[0].reason, tuple(sorted(g[1])), g[2]) for key, g in order]
        raise self.error_class(self.path, problems, groups=groups, complete=complete,
                               n_lines=self.lines_read if at_end else None)

    def __bool__(self) -> bool:
        return bool(self.problems)
