"""``python manage.py seed_bench``: a BSARD-scale dataset with a large leaderboard, for the benchmarks in bench/.

Creates the benchmark ``bench`` with the dataset ``bench-bsard``: a corpus of
22,633 ids (``1`` … ``22633``, BSARD's scheme), a hidden test split of 222
queries with 1 to 6 relevant articles each (median 2, like BSARD), eight
measures, and ``--entries`` scored public submissions (200 by default) by
``--owners`` users, each with a stored Result and fake per-query vectors: the
leaderboard pages read stored scores only, so how the scores were made does
not matter to them. Nothing is scored here; the rows are written in bulk.

It also creates the user ``bench`` (the uploader of bench_e2e and
bench_throughput) with an API token, and lifts the split's daily and total
caps (0 = no limit) so a hundred uploads in a row are accepted. The token key
is written to ``--token-file`` (or printed) and the ids to ``--state-file`` as
JSON, for the bench scripts.

Meant for a database of its own (bench/serve.py creates ``lexboard_bench``);
it refuses to run twice on the same database.
"""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path

import numpy as np
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from accounts.models import ApiToken, Profile
from catalogue.models import Benchmark, Dataset, Split, Topic
from catalogue.services import corpus_set, qrels_version_add
from submissions.models import Result, Submission

SLUG = "bench-bsard"
MEASURES = ["R@100", "R@200", "R@500", "MAP@100", "MRR@100", "nDCG@10", "P@10", "RP"]
CATEGORIES = ["family", "housing", "money", "justice", "foreigners", "social security", "work"]
FAMILIES = ["lexical", "dense", "sparse", "hybrid", "reranker", "llm", "other"]


def bench_qrels(*, n_queries: int, n_docs: int, seed: int = 0) -> dict[str, dict[str, int]]:
    """BSARD-like judgments: 1 to 6 relevant documents per query, median 2."""
    rng = np.random.default_rng(seed)
    qrels = {}
    for q in range(1, n_queries + 1):
        n_rel = int(min(6, 1 + rng.poisson(1.2)))
        docs = rng.choice(n_docs, size=n_rel, replace=False) + 1
        qrels[str(q)] = {str(int(d)): 1 for d in docs}
    return qrels


def _per_query_blob(qids: np.ndarray, scores: dict[str, float], rng: np.random.Generator) -> bytes:
    """Fake per-query vectors (one per measure) around the means, in the format the scoring service stores."""
    arrays = {"qids": qids}
    for name, mean in scores.items():
        arrays[name] = np.clip(rng.normal(mean, 0.2, size=len(qids)), 0.0, 1.0)
    arrays["n_relevant"] = rng.integers(1, 7, size=len(qids))
    buffer = io.BytesIO()
    # mypy matches a **dict against numpy's keyword-only allow_pickle: bool as well as **kwds.
    np.savez_compressed(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


class Command(BaseCommand):
    help = "Create the bench dataset (BSARD-scale) with a leaderboard of N scored entries, and the bench user."

    def add_arguments(self, parser):
        parser.add_argument("--entries", type=int, default=200, help="Scored public entries (default 200).")
        parser.add_argument("--owners", type=int, default=40, help="Distinct users owning them (default 40).")
        parser.add_argument("--queries", type=int, default=222, help="Test queries (default 222, as BSARD).")
        parser.add_argument("--corpus", type=int, default=22_633, help="Corpus size (default 22,633, as BSARD).")
        parser.add_argument("--token-file", type=Path, help="Write the bench user's API key here.")
        parser.add_argument("--state-file", type=Path, help="Write dataset slug, split and ids here (JSON).")

    @transaction.atomic
    def handle(self, *args, entries: int, owners: int, queries: int, corpus: int, token_file, state_file,
               **options):
        if Dataset.objects.filter(slug=SLUG).exists():
            raise CommandError(f"The dataset {SLUG!r} exists already: seed a fresh database (bench/serve.py --fresh).")
        User = get_user_model()
        rng = np.random.default_rng(7)

        bench, _ = Benchmark.objects.get_or_create(
            slug="bench", defaults={"name": "Bench", "description": "Synthetic data for the performance benchmarks."}
        )
        dataset = Dataset.objects.create(
            benchmark=bench,
            slug=SLUG,
            name="BSARD-scale bench",
            language="fr",
            docid_example="1234",
            measures=MEASURES,
            primary_measure="R@100",
            description="A synthetic dataset of BSARD's size, for bench/ (not real data).",
        )
        corpus_set(dataset=dataset, ids=[str(i) for i in range(1, corpus + 1)])
        # 0 = no limit: the bench user uploads a hundred runs in a row. The Ladder off: the bench times
        # scoring until the scores are visible, and would otherwise see no score after its first run.
        split = Split.objects.create(dataset=dataset, name="test", kind="test", hidden=True,
                                     daily_limit=0, total_limit=0, ladder=False)
        qrels = bench_qrels(n_queries=queries, n_docs=corpus)
        Topic.objects.bulk_create(
            Topic(split=split, qid=qid, text=f"Question {qid}?", category=CATEGORIES[i % len(CATEGORIES)])
            for i, qid in enumerate(qrels)
        )
        version, _ = qrels_version_add(split=split, qrels=qrels, publish=True)
        split.refresh_from_db()

        users = User.objects.bulk_create(
            User(username=f"bench-owner-{i:03d}", email=f"owner{i}@bench.invalid", password="!")
            for i in range(owners)
        )
        Profile.objects.bulk_create(
            Profile(user=u, display_name=f"Owner {i}", affiliation=f"Lab {i % 7}") for i, u in enumerate(users)
        )
        now = timezone.now()
        subs = Submission.objects.bulk_create(
            Submission(
                user=users[i % owners],
                split=split,
                system_name=f"System {i:03d}",
                description="",
                team=f"Team {i % 17}",
                paper_url="https://example.org/paper" if i % 3 == 0 else "",
                code_url="https://example.org/code" if i % 4 == 0 else "",
                family=FAMILIES[i % len(FAMILIES)],
                visibility=Submission.Visibility.ANONYMOUS if i % 10 == 9 else Submission.Visibility.PUBLIC,
                is_baseline=i < 3,
                run_file=f"bench/fake-{i}.txt",  # never read: the scores are stored
                original_name=f"run-{i}.txt",
                status=Submission.Status.SCORED,
                attempts=1,
                progress=1.0,
                scoring_started_at=now - timedelta(minutes=entries - i),
                scored_at=now - timedelta(minutes=entries - i),
            )
            for i in range(entries)
        )
        # created_at is auto_now_add: spread the dates like a real leaderboard's.
        for i, sub in enumerate(subs):
            sub.created_at = now - timedelta(days=entries - i)
        Submission.objects.bulk_update(subs, ["created_at"])

        qids = np.asarray(list(qrels), dtype=str)
        results = []
        for sub in subs:
            base = float(rng.uniform(0.1, 0.7))
            scores = {name: round(min(1.0, max(0.0, base + float(rng.normal(0, 0.05)))), 6) for name in MEASURES}
            results.append(
                Result(
                    submission=sub,
                    qrels_version=version,
                    scores=scores,
                    primary_score=scores["R@100"],
                    n_queries=len(qids),
                    per_query=_per_query_blob(qids, scores, rng),
                    duration_seconds=0.0,
                )
            )
        Result.objects.bulk_create(results)

        uploader, _ = User.objects.get_or_create(username="bench", defaults={"email": "bench@bench.invalid"})
        uploader.set_unusable_password()
        uploader.save()
        # The bench's split is hidden: uploads need a verified address (accounts.policy).
        EmailAddress.objects.update_or_create(user=uploader, email=uploader.email,
                                              defaults={"primary": True, "verified": True})
        _token, key = ApiToken.issue(user=uploader, name="bench")
        split.bump_cache_version()

        state = {"dataset": SLUG, "split": split.name, "split_id": split.pk, "user": uploader.username,
                 "entries": entries, "queries": queries, "corpus": corpus, "measures": MEASURES}
        if token_file:
            token_file.write_text(key + "\n")
            token_file.chmod(0o600)
        else:
            self.stdout.write(key)
        if state_file:
            # The judgments beside the state, for benches that time the command line on the same files.
            qrels_file = state_file.with_name("qrels.txt")
            qrels_file.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
            state["qrels_file"] = str(qrels_file)
            state_file.write_text(json.dumps(state, indent=2) + "\n")
        self.stderr.write(f"seeded {SLUG}: {entries} entries x {len(MEASURES)} measures, {queries} queries, "
                          f"{corpus} documents")
