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
    from typing import NoReturn

#: Parsing stops after this many problems: enough to show a pattern, few
#: enough to read.
MAX_PROBLEMS = 20


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
    """One reason to refuse a file; ``line`` is 1-based, None for the whole file."""

    __slots__ = ("line", "reason")
    line: int | None
    reason: str

    def __init__(self, line: int | None, reason: str) -> None:
        self.line = line
        self.reason = reason


class InputError(Exception):
    """A file that cannot be scored, with up to ``MAX_PROBLEMS`` problems.

    ``str(err)`` gives one ``path:line: reason`` line per problem.
    """

    def __init__(self, path: str, problems: list[Problem]):
        self.path = path
        self.problems = list(problems)
        super().__init__(self._format())

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
    """Collects problems until ``MAX_PROBLEMS``, then raises.

    Used by the parsers so that one upload shows several bad lines at once.
    """

    def __init__(self, path: str, error_class: type[InputError], *, limit: int = MAX_PROBLEMS):
        self.path = path
        self.error_class = error_class
        self.limit = limit
        self.problems: list[Problem] = []

    def add(self, line: int | None, reason: str) -> None:
        """Record a problem; raise once there are ``limit`` (enough to stop)."""
        self.problems.append(Problem(line, reason))
        if len(self.problems) >= self.limit:
            self.raise_now()

    def raise_now(self) -> NoReturn:
        """Raise the collected problems (sorted by line)."""
        problems = sorted(self.problems, key=lambda p: (p.line is not None, p.line or 0))
        raise self.error_class(self.path, problems)

    def raise_if_any(self) -> None:
        """Raise if any problem was recorded."""
        if self.problems:
            self.raise_now()

    def __bool__(self) -> bool:
        return bool(self.problems)
