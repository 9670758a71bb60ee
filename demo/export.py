"""Writing the demo benchmark as files: a BSARD-style folder, a BEIR-style folder, TREC files and the runs.

So a curator can try ``import_dataset`` on files of every supported format and
a researcher can try ``python -m evaluation`` on real runs, without the
database. Django-free. The test split's judgments are written too: these are
generated files on the user's own disk, and the point is to try the tools.

BSARD's importer knows two splits, ``train`` and ``test``; the demo's public
split is ``dev``, so the BSARD-style folder names it ``questions_fr_train.csv``
(say so in the README written next to the files).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from .baselines import BASELINES, Run, run_to_trec
from .generator import SPLITS, DemoData

ARTICLE_COLUMNS = [
    "id", "reference", "article", "law_type", "code", "book", "part", "act", "chapter", "section", "subsection",
    "description",
]
QUESTION_COLUMNS = ["id", "question", "category", "subcategory", "extra_description", "article_ids"]
BSARD_SPLIT_FILE = {"dev": "questions_fr_train.csv", "test": "questions_fr_test.csv"}


def qrels_to_trec(qrels: dict[str, dict[str, int]]) -> bytes:
    """TREC qrels (``qid 0 docid grade``), queries in numeric order, documents too."""
    def num(x: str):
        return (len(x), x)

    return "".join(
        f"{qid} 0 {docid} {qrels[qid][docid]}\n" for qid in sorted(qrels, key=num) for docid in sorted(qrels[qid], key=num)
    ).encode()


def _csv(rows: list[list[str]]) -> bytes:
    buf = io.StringIO(newline="")
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue().encode()


def demo_files(data: DemoData, runs: dict[str, dict[str, Run]] | None = None) -> dict[str, bytes]:
    """Every exported file as ``{relative path: bytes}`` (deterministic)."""
    files: dict[str, bytes] = {}
    # BSARD-style.
    files["bsard/articles_fr.csv"] = _csv(
        [ARTICLE_COLUMNS]
        + [[str(a.id), a.reference, a.text, "federal", a.code, a.book, "", "", "", "", "", a.book] for a in data.articles]
    )
    for split in SPLITS:
        files[f"bsard/{BSARD_SPLIT_FILE[split]}"] = _csv(
            [QUESTION_COLUMNS]
            + [
                [str(q.id), q.text, q.category, q.subcategory, q.extra_description, ",".join(map(str, q.article_ids))]
                for q in data.questions_of(split)
            ]
        )
    # BEIR-style.
    files["beir/corpus.jsonl"] = "".join(
        json.dumps({"_id": str(a.id), "title": a.reference, "text": a.text}, ensure_ascii=False) + "\n"
        for a in data.articles
    ).encode()
    files["beir/queries.jsonl"] = "".join(
        json.dumps(
            {"_id": str(q.id), "text": q.text, "metadata": {"category": q.category, "subcategory": q.subcategory}},
            ensure_ascii=False,
        )
        + "\n"
        for q in data.questions
    ).encode()
    for split in SPLITS:
        qrels = data.qrels(split)
        files[f"beir/qrels/{split}.tsv"] = b"query-id\tcorpus-id\tscore\n" + b"".join(
            line.replace(b" 0 ", b"\t", 1).replace(b" ", b"\t") + b"\n"
            for line in qrels_to_trec(qrels).splitlines()
        )
        # TREC-style.
        files[f"trec/topics.{split}.tsv"] = "".join(
            f"{q.id}\t{q.text}\n" for q in data.questions_of(split)
        ).encode()
        files[f"trec/qrels.{split}.txt"] = qrels_to_trec(qrels)
    files["trec/corpus_ids.txt"] = "".join(f"{i}\n" for i in data.corpus_ids()).encode()
    if runs:
        for baseline in BASELINES:
            for split in SPLITS:
                files[f"runs/{baseline.key}.{split}.trec"] = run_to_trec(runs[baseline.key][split], tag=baseline.tag)
    files["README.txt"] = _readme(data, bool(runs)).encode()
    return files


def _readme(data: DemoData, with_runs: bool) -> str:
    text = f"""Lexboard demo benchmark (synthetic), generator seed {data.seed}, sha256 {data.sha256[:16]}
{len(data.articles)} articles, {len(data.questions)} questions: dev {len(data.questions_of('dev'))} (public judgments),
test {len(data.questions_of('test'))} (hidden on the site). Generated text, not real law.

bsard/  BSARD's release layout. BSARD has train and test; the demo's dev split is in
        questions_fr_train.csv.
          python manage.py import_dataset --format bsard --dataset SLUG bsard/
beir/   corpus.jsonl, queries.jsonl (category in metadata), qrels/dev.tsv, qrels/test.tsv
          python manage.py import_dataset --format beir --dataset SLUG beir/
trec/   topics.SPLIT.tsv (qid<TAB>text), qrels.SPLIT.txt, corpus_ids.txt
          python manage.py import_dataset --format trec --dataset SLUG --split dev \\
              --topics trec/topics.dev.tsv --qrels trec/qrels.dev.txt --corpus-ids trec/corpus_ids.txt
"""
    if with_runs:
        text += """runs/   the baselines' TREC runs (BM25 with a French stemmer, TF-IDF, random), per split
          python -m evaluation score --qrels trec/qrels.dev.txt --run runs/bm25.dev.trec
          python -m evaluation compare --qrels trec/qrels.dev.txt --run runs/bm25.dev.trec --run runs/tfidf.dev.trec --measure R@100
"""
    return text


def demo_export(*, data: DemoData, directory: str | Path, runs: dict[str, dict[str, Run]] | None = None) -> list[Path]:
    """Write :func:`demo_files` under ``directory``; returns the paths written."""
    root = Path(directory)
    written = []
    for name, content in demo_files(data, runs).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        written.append(path)
    return written
