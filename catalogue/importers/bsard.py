"""BSARD's released CSV files → corpus ids, train (public) and test (hidden) splits.

``articles_fr.csv`` has ``id``, ``article`` and reference/code columns;
``questions_fr_{train,test}.csv`` have ``id``, ``question``, ``category``,
``subcategory``, ``extra_description`` and ``article_ids`` (comma-separated
article ids, every one relevant with grade 1).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping

from .base import ImportData, Problems, SplitData, TopicRow, decode_text, pick, refuse_if_any

ARTICLES = "articles_fr.csv"
QUESTIONS = {"train": "questions_fr_train.csv", "test": "questions_fr_test.csv"}
HIDDEN = {"train": False, "test": True}
ID_LIST = re.compile(r"^\s*\d+(\s*,\s*\d+)*\s*,?\s*$")

# Articles are long; the csv module's default field limit (128 kB) is not enough for a few.
csv.field_size_limit(2**31 - 1)


def _rows(text: str, path: str, required: list[str], problems: Problems):
    """(line, dict) for each record, where line is the record's first line; checks the header."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        problems.add(1, "is empty — it needs a header line naming the columns " + ", ".join(required))
        return
    except csv.Error as exc:
        problems.add(1, f"the header cannot be read as CSV ({exc})")
        return
    header = [h.strip() for h in header]
    missing = [c for c in required if c not in header]
    if missing:
        problems.add(
            1,
            f"the header lacks the column(s) {', '.join(missing)} — it has {', '.join(header) or 'nothing'}; "
            f"the released file starts with {','.join(required)}",
        )
        return
    last = reader.line_num
    while True:
        start = last + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            problems.add(start, f"cannot be read as CSV ({exc}) — check the quotes of this record")
            return
        last = reader.line_num
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            problems.add(
                start,
                f"has {len(row)} fields, the header has {len(header)} — quote fields that contain commas",
            )
            continue
        yield start, dict(zip(header, row, strict=True))


def _articles(path: str, data: bytes, problems: Problems, documents: list[dict] | None = None) -> list[str]:
    text = decode_text(data, problems)
    if text is None:
        return []
    ids: dict[str, int] = {}
    for line, row in _rows(text, path, ["id", "article"], problems):
        raw = row["id"].strip()
        if not raw.isdigit():
            problems.add(line, f'id "{raw[:40]}" is not an integer — BSARD article ids are numbers, e.g. 1234')
            continue
        docid = str(int(raw))
        if docid in ids:
            problems.add(line, f"article id {docid} is already on line {ids[docid]} — ids must be unique")
            continue
        ids[docid] = line
        if documents is not None:
            documents.append({"_id": docid, "title": (row.get("reference") or "").strip(), "text": row["article"]})
    if not ids and not problems:
        problems.add(None, "holds no article")
    return list(ids)


def _questions(path: str, data: bytes, split: str, corpus: set[str] | None, problems: Problems) -> SplitData:
    hidden = HIDDEN[split]
    topics: list[TopicRow] = []
    qrels: dict[str, dict[str, int]] = {}
    text = decode_text(data, problems)
    seen: dict[str, int] = {}
    if text is not None:
        for line, row in _rows(text, path, ["id", "question", "article_ids"], problems):
            qid = row["id"].strip()
            if not qid:
                problems.add(line, "id is empty — every question needs an id")
                continue
            if qid in seen:
                problems.add(line, f"question id {qid} is already on line {seen[qid]} — ids must be unique")
                continue
            seen[qid] = line
            question = row["question"].strip()
            if not question:
                problems.add(line, "question is empty")
                continue
            raw = row["article_ids"].strip()
            docids: list[str] = []
            if raw:
                if not ID_LIST.match(raw):
                    shown = raw if len(raw) <= 40 else raw[:40] + "…"
                    problems.add(
                        line,
                        f'article_ids "{shown}" is not a list of integers — '
                        'write ids separated by commas, e.g. "12,845"',
                    )
                    continue
                docids = list(dict.fromkeys(str(int(x)) for x in raw.strip().strip(",").split(",")))
                if corpus is not None:
                    unknown = [d for d in docids if d not in corpus]
                    if unknown:
                        what = (
                            f"{len(unknown)} article id(s)"
                            if hidden
                            else "article id(s) " + ", ".join(unknown[:5])
                        )
                        problems.add(line, f"article_ids names {what} not in {ARTICLES}")
                        continue
            extra = {}
            if row.get("extra_description", "").strip():
                extra["extra_description"] = row["extra_description"].strip()
            topics.append(
                TopicRow(
                    qid=qid,
                    text=question,
                    category=row.get("category", "").strip()[:100],
                    subcategory=row.get("subcategory", "").strip()[:200],
                    extra=extra,
                )
            )
            if docids:
                qrels[qid] = {d: 1 for d in docids}
    return SplitData(name=split, hidden=hidden, topics=topics, qrels=qrels, sources=[path])


def parse_bsard(files: Mapping[str, bytes]) -> ImportData:
    """Parse a BSARD release folder; raise :class:`ImportRefused` listing every bad line."""
    all_problems: list[Problems] = []
    corpus_ids: list[str] | None = None
    documents: list[dict] = []
    found = pick(files, ARTICLES)
    if found is None:
        p = Problems(ARTICLES)
        p.add(None, "is missing — the BSARD folder must hold articles_fr.csv and the questions_fr_*.csv files")
        all_problems.append(p)
    else:
        path, data = found
        p = Problems(path)
        all_problems.append(p)
        try:
            corpus_ids = _articles(path, data, p, documents)
        except Problems.Full:
            pass
    corpus = set(corpus_ids) if corpus_ids and not any(all_problems) else None
    splits: list[SplitData] = []
    for split, name in QUESTIONS.items():
        found = pick(files, name)
        if found is None:
            continue
        path, data = found
        p = Problems(path)
        all_problems.append(p)
        try:
            splits.append(_questions(path, data, split, corpus, p))
        except Problems.Full:
            pass
    if not any(pick(files, n) for n in QUESTIONS.values()):
        p = Problems("questions_fr_*.csv")
        p.add(None, "no questions file — expected questions_fr_train.csv and/or questions_fr_test.csv")
        all_problems.append(p)
    refuse_if_any(all_problems)
    return ImportData(format="bsard", corpus_ids=corpus_ids, splits=splits, corpus_source=ARTICLES,
                      corpus_documents=documents or None)
