"""Reads for the public pages, the exports and the API: leaderboards and the home page (above submissions).

One function builds a leaderboard (:func:`leaderboard_rows`), so the page,
the exports and the API show the same entries in the same order. The scored
public entries are cached under a key that includes the split's
``cache_version`` (bumped whenever a result is stored, an entry changes or
qrels are published), so a new score shows at once without any explicit
invalidation.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from django.core.cache import cache
from django.db.models import Exists, OuterRef, Prefetch, Q

from catalogue.models import Benchmark, Dataset, ReportedResult, Split
from catalogue.page_generation import CacheKey, CacheKind, cache_key
from catalogue.selectors import DatasetNotFound, dataset_for_page
from sandbox.models import SandboxRun
from submissions import disclosure
from submissions.disclosure import result_scores_shown
from submissions.models import Result, Submission, on_board_q, scored_live_q
from submissions.provenance import CouldHaveSeen, TrainingData
from submissions.selectors import submission_ordinal_expr

RowKind = Literal["scored", "baseline", "reported"]

# Long enough to matter under load; the version in the key does the invalidation.
CACHE_SECONDS = 60 * 60


@dataclass
class LeaderboardRow:
    """One line of a leaderboard: a scored submission, a baseline, or a result reported in a paper.

    ``scores`` are fractions (0..1) keyed by measure name; the dataset decides
    whether they are shown as percent. ``rank`` is None for reported rows
    (they were not scored here) and for rows lacking the measure ranked by.
    """

    rank: int | None
    kind: RowKind
    submission_id: int | None
    system: str
    owner: str
    family: str
    paper_url: str
    code_url: str
    date: dt.date | None
    scores: dict[str, float | None]
    is_private: bool = False
    team: str = ""
    source: str = ""  # for reported rows: the paper the numbers come from
    notes: str = ""
    # Provenance as the participant stated it (submissions/provenance.py); None for reported rows (the paper
    # states it, not this site). ``models`` are {"id", "licence"} pairs; ``disclosed``: all of it is stated.
    training_data: str | None = None
    training_data_note: str = ""
    models: list[dict[str, str]] = field(default_factory=list)
    could_have_seen: str | None = None
    disclosed: bool = False
    is_anonymous: bool = False
    coverage_exempt: bool = False  # not held to the hidden split's coverage rule (shown as such)
    extra: dict[str, Any] = field(default_factory=dict)
    family_key: str = ""  # a Submission.Family value ("dense"), for the family filter; "" when unknown
    params: str = ""  # as the participant or the paper wrote it ("110M", "7B")
    # Who the row belongs to, for "best per participant": the user for entries scored here, the paper
    # for reported rows. Never exported (it would name the owner of an anonymous entry).
    participant: str = ""
    year: int | None = None  # reported rows: the year in their source, for the progress chart
    # Test splits: the owner's n-th submission to this split when it was made, counted like the quota
    # (submissions.selectors.submission_ordinal), so readers see how many tries a score took.
    # None for baselines, anonymous entries, reported rows and dev/train splits.
    owner_submission_number: int | None = None
    # The platform ran the participant's image to make this run (sandbox/): the "reproduced" mark and filter.
    reproduced: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (dates as ISO strings).

        Field by field rather than ``dataclasses.asdict``, whose recursive deep
        copy was 60% of the API leaderboard's time for 200 rows; ``extra``
        (which may hold dataclasses) still goes through ``asdict``.
        """
        data = {name: getattr(self, name) for name in _ROW_FIELDS}
        data["scores"] = dict(self.scores)
        data["models"] = [dict(m) for m in self.models]
        data["extra"] = dataclasses.asdict(self)["extra"] if self.extra else {}
        data["date"] = self.date.isoformat() if self.date else None
        return data

    def copy(self) -> LeaderboardRow:
        """A copy whose ``scores`` and ``extra`` can be changed without touching this row (cheaper than ``replace``)."""
        row = object.__new__(LeaderboardRow)
        row.__dict__.update(self.__dict__)
        row.scores = dict(self.scores)
        row.extra = dict(self.extra)
        row.models = list(self.models)
        return row

    def score(self, measure: str) -> float | None:
        return self.scores.get(measure)

    @property
    def training_data_label(self) -> str:
        return TrainingData(self.training_data).label if self.training_data else "not stated here"

    @property
    def could_have_seen_label(self) -> str:
        return CouldHaveSeen(self.could_have_seen).label if self.could_have_seen else "not stated here"


_ROW_FIELDS = tuple(f.name for f in dataclasses.fields(LeaderboardRow) if f.name != "participant")


# --- building rows ----------------------------------------------------------------


def _submission_row(result, *, split: Split, private: bool = False) -> LeaderboardRow:
    sub = result.submission
    anonymous = sub.visibility == sub.Visibility.ANONYMOUS
    return LeaderboardRow(
        rank=None,
        kind="baseline" if sub.is_baseline else "scored",
        submission_id=sub.pk,
        system=sub.system_name,
        owner=sub.display_owner(),
        family=sub.get_family_display(),
        paper_url="" if anonymous else sub.paper_url,
        code_url="" if anonymous else sub.code_url,
        # The submission date: a rescore on new qrels must not make an old entry look new.
        date=sub.created_at.date() if sub.created_at else None,
        scores=result_scores_shown(result, split=split),  # a hidden split: the value stored at the Ladder's verdict
        is_private=private,
        team="" if anonymous else (sub.entrant_team.name if sub.entrant_team_id else sub.team),
        training_data=sub.training_data,
        training_data_note=sub.training_data_note,
        models=[m.as_dict() for m in sub.models_list],
        could_have_seen=sub.could_have_seen,
        disclosed=sub.disclosed,
        is_anonymous=anonymous,
        coverage_exempt=sub.coverage_exempt,
        family_key=sub.family,
        params=sub.params,
        # An anonymous entry is a participant of its own: grouped with its owner's other rows, "best per
        # participant" would drop it or them and so tell who owns it. A shared task's team is one participant,
        # whichever member sent the run.
        participant="" if anonymous else (f"team:{sub.entrant_team_id}" if sub.entrant_team_id else f"user:{sub.user_id}"),
        extra={"after_task": True} if sub.after_task else {},
        # Not for anonymous entries: a count of the owner's submissions is a hint at who they are.
        owner_submission_number=None if sub.is_baseline or anonymous or split.kind != Split.Kind.TEST
        else getattr(result, "owner_submission_number", None),
        reproduced=bool(getattr(result, "reproduced", False)),
    )


def _reported_row(rep: ReportedResult) -> LeaderboardRow:
    return LeaderboardRow(
        rank=None,
        kind="reported",
        submission_id=None,
        system=rep.system,
        owner=rep.source,
        family=rep.family,
        paper_url=rep.url,
        code_url="",
        date=None,
        scores={k: (float(v) if v is not None else None) for k, v in (rep.scores or {}).items()},
        source=rep.source,
        notes=rep.notes,
        family_key=family_key(rep.family),
        params=rep.params,
        participant=f"paper:{rep.source}",
        year=year_in(rep.source),
    )


_FAMILY_WORDS = {choice.value: choice.value for choice in Submission.Family}
_FAMILY_WORDS.update({"llm-augmented": "llm", "bm25": "lexical", "tf-idf": "lexical", "splade": "sparse"})


def family_key(text: str) -> str:
    """A paper's free-text family ("dense (API)", "lexical") as a ``Submission.Family`` value, or "" when unknown."""
    words = re.findall(r"[a-z0-9-]+", (text or "").lower())
    for word in words:
        if word in _FAMILY_WORDS:
            return _FAMILY_WORDS[word]
    return Submission.Family.OTHER.value if words else ""


_YEAR = re.compile(r"\b(19[89]\d|20\d\d)\b")


def year_in(source: str) -> int | None:
    """The year a source names ("…, ACL 2022 (arXiv:2108.11792)" gives 2022), or None."""
    years = [int(y) for y in _YEAR.findall(source or "")]
    return max(years) if years else None


def _results_base(split: Split):
    """Results of the split's submissions on its current qrels that a leaderboard may show.

    On a hidden split, released results only (the Ladder: docs/security.md).
    """
    results = Result.objects.filter(released=True) if disclosure.hidden(split) else Result.objects.all()
    return (
        results.filter(
            scored_live_q("submission__"),
            qrels_version_id=split.current_qrels_id,
            submission__split_id=split.pk,
        )
        .select_related("submission", "submission__user", "submission__user__profile", "submission__entrant_team")
        .annotate(owner_submission_number=submission_ordinal_expr("submission__"),
                  reproduced=Exists(SandboxRun.objects.filter(submission_id=OuterRef("submission_id"),
                                                              status=SandboxRun.Status.RAN, rerun_of__isnull=True)))
        .defer("per_query")  # the per-query vectors can be large; the table needs means only
        .order_by("submission__created_at", "submission_id")
    )


def _public_submission_rows(split: Split) -> list[LeaderboardRow]:
    """Scored public and anonymous entries and baselines on the current qrels (1 query)."""
    if split.current_qrels_id is None:
        return []
    results = _results_base(split).filter(on_board_q("submission__"))
    return [_submission_row(r, split=split) for r in results]


def _reported_rows(split: Split) -> list[LeaderboardRow]:
    """The papers' reported results for this split (1 query, never cached: curators edit them in the admin)."""
    reported = ReportedResult.objects.filter(dataset_id=split.dataset_id)
    if split.kind == Split.Kind.TEST:
        # Papers report test numbers; rows not tied to a split belong to the test split.
        reported = reported.filter(Q(split_id=split.pk) | Q(split__isnull=True))
    else:
        reported = reported.filter(split_id=split.pk)
    return [_reported_row(r) for r in reported]


def _private_rows(split: Split, user) -> list[LeaderboardRow]:
    """The user's own private scored entries: shown to them only, marked, never cached."""
    if split.current_qrels_id is None or user is None or not user.is_authenticated:
        return []
    results = _results_base(split).filter(
        submission__user_id=user.pk,
        submission__visibility=Submission.Visibility.PRIVATE,
        submission__is_baseline=False,
    )
    return [_submission_row(r, split=split, private=True) for r in results]


def rank_rows(rows: list[LeaderboardRow], *, measure: str) -> list[LeaderboardRow]:
    """Order rows by ``measure`` (descending) and number the ones scored here.

    Ties share a rank and the next rank skips (1, 2, 2, 4). Reported rows keep
    their place by value, so a reader sees where a paper's number falls, but
    get no rank: nothing was scored here. Rows lacking the measure go last.
    The sort is stable, so equal values keep their earlier order (oldest first).
    """

    def key(row: LeaderboardRow):
        value = row.scores.get(measure)
        return (value is None, -(value or 0.0))

    ordered = sorted(rows, key=key)
    position = 0
    previous: float | None = None
    rank = 0
    for row in ordered:
        value = row.scores.get(measure)
        if row.kind == "reported" or value is None:
            row.rank = None
            continue
        position += 1
        if previous is None or value != previous:
            rank = position
            previous = value
        row.rank = rank
    return ordered


def resolve_sort(dataset: Dataset, sort: str | None) -> str:
    """The measure to rank by: ``sort`` when the dataset has it, else the primary measure."""
    if sort and sort in (dataset.measures or []):
        return sort
    return dataset.primary_measure


def rows_cache_key(split: Split) -> CacheKey:
    """Changes whenever a score is stored, an entry changes, new qrels are published or the split is hidden
    or made public (rows of a hidden split are rounded and released only; a curator's switch bumps no version)."""
    return cache_key(CacheKind.LEADERBOARD_ROWS, split=split)


def leaderboard_rows(*, split: Split, user=None, sort: str | None = None) -> list[LeaderboardRow]:
    """The leaderboard of ``split``, ranked by ``sort`` (a measure of the dataset) or the primary measure.

    The scored public entries and baselines come from the cache while the
    split is unchanged (the key holds its ``cache_version``, bumped by every
    new score, and its current qrels). They are cached unsorted, once per
    split version: sorting a few hundred rows in Python costs less than a
    cache entry per measure. The papers' reported rows (edited by curators
    in the admin, which bumps nothing) and ``user``'s own private entries
    (marked ``is_private``, never cached) are read fresh and merged, then
    everything is ranked. Queries: at most 3 (scored rows when the cache is
    cold, reported rows, the user's own), whatever the number of entries.
    """
    measure = resolve_sort(split.dataset, sort)
    key = rows_cache_key(split)
    scored = cache.get(key)
    if scored is None:
        scored = _public_submission_rows(split)
        cache.set(key, scored, CACHE_SECONDS)
    # Copies, so a caller changing a row never changes what a local-memory cache holds.
    rows = [r.copy() for r in scored]
    rows += _reported_rows(split) + _private_rows(split, user)
    return rank_rows(rows, measure=measure)


# --- filters, best per participant, progress ---------------------------------------------

#: Parameter-count ranges a reader can filter by: (GET value, label, lower bound, upper bound).
PARAM_RANGES = [
    ("lt100m", "< 100M", 0.0, 1e8),
    ("100m-1b", "100M – 1B", 1e8, 1e9),
    ("1b-10b", "1B – 10B", 1e9, 1e10),
    ("gt10b", "≥ 10B", 1e10, math.inf),
    ("unknown", "not stated", None, None),
]
_PARAM_UNITS = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_PARAMS_RE = re.compile(r"^\s*(\d+(?:[.,]\d+)?)\s*([kmbgt]?)", re.IGNORECASE)

KIND_CHOICES = [("scored", "scored here (with baselines)"), ("reproduced", "reproduced on the platform"),
                ("reported", "reported in papers")]
#: The board's provenance filters take the vocabulary's values (``?training_data=none&could_have_seen=no``).
TRAINING_CHOICES = [(c.value, c.label) for c in TrainingData]
SEEN_CHOICES = [(c.value, c.label) for c in CouldHaveSeen]
#: Links made before the provenance vocabulary (``?training=yes|no``, "used the dataset's training data"): yes is
#: the train split; no is every other value, ``unknown`` included (where the old "no" entries went).
LEGACY_TRAINING = {"yes": (TrainingData.TRAIN_SPLIT.value,),
                   "no": tuple(v for v in TrainingData.values if v != TrainingData.TRAIN_SPLIT)}


def parse_params(text: str) -> float | None:
    """A parameter count as written ("110M", "7B", "1.5 b", "350k") as a number; None when not stated or unreadable."""
    match = _PARAMS_RE.match(text or "")
    if not match:
        return None
    return float(match.group(1).replace(",", ".")) * _PARAM_UNITS[match.group(2).lower()]


def params_range(text: str) -> str:
    """The ``PARAM_RANGES`` value a parameter count falls in ("unknown" when not stated)."""
    value = parse_params(text)
    if value is None:
        return "unknown"
    return next(key for key, _, lo, hi in PARAM_RANGES if lo is not None and hi is not None and lo <= value < hi)


@dataclass(frozen=True)
class LeaderboardFilters:
    """What a reader narrowed the board to, from the page's GET parameters (the exports take the same).

    ``family``: Submission.Family values; ``training_data`` and ``could_have_seen``: the provenance vocabulary's
    values (an old link's ``training=yes|no`` is read as ``LEGACY_TRAINING`` says); ``disclosed``: entries whose
    provenance is complete; ``params``: PARAM_RANGES values;
    ``kind``: "scored" (entries and baselines scored here), "reproduced" (entries whose run the platform made
    by running the participant's image) or "reported"; ``best``: only the best
    row per participant (per paper for reported rows) on the ranked-by measure. Unknown values are
    ignored, so an old link never breaks the page.
    """

    family: tuple[str, ...] = ()
    training_data: tuple[str, ...] = ()
    could_have_seen: tuple[str, ...] = ()
    disclosed: bool = False
    params: tuple[str, ...] = ()
    kind: str = ""
    best: bool = False

    @classmethod
    def from_query(cls, query) -> LeaderboardFilters:
        families = {c.value for c in Submission.Family}
        ranges = {key for key, *_ in PARAM_RANGES}
        training = [t for t in query.getlist("training_data") if t in TrainingData.values]
        training += LEGACY_TRAINING.get(query.get("training", ""), ())
        kind = query.get("kind", "")
        return cls(
            family=tuple(dict.fromkeys(f for f in query.getlist("family") if f in families)),
            training_data=tuple(v for v in TrainingData.values if v in training),
            could_have_seen=tuple(v for v in CouldHaveSeen.values if v in query.getlist("could_have_seen")),
            disclosed=query.get("disclosed") in ("1", "on", "yes", "true"),
            params=tuple(dict.fromkeys(p for p in query.getlist("params") if p in ranges)),
            kind=kind if kind in ("scored", "reproduced", "reported") else "",
            best=query.get("best") in ("1", "on", "yes", "true"),
        )

    @property
    def active(self) -> bool:
        return bool(self.family or self.training_data or self.could_have_seen or self.disclosed or self.params
                    or self.kind or self.best)

    def query_items(self) -> list[tuple[str, str]]:
        """The filters as GET pairs, for export links that keep them."""
        items = [("family", f) for f in self.family] + [("params", p) for p in self.params]
        items += [("training_data", t) for t in self.training_data]
        items += [("could_have_seen", c) for c in self.could_have_seen]
        if self.disclosed:
            items.append(("disclosed", "1"))
        if self.kind:
            items.append(("kind", self.kind))
        if self.best:
            items.append(("best", "1"))
        return items

    def keep(self, row: LeaderboardRow) -> bool:
        if self.family and row.family_key not in self.family:
            return False
        # Reported rows state no provenance here (their paper does): they drop out of any provenance filter.
        if self.training_data and row.training_data not in self.training_data:
            return False
        if self.could_have_seen and row.could_have_seen not in self.could_have_seen:
            return False
        if self.disclosed and not row.disclosed:
            return False
        if self.params and params_range(row.params) not in self.params:
            return False
        if self.kind == "scored" and row.kind == "reported":
            return False
        if self.kind == "reproduced" and not row.reproduced:
            return False
        return not (self.kind == "reported" and row.kind != "reported")


def best_per_participant(rows: list[LeaderboardRow], *, measure: str) -> list[LeaderboardRow]:
    """Each participant's best row on ``measure`` (the earliest among equals), in the order given.

    Entries scored here group by their owner, except anonymous ones, each its own (grouping them would
    name their owner); reported rows group by their paper; a participant without a value on ``measure``
    keeps their first row.
    """
    best: dict[str, LeaderboardRow] = {}
    for row in rows:
        key = row.participant or f"row:{id(row)}"
        held = best.get(key)
        value = row.scores.get(measure)
        held_value = held.scores.get(measure) if held is not None else None
        if held is None or (value is not None and (held_value is None or value > held_value)):
            best[key] = row
    chosen = {id(r) for r in best.values()}
    return [r for r in rows if id(r) in chosen]


def filter_rows(rows: list[LeaderboardRow], filters: LeaderboardFilters, *, measure: str) -> list[LeaderboardRow]:
    """The rows ``filters`` keep, ranked again among themselves on ``measure``."""
    if not filters.active:
        return rows
    kept = [r for r in rows if filters.keep(r)]
    if filters.best:
        kept = best_per_participant(kept, measure=measure)
    return rank_rows(kept, measure=measure)


@dataclass(frozen=True)
class ProgressPoint:
    """An entry that raised the best primary score: when (a fractional year), how high, who."""

    when: float
    value: float
    system: str
    kind: RowKind
    label: str  # "2023-04-02" for entries scored here, "2022" for reported results


def progress_points(rows: list[LeaderboardRow], *, measure: str) -> tuple[list[ProgressPoint], int]:
    """The record-setting rows on ``measure`` over time, and how many rows had no date to place them.

    Entries scored here count at their submission date, reported results at the
    year their source names (placed mid-year). Only what the table shows is used:
    the rows' released scores on the primary measure, nothing per query, so
    hidden splits give away nothing new. Private rows are left out.
    """
    dated: list[tuple[float, float, LeaderboardRow, str]] = []
    undated = 0
    for row in rows:
        value = row.scores.get(measure)
        if value is None or row.is_private:
            continue
        if row.date is not None:
            when = row.date.year + (row.date.timetuple().tm_yday - 1) / 366
            dated.append((when, value, row, row.date.isoformat()))
        elif row.year is not None:
            dated.append((row.year + 0.5, value, row, str(row.year)))
        else:
            undated += 1
    dated.sort(key=lambda item: (item[0], -item[1]))
    points: list[ProgressPoint] = []
    for when, value, row, label in dated:
        if not points or value > points[-1].value:
            points.append(ProgressPoint(when=when, value=value, system=row.system, kind=row.kind, label=label))
    return points, undated


# --- pages ----------------------------------------------------------------------


def cell_format(split: Split | None):
    """How a board row's value is printed, on every surface (page, home card, CSV, LaTeX): entries scored here by
    :func:`submissions.disclosure.formatter` (a hidden split's grid), papers' reported numbers at full precision;
    both by the one formatting, ``evaluation.ladder.percent_text``."""
    scored = disclosure.formatter(split)
    full = disclosure.formatter(None)
    return lambda row, value: (full if row.kind == "reported" else scored)(value)


@dataclass
class DatasetSummary:
    """A dataset as the home page lists it."""

    dataset: Dataset
    split: Split | None
    best: LeaderboardRow | None
    n_entries: int  # scored entries and baselines (reported rows not counted)
    n_reported: int
    best_text: str = "–"  # the best row's primary value as its board prints it (:func:`cell_format`)


@dataclass
class BenchmarkSummary:
    benchmark: Benchmark
    datasets: list[DatasetSummary]


def dataset_summary(dataset: Dataset) -> DatasetSummary:
    split = dataset.default_split
    best = None
    n_entries = n_reported = 0
    if split is not None:
        split.dataset = dataset
        rows = leaderboard_rows(split=split)
        scored = [r for r in rows if r.kind != "reported"]
        reported = [r for r in rows if r.kind == "reported"]
        n_entries, n_reported = len(scored), len(reported)
        # The best entry scored here; before anything is scored, the best paper result.
        best = next((r for r in scored if r.rank is not None), None) or next(
            (r for r in reported if r.scores.get(dataset.primary_measure) is not None), None
        )
    best_text = (cell_format(split)(best, best.scores.get(dataset.primary_measure)) if best is not None else "–")
    return DatasetSummary(dataset=dataset, split=split, best=best, n_entries=n_entries, n_reported=n_reported,
                          best_text=best_text)


def home_datasets(*, user=None) -> list[BenchmarkSummary]:
    """Benchmarks with their published datasets, each with its current best entry and entry count.

    One leaderboard per dataset (its default split), each served from the
    cache when unchanged; curated datasets are few.
    """
    datasets_qs = Dataset.objects.filter(is_published=True).prefetch_related(
        Prefetch("splits", queryset=Split.objects.order_by("kind", "name"))
    )
    benchmarks = Benchmark.objects.prefetch_related(Prefetch("datasets", queryset=datasets_qs))
    out = []
    for bench in benchmarks:
        summaries = [dataset_summary(ds) for ds in bench.datasets.all()]
        if summaries or (user is not None and getattr(user, "is_staff", False)):
            out.append(BenchmarkSummary(benchmark=bench, datasets=summaries))
    return out


def benchmark_for_page(slug: str) -> BenchmarkSummary | None:
    """A benchmark with its published datasets summarised like on the home page."""
    datasets_qs = Dataset.objects.filter(is_published=True).prefetch_related(
        Prefetch("splits", queryset=Split.objects.order_by("kind", "name"))
    )
    bench = Benchmark.objects.prefetch_related(Prefetch("datasets", queryset=datasets_qs)).filter(slug=slug).first()
    if bench is None:
        return None
    return BenchmarkSummary(benchmark=bench, datasets=[dataset_summary(ds) for ds in bench.datasets.all()])


# --- whole-page cache keys (see leaderboard.page_cache) --------------------------------------


def _fingerprint(parts: Any) -> str:
    return hashlib.blake2b(repr(parts).encode(), digest_size=16).hexdigest()


def _row_values(obj) -> tuple:
    return tuple(getattr(obj, f.attname) for f in obj._meta.concrete_fields)


def dataset_page_cache_key(*, slug: str, path: str, user=None,
                           kind: CacheKind = CacheKind.DATASET_PAGE_TAG) -> CacheKey | None:
    """The cache key of a dataset page as an anonymous visitor sees it, or None (no such dataset).

    The scored rows are versioned by each split's ``cache_version`` (bumped
    by every new score, entry change and qrels publication); what curators
    edit in the admin bumps nothing, so the key also holds a digest of every
    row the page shows from the curated side: the dataset, its benchmark and
    splits, the papers' reported results and the data terms in force. Any edit gives a new key; the
    old entry expires unused. 3 queries, whatever the size of the board.
    """
    try:
        dataset = dataset_for_page(slug, user=user)
    except DatasetNotFound:
        return None
    splits = [_row_values(s) for s in dataset.splits.all()]
    reported = list(ReportedResult.objects.filter(dataset_id=dataset.pk).order_by("pk").values_list())
    # The terms in force (the file links lead to them; read with the dataset): a new version is a new row.
    terms = getattr(dataset, "terms_in_force_id", None)
    digest = _fingerprint((_row_values(dataset), _row_values(dataset.benchmark), splits, reported, terms, path))
    return cache_key(kind, dataset.pk, digest)


def home_page_cache_key(*, path: str) -> CacheKey:
    """The cache key of the home page for anonymous visitors: a digest of everything it shows (4 queries).

    Benchmarks, datasets, splits (with their ``cache_version``, which covers
    the scored entries) and reported results, whatever their number.
    """
    parts = [list(model.objects.order_by("pk").values_list()) for model in (Benchmark, Dataset, Split, ReportedResult)]
    return cache_key(CacheKind.HOME_PAGE_TAG, _fingerprint((parts, path)))


def api_leaderboard_page_key(request, slug: str) -> CacheKey | None:
    """The API leaderboard's cache key when the cache is per-process: the dataset page's digest, under its own name."""
    return dataset_page_cache_key(slug=slug, path=request.get_full_path(), kind=CacheKind.API_LEADERBOARD_TAG)
