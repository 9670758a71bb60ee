"""The curated side: benchmarks, datasets, splits, topics, corpus ids, qrels, reported results.

Hidden labels (qrels) are stored in the database as compressed TREC text,
never under a served path; workers parse them once per version and cache them.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.urls import reverse

from evaluation.ladder import percent_text
from evaluation.measures import is_macro_f1_name, parse_measure

from .page_generation import page_generation_bump


class Benchmark(models.Model):
    """A named group of datasets; a suite when it aggregates them into one score."""

    class Aggregate(models.TextChoices):
        NONE = "none", "no aggregate"
        MEAN = "mean", "arithmetic mean"
        HARMONIC = "harmonic", "harmonic mean"
        MEAN_RANK = "mean-rank", "mean rank"
        LEXTREME = "lextreme", "LEXTREME score"

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    homepage = models.URLField(blank=True)
    aggregate = models.CharField(max_length=16, choices=Aggregate.choices, default=Aggregate.NONE)
    order = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["order", "name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("leaderboard:benchmark", args=[self.slug])


def format_percent(value: float | None) -> str:
    """A fraction (0..1) as percent with two decimals ("51.33"); "–" when missing (``evaluation.ladder.percent_text``
    at full precision: a hidden split's values go through ``submissions.disclosure.formatter``)."""
    return percent_text(value)


class Dataset(models.Model):
    """One collection with its questions, corpus and the measures its leaderboard shows."""

    class Task(models.TextChoices):
        RETRIEVAL = "retrieval", "retrieval (TREC runs)"
        SINGLE = "single", "single-label classification"
        MULTI = "multi", "multi-label classification"
        NER = "ner", "named-entity recognition (BIO tags)"

    class ScorePrecision(models.TextChoices):
        FLOAT32 = "float32", "float32: scores compared in single precision (trec_eval ≤ 9.x, pytrec_eval)"
        FLOAT64 = "float64", "float64: scores compared in double precision (trec_eval 10)"

    class EmptyQueries(models.TextChoices):
        OMIT = "omit", "omit: queries with no relevant document are left out of every average"
        COUNT = "count", "count: they count as 0 in every average (trec_eval -c)"

    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="datasets")
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    language = models.CharField(max_length=64, help_text="e.g. fr, el, or a list for multilingual sets")
    task = models.CharField(max_length=16, choices=Task.choices, default=Task.RETRIEVAL)
    description = models.TextField(blank=True)
    citation = models.TextField(blank=True, help_text="BibTeX")
    homepage = models.URLField(blank=True)
    license = models.CharField(max_length=200, blank=True)
    files_downloadable = models.BooleanField(
        default=False,
        help_text="Offer the corpus for download on the dataset page and the API (only when the license allows "
        "redistribution). Topics, public judgments and baseline runs are offered either way.",
    )
    docid_example = models.CharField(
        max_length=100, blank=True, help_text="An example document id, e.g. 1234 (BSARD) or CivC::11 (GreekBarRetrieval)"
    )
    relevance_threshold = models.IntegerField(default=1, help_text="A document is relevant when its grade is ≥ this")
    depth = models.PositiveIntegerField(default=1000, help_text="Rows per query kept after sorting")
    measures = models.JSONField(default=list, help_text='Measure names, e.g. ["R@100", "MAP@100"]')
    primary_measure = models.CharField(max_length=32)
    score_precision = models.CharField(
        max_length=8, choices=ScorePrecision.choices, default=ScorePrecision.FLOAT32,
        help_text="How run scores are compared when ranking: match the trec_eval version the dataset's paper used",
    )
    empty_queries = models.CharField(
        max_length=8, choices=EmptyQueries.choices, default=EmptyQueries.OMIT,
        help_text="Judged queries with no relevant document: left out of the averages, or counted as 0",
    )
    category_min_queries = models.PositiveIntegerField(
        default=10, help_text="On hidden splits, categories with fewer queries are not shown"
    )
    is_published = models.BooleanField(default=True)
    order = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["benchmark__order", "order", "name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("leaderboard:dataset", args=[self.slug])

    def clean(self) -> None:
        errors = {}
        if self.task == self.Task.RETRIEVAL:
            # Checked against the metric core's registry.
            for name in self.measures or []:
                try:
                    parse_measure(name)
                except ValueError as exc:
                    errors["measures"] = str(exc)
        else:
            # Classification and NER results hold macro-F1 and one macro-F1 per language, nothing else:
            # any other name would be a column that stays empty forever.
            wrong = [name for name in self.measures or [] if not is_macro_f1_name(name)]
            if wrong:
                errors["measures"] = (
                    f"{', '.join(map(str, wrong))}: a {self.get_task_display()} dataset is scored by macro-F1; "
                    "use macro-F1 and, per language of the gold examples, macro-F1/<language> (e.g. macro-F1/fr)."
                )
        if self.primary_measure and self.primary_measure not in (self.measures or []):
            errors["primary_measure"] = "The primary measure must be one of the dataset's measures."
        if errors:
            raise ValidationError(errors)

    def format_value(self, value: float | None) -> str:
        """A stored score (always a fraction) as every page shows it: percent with two decimals.

        One scale across the site (pages, CSV and LaTeX exports, the client's
        table), so two datasets' numbers side by side are comparable; JSON keeps
        fractions and says so (``"scale": "fraction"``).
        """
        return format_percent(value)

    @property
    def default_split(self) -> Split | None:
        """The split submissions go to when none is named: the hidden split if any, else the test split."""
        splits = list(self.splits.all())
        for split in splits:
            if split.hidden:
                return split
        for split in splits:
            if split.kind == Split.Kind.TEST:
                return split
        return splits[0] if splits else None


class Corpus(models.Model):
    """The ids of a dataset's documents, gzip-compressed one per line, for validating runs."""

    dataset = models.OneToOneField(Dataset, on_delete=models.CASCADE, related_name="corpus")
    ids_gz = models.BinaryField()
    # The documents themselves (JSON Lines of {"_id", "title", "text"}, gzip), when the release had their text.
    documents_gz = models.BinaryField(null=True, blank=True, editable=False)
    n_documents = models.PositiveIntegerField(default=0)
    sha256 = models.CharField(max_length=64)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "corpora"

    def __str__(self) -> str:
        return f"{self.dataset} corpus ({self.n_documents} documents)"

    @staticmethod
    def pack(ids: list[str]) -> tuple[bytes, str]:
        text = "\n".join(sorted(set(ids))).encode()
        return gzip.compress(text, mtime=0), hashlib.sha256(text).hexdigest()

    def ids(self) -> list[str]:
        text = gzip.decompress(bytes(self.ids_gz)).decode()
        return text.split("\n") if text else []

    def texts(self, docids: set[str]) -> dict[str, tuple[str, str]]:
        """(title, text) of the wanted documents, read from the stored documents in one streaming pass."""
        if not self.documents_gz or not docids:
            return {}
        out = {}
        with gzip.open(io.BytesIO(bytes(self.documents_gz)), "rt", encoding="utf-8") as fh:
            for line in fh:
                doc = json.loads(line)
                if doc.get("_id") in docids:
                    out[doc["_id"]] = (str(doc.get("title", ""))[:500], str(doc.get("text", "")))
                    if len(out) == len(docids):
                        break
        return out

    @staticmethod
    def pack_documents(documents: list[dict]) -> bytes:
        """The documents as gzip JSON Lines (``_id``, ``title``, ``text``); equal documents, equal bytes."""
        lines = "".join(
            json.dumps({"_id": d["_id"], "title": d.get("title", ""), "text": d.get("text", "")}, ensure_ascii=False)
            + "\n"
            for d in documents
        )
        return gzip.compress(lines.encode(), compresslevel=6, mtime=0)


class DataTerms(models.Model):
    """One version of a dataset's terms of use (a licence text), which participants accept before they download
    its files or upload to it.

    A legal record: participants accepted *this* text, so a version is never edited (``save`` refuses a change,
    the admin shows a saved version read-only) and never deleted while an acceptance refers to it. A curator
    changes the terms by adding a version (:func:`catalogue.services.data_terms_publish` numbers it); the newest
    version is the one in force, and everyone who accepted an older one is asked again.
    """

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="terms_versions")
    version = models.PositiveIntegerField(editable=False)
    title = models.CharField(max_length=200, help_text="e.g. \u201cCC BY-NC-SA 4.0 and the BSARD data agreement\u201d")
    text = models.TextField(help_text="The full text participants read and accept (plain text; blank lines "
                                      "separate paragraphs).")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+", editable=False)

    class Meta:
        ordering = ["dataset", "-version"]
        verbose_name = "data terms version"
        constraints = [models.UniqueConstraint(fields=["dataset", "version"], name="data_terms_unique_version")]

    def __str__(self) -> str:
        return f"{self.dataset.slug} terms v{self.version}"

    def save(self, *args, **kwargs) -> None:
        """Insert only: a version someone may have accepted must read tomorrow as it read then."""
        if self.pk is not None and not self._state.adding:
            raise ValidationError("A version of the data terms is never changed: add a new version instead.")
        super().save(*args, **kwargs)

    def get_absolute_url(self) -> str:
        return reverse("leaderboard:data_terms_version", args=[self.dataset.slug, self.version])


#: The fewest topics on which the Ladder can release a run (a sign-flip test on 5 topics reaches p = 2⁻⁵ · 2): a
#: hidden split of this many topics or more keeps the Ladder on (Split.clean).
LADDER_MIN_TOPICS = 5


class Split(models.Model):
    """train, dev or test; a hidden split never shows per-query values and caps submissions."""

    class Kind(models.TextChoices):
        TRAIN = "train", "train"
        DEV = "dev", "dev"
        TEST = "test", "test"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="splits")
    name = models.SlugField(max_length=32)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.TEST)
    hidden = models.BooleanField(default=False, help_text="Labels hidden: aggregates only, submissions capped")
    accepts_submissions = models.BooleanField(default=True)
    open_before_judgments = models.BooleanField(
        default=False,
        help_text="Take runs before the judgments are published (the TREC way: judged after the runs are in); "
        "they wait and are scored when the judgments are published. Otherwise a split without judgments "
        "refuses uploads.",
    )
    ladder = models.BooleanField(
        "Ladder", default=True,
        help_text="Hidden splits only: a participant's new score is shown (and ranked) only when it is a "
                  "significant improvement over their best (docs/security.md). It can be off only on a hidden "
                  f"split of fewer than {LADDER_MIN_TOPICS} topics, where no run could ever be significant; "
                  "then every score is released.",
    )
    daily_limit = models.PositiveIntegerField(default=5, help_text="Submissions per user per day (0 = no limit)")
    total_limit = models.PositiveIntegerField(default=100, help_text="Submissions per user in total (0 = no limit)")
    # A board that runs for years wants a steady pace as well as a daily one: a calendar month in UTC, counted
    # per shared task team while a user uploads for one, else per account (submissions.selectors).
    monthly_limit = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="Submissions per participant (a shared task's team, or an account) per calendar month, UTC "
                  "(empty = no monthly limit)",
    )
    # The coverage rule of hidden splits (checked at upload, over the whole file): a run
    # must rank documents for this share of the split's topics, and, when set, at least
    # this many documents for each topic it covers.
    min_coverage = models.FloatField(
        default=0.9, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Hidden splits: share of the topics a run must rank documents for (0.9 = 90%)",
    )
    min_docs_per_topic = models.PositiveIntegerField(
        default=0, help_text="Hidden splits: fewest documents per covered topic (0 = no minimum)",
    )
    # The board before and after a new judgments version is public (and kept by a snapshot): with one changed
    # judgment, every entry's move across a grid step tells how that judgment relates to its run, and an attacker
    # knows their runs. A batch of many changes moves each entry by their sum, which no single judgment decodes.
    min_judgment_batch = models.PositiveIntegerField(
        "smallest batch of changed judgments",
        default=20,
        help_text="Hidden splits: a new judgments version must add, remove or regrade at least this many "
                  "judgments against the current one, or it is refused (a curator may publish a smaller one "
                  "with a stated reason). Every entry's move on the public board between two versions is a "
                  "function of the changed judgments: with one change it decodes that judgment for whoever "
                  "owns runs on the board; a batch mixes them (docs/security.md). 0 = off; public splits are "
                  "never held to it.",
    )
    current_qrels = models.ForeignKey(
        "QrelsVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # A published version waiting for every scored submission to be rescored on it; the
    # leaderboard keeps showing ``current_qrels`` until then, then switches in one UPDATE
    # (``submissions.services.split_finish_rescoring``).
    pending_qrels = models.ForeignKey(
        "QrelsVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Bumped by every change that alters the leaderboard, so cached pages go stale.
    cache_version = models.PositiveIntegerField(default=0)

    # Who may upload (checked by accounts.policy.upload_refusal before any slot is used).
    class VerifiedEmail(models.TextChoices):
        IF_HIDDEN = "if_hidden", "required if the split is hidden"
        ALWAYS = "always", "required"
        NEVER = "never", "not required"

    verified_email = models.CharField(
        "verified e-mail before uploading",
        max_length=10,
        choices=VerifiedEmail.choices,
        default=VerifiedEmail.IF_HIDDEN,
        help_text="An account must have clicked the link we e-mail before its first upload here.",
    )
    approval_required = models.BooleanField(
        "curator approves participants",
        default=False,
        help_text="Uploads need an approved participation request (Accounts → Participant approvals).",
    )
    orcid_required = models.BooleanField(
        "ORCID-linked account",
        default=False,
        help_text="Uploads need an account linked to an ORCID iD (one iD per account; needs the site's ORCID "
                  "sign-in: LEXBOARD_ORCID_CLIENT_ID).",
    )
    requires_provenance = models.BooleanField(
        "entries must state their provenance",
        default=False,
        help_text="Uploads (form, API, client, images) must say what the system was trained on, its models and "
                  "their licences, and whether it could have seen the corpus or the test questions; refused "
                  "otherwise, before they count against the quota. Entries already on the board stay.",
    )

    class Meta:
        ordering = ["dataset", "kind", "name"]
        constraints = [models.UniqueConstraint(fields=["dataset", "name"], name="split_unique_name")]

    def __str__(self) -> str:
        return f"{self.dataset.slug}/{self.name}"

    def get_absolute_url(self) -> str:
        return reverse("leaderboard:dataset", args=[self.dataset.slug]) + f"?split={self.name}"

    def clean(self) -> None:
        # Every score of a hidden split without the Ladder is released: a probe run (one topic's candidates, the
        # rest known misses) reads one judgment bit per run on the grid. Below five topics the Ladder could
        # release nothing (2⁻⁴ > 0.05), so there it may be off (docs/security.md, "Small splits").
        # A new split has no topics yet: it starts with the Ladder on, which a split kept under five topics may
        # then turn off.
        if not self.hidden or self.ladder:
            return
        n_topics = self.topic_count() if self.pk is not None else None
        if n_topics is None or n_topics >= LADDER_MIN_TOPICS:
            topics = "A new hidden split" if n_topics is None else f"A hidden split of {n_topics} topics"
            raise ValidationError({"ladder": (
                f"{topics} releases scores only through the Ladder (without it, every run's score is released, "
                "and crafted runs read the hidden judgments one by one). Keep the Ladder on, or make the split "
                f"public if its judgments may be known; only a split of fewer than {LADDER_MIN_TOPICS} topics, "
                "where no run could ever be significant, may turn it off."
            )})

    def topic_count(self) -> int:
        """The split's topics: its judged ones, or its topic list when that is longer (judgments to come)."""
        judged = self.current_qrels.n_topics if self.current_qrels_id is not None and self.current_qrels else 0
        return max(judged, self.topics.count())

    @property
    def open_for_uploads(self) -> bool:
        """Whether an upload can be taken now: open, and judged or opened for runs before judgments."""
        return self.accepts_submissions and (self.current_qrels_id is not None or self.open_before_judgments)

    @property
    def closed_reason(self) -> str | None:
        """Why the split takes no new submission now (an upload or a fusion), for a person; None when it does."""
        if not self.accepts_submissions:
            return f"{self} does not accept submissions at the moment."
        if self.current_qrels_id is None and not self.open_before_judgments:
            return (
                f"{self} is not open for uploads yet: its relevance judgments are not published, so a run could "
                "not be scored. Come back when the dataset page shows a leaderboard for it."
            )
        return None

    @property
    def waits_for_judgments(self) -> bool:
        """Open for runs that will be scored only when the judgments are published."""
        return self.current_qrels_id is None and self.open_before_judgments

    @property
    def uses_ladder(self) -> bool:
        """The Ladder gates this split's scores: a hidden split with the option on (the default)."""
        return self.hidden and self.ladder

    @property
    def judgment_batch_minimum(self) -> int:
        """Fewest changed judgments a new current version of a hidden split must carry (0: no minimum).

        Public splits show every per-query value anyway, so a small change tells nothing new there.
        """
        return int(self.min_judgment_batch) if self.hidden else 0

    @property
    def requires_verified_email(self) -> bool:
        """Whether uploading needs a verified e-mail: by default exactly on hidden splits, whose quota is the limit."""
        if self.verified_email == self.VerifiedEmail.IF_HIDDEN:
            return self.hidden
        return self.verified_email == self.VerifiedEmail.ALWAYS

    def bump_cache_version(self, *, pages: bool = True) -> None:
        """Make cached leaderboard rows of this split stale (an atomic increment), and cached pages unless told not to.

        ``pages=False`` is for a score landing: its worker renews the pages
        itself once committed (``page_generation.pages_renew``), rendering the
        busiest ahead of the crowd; a bump here, before the commit, would have
        the web render the old rows meanwhile.
        """
        Split.objects.filter(pk=self.pk).update(cache_version=models.F("cache_version") + 1)
        if pages:
            page_generation_bump()  # cached anonymous pages too (leaderboard/page_cache.py)


class Topic(models.Model):
    """A question of a split, with its category for breakdowns."""

    split = models.ForeignKey(Split, on_delete=models.CASCADE, related_name="topics")
    qid = models.CharField(max_length=100)
    text = models.TextField()
    category = models.CharField(max_length=100, blank=True)
    subcategory = models.CharField(max_length=200, blank=True)
    extra = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["split", "qid"]
        constraints = [models.UniqueConstraint(fields=["split", "qid"], name="topic_unique_qid")]
        indexes = [models.Index(fields=["split", "category"])]

    def __str__(self) -> str:
        return f"{self.split}:{self.qid}"


class QrelsVersion(models.Model):
    """One version of a split's relevance judgments, as gzip-compressed TREC qrels text.

    Versions are immutable: importing different judgments adds a version, and
    publishing it (``Split.current_qrels``) triggers rescoring.
    """

    split = models.ForeignKey(Split, on_delete=models.CASCADE, related_name="qrels_versions")
    version = models.PositiveIntegerField()
    qrels_gz = models.BinaryField()
    sha256 = models.CharField(max_length=64)
    n_topics = models.PositiveIntegerField(default=0)
    n_judgments = models.PositiveIntegerField(default=0)
    n_relevant = models.PositiveIntegerField(default=0)
    note = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # Set when a curator published this version although it changes fewer judgments than the split's minimum
    # batch (``Split.min_judgment_batch``): who, and why (shown in the qrels history: say why, not which judgment).
    small_change_reason = models.CharField(max_length=300, blank=True)
    small_change_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["split", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["split", "version"], name="qrels_unique_version"),
            models.UniqueConstraint(fields=["split", "sha256"], name="qrels_unique_content"),
        ]

    def __str__(self) -> str:
        return f"{self.split} qrels v{self.version}"

    @staticmethod
    def pack(text: str) -> tuple[bytes, str]:
        raw = text.encode()
        return gzip.compress(raw, mtime=0), hashlib.sha256(raw).hexdigest()

    def text(self) -> str:
        return gzip.decompress(bytes(self.qrels_gz)).decode()

    def judgment_items(self) -> dict[tuple[str, ...], str]:
        """The stored judgments keyed by what one judgment is about: (query, document) for qrels, the example's
        id for a classification gold (one JSON object per line); the value is its grade or its line."""
        items: dict[tuple[str, ...], str] = {}
        for line in self.text().splitlines():
            if line.startswith("{"):
                items[(str(json.loads(line)["id"]),)] = line
            elif line.strip():
                qid, _, docid, grade = line.split()[:4]
                items[(qid, docid)] = grade
        return items

    def judgments_changed_from(self, other: QrelsVersion) -> int:
        """How many judgments differ between ``other`` and this version: added, removed or regraded."""
        mine, theirs = self.judgment_items(), other.judgment_items()
        return sum(1 for key in mine.keys() | theirs.keys() if mine.get(key) != theirs.get(key))

    def relevance_changes_from(self, other: QrelsVersion, *, threshold: int) -> RelevanceChanges:
        """What moves a board between ``other`` and this version (the batch rule, ``catalogue.services``).

        Qrels: a judgment whose grade crosses ``threshold`` (absent counts as not relevant), and the topics
        those touch; a relevant document regraded above the threshold is counted apart (graded measures read
        it). A judgment added, removed or regraded below the threshold moves no measure and is not counted:
        padding a version with non-relevant judgments makes no batch (#37). A classification gold: every
        changed example is a label change, and each example its own "topic".
        """
        mine, theirs = self.judgment_items(), other.judgment_items()
        crossed: set[tuple[str, ...]] = set()
        regraded = 0
        for key in mine.keys() | theirs.keys():
            new, old = mine.get(key), theirs.get(key)
            if new == old:
                continue
            if len(key) == 1:  # a classification gold's example
                crossed.add(key)
                continue
            new_rel = new is not None and float(new) >= threshold
            old_rel = old is not None and float(old) >= threshold
            if new_rel != old_rel:
                crossed.add(key)
            elif new_rel:
                regraded += 1
        return RelevanceChanges(crossed=len(crossed), topics=len({key[0] for key in crossed}),
                                regraded_relevant=regraded)


@dataclass(frozen=True)
class RelevanceChanges:
    """Between two judgments versions: judgments crossing the relevance threshold, the topics they touch, and
    relevant documents regraded (still relevant)."""

    crossed: int
    topics: int
    regraded_relevant: int = 0

    @property
    def moves_nothing(self) -> bool:
        """No measure can move: only judgments below the threshold changed."""
        return self.crossed == 0 and self.regraded_relevant == 0


class ReportedResult(models.Model):
    """A result stated in a paper, shown on the leaderboard as reported, not scored here."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="reported_results")
    split = models.ForeignKey(Split, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    system = models.CharField(max_length=200)
    family = models.CharField(max_length=100, blank=True)
    # Always fractions (0..1), whatever the paper printed; every page shows percent.
    scores = models.JSONField(default=dict)
    params = models.CharField(max_length=50, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    source = models.CharField(max_length=400)
    url = models.URLField(blank=True)
    notes = models.TextField(blank=True)
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["dataset", "order", "system"]
        constraints = [models.UniqueConstraint(fields=["dataset", "system", "source"], name="reported_unique")]

    def __str__(self) -> str:
        return f"{self.system} (reported, {self.dataset.slug})"
