"""A BEIR-style folder → corpus ids and one split per ``qrels/<split>.tsv``.

``corpus.jsonl`` lines are ``{"_id", "title", "text"}``; ``queries.jsonl``
lines are ``{"_id", "text"}`` with an optional ``metadata`` object whose
``category`` / ``subcategory`` feed the per-category breakdowns; each qrels
file has ``query-id corpus-id score`` rows, with or without a header line.
A split's topics are the queries its qrels judge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from lexboard.text import count, plural

from .base import (
    SPLIT_NAME,
    ImportData,
    Problems,
    SplitData,
    TopicRow,
    decode_text,
    jsonl_objects,
    pick,
    refuse_if_any,
)


def _jsonl(path: str, data: bytes, problems: Problems):
    """(line, object) for each non-blank line, each with an ``_id``."""
    text = decode_text(data, problems)
    if text is None:
        return
    for n, obj in jsonl_objects(text, problems, example='{"_id": "doc1", "text": "..."}'):
        if "_id" not in obj or obj["_id"] in (None, ""):
            problems.add(n, 'has no "_id" — every line needs an id, e.g. {"_id": "doc1", ...}')
            continue
        yield n, obj


def _corpus(path: str, data: bytes, problems: Problems, documents: list[dict] | None = None) -> list[str]:
    seen: dict[str, int] = {}
    for n, obj in _jsonl(path, data, problems):
        docid = str(obj["_id"]).strip()
        if any(c.isspace() for c in docid):
            problems.add(n, f'"_id" "{docid[:40]}" contains white space — runs could not name it')
            continue
        if docid in seen:
            problems.add(n, f'document "_id" {docid} is already on line {seen[docid]} — ids must be unique')
            continue
        seen[docid] = n
        if documents is not None:
            title, text = obj.get("title"), obj.get("text")
            documents.append({"_id": docid, "title": title if isinstance(title, str) else "",
                              "text": text if isinstance(text, str) else ""})
    if not seen and not problems:
        problems.add(None, "holds no document")
    return list(seen)


def _queries(path: str, data: bytes, problems: Problems) -> dict[str, TopicRow]:
    out: dict[str, TopicRow] = {}
    lines: dict[str, int] = {}
    for n, obj in _jsonl(path, data, problems):
        qid = str(obj["_id"]).strip()
        if any(c.isspace() for c in qid):
            problems.add(n, f'"_id" "{qid[:40]}" contains white space — runs could not name it')
            continue
        if qid in out:
            problems.add(n, f'query "_id" {qid} is already on line {lines[qid]} — ids must be unique')
            continue
        text = obj.get("text")
        if not isinstance(text, str) or not text.strip():
            problems.add(n, 'has no "text" — every query needs its question text')
            continue
        meta = obj.get("metadata") or {}
        if not isinstance(meta, dict):
            problems.add(n, '"metadata" is not a JSON object')
            continue
        category = meta.get("category", obj.get("category", "")) or ""
        subcategory = meta.get("subcategory", obj.get("subcategory", "")) or ""
        extra = {k: v for k, v in meta.items() if k not in ("category", "subcategory")}
        out[qid] = TopicRow(
            qid=qid, text=text.strip(), category=str(category)[:100], subcategory=str(subcategory)[:200], extra=extra
        )
        lines[qid] = n
    return out


def _qrels(path: str, data: bytes, queries: dict[str, TopicRow] | None, problems: Problems) -> dict:
    text = decode_text(data, problems)
    qrels: dict[str, dict[str, int]] = {}
    if text is None:
        return qrels
    where: dict[tuple[str, str], int] = {}
    first = True
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cols = line.split()
        if first:
            first = False
            if len(cols) == 3 and not _is_int(cols[2]):
                continue  # the header, e.g. "query-id corpus-id score"
        if len(cols) == 4 and _is_int(cols[3]):
            problems.add(n, "has 4 columns (TREC qrels) — use --format trec, or write query-id corpus-id score")
            continue
        if len(cols) != 3:
            problems.add(n, f"has {len(cols)} columns — expected query-id, corpus-id and score separated by a tab")
            continue
        qid, docid, score = cols
        if not _is_int(score):
            problems.add(n, f'score "{score[:20]}" is not an integer — write a relevance grade such as 0, 1 or 2')
            continue
        if queries is not None and qid not in queries:
            problems.add(n, f"query-id {qid} is not in queries.jsonl")
            continue
        if (qid, docid) in where:
            problems.add(n, f"this query and document are already judged on line {where[qid, docid]}")
            continue
        where[qid, docid] = n
        qrels.setdefault(qid, {})[docid] = int(float(score))
    return qrels


def _is_int(s: str) -> bool:
    try:
        f = float(s)
    except ValueError:
        return False
    return f == int(f)


def parse_beir(files: Mapping[str, bytes], *, hidden: Iterable[str] = ("test",)) -> ImportData:
    """Parse a BEIR folder; splits named in ``hidden`` get hidden labels.

    Raises :class:`ImportRefused` listing every bad line of every file.
    """
    hidden = set(hidden)
    all_problems: list[Problems] = []

    def need(name: str) -> tuple[str, bytes] | None:
        found = pick(files, name)
        if found is None:
            p = Problems(name)
            p.add(None, "is missing — a BEIR folder holds corpus.jsonl, queries.jsonl and qrels/<split>.tsv")
            all_problems.append(p)
        return found

    corpus_ids: list[str] | None = None
    documents: list[dict] = []
    queries: dict[str, TopicRow] | None = None
    if found := need("corpus.jsonl"):
        p = Problems(found[0])
        all_problems.append(p)
        try:
            corpus_ids = _corpus(*found, p, documents)
        except Problems.Full:
            pass
    if found := need("queries.jsonl"):
        p = Problems(found[0])
        all_problems.append(p)
        try:
            queries = _queries(*found, p)
        except Problems.Full:
            pass
        if p:
            queries = None  # do not also complain about every qrels line naming a refused query

    qrels_files = sorted(
        (name, data)
        for name, data in files.items()
        if name.lower().endswith(".tsv") and (name.startswith("qrels/") or "/qrels/" in name)
    )
    if not qrels_files:
        p = Problems("qrels/")
        p.add(None, "holds no <split>.tsv file — a BEIR folder has e.g. qrels/test.tsv")
        all_problems.append(p)
    splits: list[SplitData] = []
    for name, data in qrels_files:
        split = name.rsplit("/", 1)[-1][: -len(".tsv")]
        p = Problems(name)
        all_problems.append(p)
        if not SPLIT_NAME.match(split):
            p.add(None, "the file name must be the split's name, e.g. test.tsv or dev.tsv (letters, digits, - and _)")
            continue
        try:
            qrels = _qrels(name, data, queries, p)
        except Problems.Full:
            continue
        topics = [queries[q] for q in qrels if queries and q in queries]
        splits.append(SplitData(name=split, hidden=split in hidden, topics=topics, qrels=qrels, sources=[name]))
    refuse_if_any(all_problems)

    notices = []
    judged = {q for s in splits for q in s.qrels}
    unused = [q for q in (queries or {}) if q not in judged]
    if unused:
        notices.append(f"queries.jsonl: {count(len(unused), 'query', 'queries')} "
                       f"{plural(len(unused), 'appears', 'appear')} in no qrels file and "
                       f"{plural(len(unused), 'was', 'were')} not imported")
    missing = sorted(hidden - {s.name for s in splits})
    if missing:
        notices.append(f"no qrels file for the hidden split(s) {', '.join(missing)}")
    return ImportData(format="beir", corpus_ids=corpus_ids, splits=splits, notices=notices, corpus_source="corpus.jsonl",
                      corpus_documents=documents or None)
