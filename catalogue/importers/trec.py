"""Plain TREC topics and qrels (and optionally corpus ids) → one split.

Topics are either a TSV (``qid<TAB>text[<TAB>category[<TAB>subcategory]]``)
or TREC ``<top>`` SGML (``<num>``, ``<title>``, ``<desc>``, ``<narr>``).
Topics may be left out (a new qrels version of a split that has its topics):
the split's topics are then not touched. Qrels are parsed by the metric core (``evaluation.qrels.read_qrels``), so the
importer accepts exactly what scoring accepts. Corpus ids are one per line
(first column), or a BEIR ``corpus.jsonl``.
"""

from __future__ import annotations

import bisect
import re

from evaluation.errors import InputError, Problem
from evaluation.qrels import read_qrels

from .base import SPLIT_NAME, DatasetFileError, ImportData, ImportRefused, Problems, SplitData, TopicRow, decode_text
from .beir import _corpus

_TAG = re.compile(r"<(/?)(top|num|title|desc|narr)>", re.IGNORECASE)
_LABEL = re.compile(r"^\s*(Number|Topic|Description|Narrative)\s*:\s*", re.IGNORECASE)


def _topics_tsv(text: str, problems: Problems) -> list[TopicRow]:
    topics: list[TopicRow] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) < 2:
            problems.add(n, "has no tab — write qid<TAB>question text[<TAB>category]")
            continue
        if len(cols) > 4:
            problems.add(n, f"has {len(cols)} tab-separated columns — at most qid, text, category, subcategory")
            continue
        qid = cols[0].strip()
        if not qid or any(c.isspace() for c in qid):
            problems.add(n, f'query id "{qid[:40]}" is empty or contains spaces')
            continue
        if qid in seen:
            problems.add(n, f"query id {qid} is already on line {seen[qid]} — ids must be unique")
            continue
        if not cols[1].strip():
            problems.add(n, f"query {qid} has no text")
            continue
        seen[qid] = n
        topics.append(
            TopicRow(
                qid=qid,
                text=cols[1].strip(),
                category=cols[2].strip()[:100] if len(cols) > 2 else "",
                subcategory=cols[3].strip()[:200] if len(cols) > 3 else "",
            )
        )
    return topics


def _topics_sgml(text: str, problems: Problems) -> list[TopicRow]:
    """TREC ``<top>`` blocks; fields run until the next tag, as in the TREC releases."""
    topics: list[TopicRow] = []
    seen: dict[str, int] = {}
    line_of = _line_index(text)
    block_start: int | None = None
    fields: dict[str, str] = {}
    current: tuple[str, int] | None = None
    for m in _TAG.finditer(text):
        closing, tag = m.group(1) == "/", m.group(2).lower()
        if current is not None:
            name, start = current
            fields[name] = (fields.get(name, "") + " " + text[start : m.start()]).strip()
            current = None
        if tag == "top":
            if not closing:
                if block_start is not None:
                    problems.add(line_of(block_start), "<top> is not closed before the next <top> — add </top>")
                block_start, fields = m.start(), {}
                continue
            if block_start is None:
                problems.add(line_of(m.start()), "</top> without an opening <top>")
                continue
            line = line_of(block_start)
            block_start = None
            qid = _LABEL.sub("", fields.get("num", "")).strip()
            title = _LABEL.sub("", fields.get("title", "")).strip()
            desc = _LABEL.sub("", fields.get("desc", "")).strip()
            narr = _LABEL.sub("", fields.get("narr", "")).strip()
            if not qid or any(c.isspace() for c in qid):
                problems.add(line, f'<num> "{qid[:40]}" is missing or not a single token, e.g. <num> Number: 301')
                continue
            if qid in seen:
                problems.add(line, f"topic {qid} is already on line {seen[qid]} — numbers must be unique")
                continue
            if not (title or desc):
                problems.add(line, f"topic {qid} has neither <title> nor <desc>")
                continue
            seen[qid] = line
            extra = {k: v for k, v in (("description", desc), ("narrative", narr)) if v and (k != "description" or title)}
            topics.append(TopicRow(qid=qid, text=title or desc, extra=extra))
        elif not closing:
            if block_start is None:
                problems.add(line_of(m.start()), f"<{tag}> outside a <top> block")
                continue
            current = (tag, m.end())
    if block_start is not None:
        problems.add(line_of(block_start), "<top> is not closed — add </top>")
    return topics


def _line_index(text: str):
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    return lambda pos: bisect.bisect_right(starts, pos)


def parse_topics(name: str, data: bytes, problems: Problems) -> list[TopicRow]:
    text = decode_text(data, problems)
    if text is None:
        return []
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    topics = _topics_sgml(text, problems) if first.lower().startswith("<top") else _topics_tsv(text, problems)
    if not topics and not problems:
        problems.add(None, "holds no topic")
    return topics


def _corpus_ids(name: str, data: bytes, problems: Problems, documents: list[dict] | None = None) -> list[str]:
    """Document ids, one per line; or a BEIR corpus.jsonl, whose text is then kept in ``documents``."""
    if name.lower().endswith(".jsonl"):
        return _corpus(name, data, problems, documents)
    text = decode_text(data, problems)
    if text is None:
        return []
    ids: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        docid = line.split()[0]
        if docid in ids:
            problems.add(n, f"document id {docid} is already on line {ids[docid]} — ids must be unique")
            continue
        ids[docid] = n
    if not ids and not problems:
        problems.add(None, "holds no document id")
    return list(ids)


def parse_trec(
    *,
    split: str,
    topics: tuple[str, bytes] | None,
    qrels: tuple[str, bytes],
    corpus_ids: tuple[str, bytes] | None = None,
    hidden: bool = False,
) -> ImportData:
    """Parse one split's topics and qrels (each given as (file name, bytes)); ``topics=None``: judgments only.

    Raises :class:`ImportRefused` listing every bad line of every file.
    """
    errors: list[InputError] = []
    if not SPLIT_NAME.match(split or ""):
        errors.append(DatasetFileError("--split", [Problem(None, f'"{split}" is not a split name, e.g. test or dev')]))
    topic_rows: list[TopicRow] = []
    if topics is not None:
        tp = Problems(topics[0])
        try:
            topic_rows = parse_topics(topics[0], topics[1], tp)
        except Problems.Full:
            pass
        if (err := tp.error()) is not None:
            errors.append(err)
    qrels_dict: dict[str, dict[str, int]] = {}
    try:
        qrels_dict = read_qrels(qrels[1], name=qrels[0]).to_dict()
    except InputError as exc:
        errors.append(exc)
    ids: list[str] | None = None
    documents: list[dict] = []
    if corpus_ids is not None:
        cp = Problems(corpus_ids[0])
        try:
            ids = _corpus_ids(corpus_ids[0], corpus_ids[1], cp, documents)
        except Problems.Full:
            pass
        if (err := cp.error()) is not None:
            errors.append(err)
    if errors:
        raise ImportRefused(errors)
    data = SplitData(
        name=split, hidden=hidden, topics=topic_rows, qrels=qrels_dict,
        sources=[topics[0], qrels[0]] if topics is not None else [qrels[0]], topics_given=topics is not None,
    )
    return ImportData(
        format="trec", corpus_ids=ids, splits=[data], corpus_source=corpus_ids[0] if corpus_ids else "",
        corpus_documents=documents or None,
    )

