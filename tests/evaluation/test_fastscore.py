"""The command line's compiled fast path (evaluation/fastscore.py, evaluation/_fastscore.c) against the numpy path.

What it computes must be the numpy path's doubles bit for bit (per-query values, means, the tie notice), and
everything that is not the plain case must be handed back (None), so the numpy path refuses or warns.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from evaluation import evaluate, read_qrels, read_run
from evaluation.fastscore import FAMILY_CODES, available, plain_measures, score_plain

ROOT = Path(__file__).resolve().parents[2]
MEASURES = "R@1,R@3,R@10,P@1,P@3,P@10,MAP@2,MAP@10,MRR@1,MRR@3,MRR@10,nDCG@1,nDCG@3,nDCG@10,nDCG@1000,RP,Success@1,Success@3"


@pytest.fixture(autouse=True)
def native():
    if not available():
        if os.environ.get("LEXBOARD_REQUIRE_NATIVE"):
            pytest.fail("evaluation/_fastscore is not built: run `make native`")
        pytest.skip("evaluation/_fastscore is not built (make native)")


def numpy_path(run: Path, qrels: Path, measures: str = MEASURES, *, depth: int = 1000, threshold: int = 1,
               precision: str = "float32") -> tuple[list[str], dict[str, list[float]], dict[str, float], list]:
    q = read_qrels(str(qrels), threshold=threshold)
    ev = evaluate(q, read_run(str(run)), measures, depth=depth, score_precision=precision)  # type: ignore[arg-type]
    warnings = [w.to_dict() for w in q.notices + ev.warnings]
    return ev.qids, {m: v.tolist() for m, v in ev.per_query.items()}, ev.means, warnings


def fast_path(run: Path, qrels: Path, measures: str = MEASURES, *, depth: int = 1000, threshold: int = 1,
              precision: str = "float32"):
    return score_plain(run=str(run), qrels=str(qrels), measures=measures, depth=depth, threshold=threshold,
                       score_precision=precision)  # type: ignore[arg-type]


def assert_same(run: Path, qrels: Path, **kw) -> None:
    fast = fast_path(run, qrels, **kw)
    assert fast is not None, f"the plain case was handed back: {run.read_text()!r} {qrels.read_text()!r} {kw}"
    qids, per_query, means, warnings = numpy_path(run, qrels, **kw)
    assert fast.qids == qids
    assert fast.per_query == per_query  # == on floats: the same bits (no NaN here)
    assert fast.means == means
    assert [w.to_dict() for w in fast.warnings] == warnings


# ---------------------------------------------------------------- the plain case, bit for bit

QIDS = ["q1", "q2", "10", "9", "topic-with-a-long-identifier", "Q3"]
DOCS = [f"d{i}" for i in range(15)] + ["CivC::11", "CivC::2", "a-docid-longer-than-16-bytes", "Z", "d1x"]
SCORE_TEXT = st.one_of(
    st.sampled_from(["1", "2", "0", "-1", "1.5", "1.50", "2.000000", "29.958970", "29.958969", "-0.0", "0.1",
                     "12345678901234567890.5", "0.30000000000000004441", "340282346638528859811704183484516925440"]),
    st.builds(lambda x, d: f"{x:.{d}f}", st.floats(min_value=-50, max_value=50), st.integers(0, 9)),
)


@st.composite
def cases(draw):
    qids = draw(st.lists(st.sampled_from(QIDS), min_size=1, max_size=5, unique=True))
    threshold = draw(st.sampled_from([1, 1, 2]))
    qrels_lines, run_blocks = [], []
    for q in qids:
        judged = draw(st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 3), min_size=1, max_size=8))
        judged[draw(st.sampled_from(DOCS))] = draw(st.integers(threshold, 3))  # a relevant document
        qrels_lines += [f"{q} 0 {d} {g}" for d, g in judged.items()]
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=14, unique=True))
        rows = [(d, draw(SCORE_TEXT)) for d in docs]
        if draw(st.booleans()):  # usually written in ranked order
            rows.sort(key=lambda r: -float(r[1]))
        sep = draw(st.sampled_from([" ", "\t", "  "]))
        run_blocks.append([sep.join([q, "Q0", d, str(i + 1), s, "tag"]) for i, (d, s) in enumerate(rows)])
    order = draw(st.permutations(range(len(qids))))
    eol = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    run_text = "".join(line + eol for i in order for line in run_blocks[i])
    qrels_lines = draw(st.permutations(qrels_lines))
    depth = draw(st.sampled_from([1000, 14, 100]))
    precision = draw(st.sampled_from(["float32", "float64"]))
    return eol.join(qrels_lines) + draw(st.sampled_from([eol, ""])), run_text, threshold, depth, precision


@pytest.mark.slow  # > 2 s (docs/testing.md)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_it_computes_the_numpy_paths_bits(tmp_path_factory, case):
    qrels_text, run_text, threshold, depth, precision = case
    folder = tmp_path_factory.mktemp("fast")
    (folder / "q").write_bytes(qrels_text.encode())
    (folder / "r").write_bytes(run_text.encode())
    assert_same(folder / "r", folder / "q", threshold=threshold, depth=depth, precision=precision)


def test_a_bsard_sized_run_with_ties(tmp_path):
    lines, qrels = [], []
    for q in range(222):
        qrels += [f"{1000 + q} 0 {(q * 7 + j) % 22633} {1 + j % 2}" for j in range(1 + q % 5)]
        lines += [f"{1000 + q} Q0 {(q * 7 + r * 13) % 22633} {r + 1} {(1000 - r) // 3 / 7:.6f} bm25" for r in range(1000)]
    (tmp_path / "q").write_text("\n".join(qrels) + "\n")
    (tmp_path / "r").write_text("\n".join(lines) + "\n")
    assert_same(tmp_path / "r", tmp_path / "q", measures="R@100,R@200,R@500,MAP@100,MRR@100,nDCG@10,nDCG@100,P@10")
    fast = fast_path(tmp_path / "r", tmp_path / "q")
    assert fast is not None and fast.warnings and fast.warnings[0].code == "ties"


# ---------------------------------------------------------------- what it hands back to the numpy path

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n"
RUN = "q1 Q0 d1 1 2.5 t\nq1 Q0 d9 2 1.5 t\nq2 Q0 d3 1 1 t\n"


@pytest.mark.parametrize("name, qrels, run", [
    ("plain", QRELS, RUN),
    ("CRLF", QRELS.replace("\n", "\r\n"), RUN.replace("\n", "\r\n")),
    ("BOM", "\ufeff" + QRELS, "\ufeff" + RUN),
    ("no newline at the end", QRELS.rstrip("\n"), RUN.rstrip("\n")),
    ("leading blanks and tabs", QRELS.replace("q1 0", "\t q1\t0"), RUN.replace("q2 Q0", "  q2 Q0")),
    ("ids of 256 bytes", QRELS.replace("d3", "d" * 256), RUN.replace("d3", "d" * 256).replace(" t\n", " " + "t" * 256 + "\n")),
])
def test_the_plain_files_of_these_cases_are_taken(tmp_path, name, qrels, run):
    (tmp_path / "q").write_bytes(qrels.encode())
    (tmp_path / "r").write_bytes(run.encode())
    assert_same(tmp_path / "r", tmp_path / "q")


@pytest.mark.parametrize("name, qrels, run", [
    ("gzip run", QRELS, gzip.compress(RUN.encode(), mtime=0)),
    ("gzip qrels", gzip.compress(QRELS.encode(), mtime=0), RUN),
    ("UTF-8 docid", QRELS, RUN + "q2 Q0 dé 2 0.5 t\n"),
    ("comment line", QRELS, "# a run\n" + RUN),
    ("blank line", QRELS, RUN + "\n"),
    ("blank qrels line", QRELS + "\n", RUN),
    ("text after the tag", QRELS, RUN.replace("1 t\n", "1 t extra\n")),
    ("five columns", QRELS, RUN + "q2 Q0 d4 2 0.5\n"),
    ("exponent score", QRELS, RUN.replace("2.5", "2.5e0")),
    ("nan score", QRELS, RUN.replace("2.5", "nan")),
    ("score beyond a C float", QRELS, RUN.replace("2.5", "1" + "0" * 39)),
    ("rank not an integer", QRELS, RUN.replace("d9 2", "d9 2.0")),
    ("unknown query", QRELS, RUN + "q7 Q0 d3 1 1 t\n"),
    ("missing query", QRELS, RUN.replace("q2 Q0 d3 1 1 t\n", "")),
    ("not grouped", QRELS, RUN + "q1 Q0 d5 3 0.5 t\n"),
    ("docid twice", QRELS, RUN.replace("d9", "d1")),
    ("two tags", QRELS, RUN.replace("1 1 t", "1 1 u")),
    ("qrels pair twice", QRELS + "q1 0 d1 0\n", RUN),
    ("qrels query without a relevant document", QRELS + "q3 0 d1 0\n", RUN + "q3 Q0 d1 1 1 t\n"),
    ("grade not an integer", QRELS.replace("d3 2", "d3 2.0"), RUN),
    ("empty run", QRELS, ""),
    ("JSON-looking run", QRELS.replace("q1", "[q1"), RUN.replace("q1", "[q1")),
    ("HTML-looking qrels", QRELS.replace("q1", "<q1"), RUN.replace("q1", "<q1")),
    ("a lone CR", QRELS, RUN.replace("\n", "\r", 1)),
    ("a docid of 257 bytes", QRELS, RUN.replace("d9", "d" * 257)),
    ("a judged docid of 257 bytes", QRELS.replace("d2", "d" * 257), RUN),
    ("a query id of 257 bytes", QRELS.replace("q2", "q" * 257), RUN.replace("q2", "q" * 257)),
    ("a tag of 257 bytes", QRELS, RUN.replace(" t\n", " " + "t" * 257 + "\n")),
    ("a line over 1 MiB", QRELS, RUN + "q2 Q0 d4 2 0.5 t" + " " * (1 << 20) + "\n"),
])
def test_it_hands_back_what_is_not_plain(tmp_path, name, qrels, run):
    for file, text in (("q", qrels), ("r", run)):
        (tmp_path / file).write_bytes(text if isinstance(text, bytes) else text.encode())
    assert fast_path(tmp_path / "r", tmp_path / "q") is None, name


def test_it_hands_back_rows_beyond_the_depth_and_unknown_families(tmp_path):
    (tmp_path / "q").write_text(QRELS)
    (tmp_path / "r").write_text(RUN)
    assert fast_path(tmp_path / "r", tmp_path / "q", depth=1) is None
    assert fast_path(tmp_path / "r", tmp_path / "q", depth=2) is not None
    for measures in ("bpref", "MAP'@10", "nDCG@1001", "R@0", "RP@10", "R", "nonsense", ""):
        assert plain_measures(measures) is None, measures
    assert plain_measures("R@100, R@100,nDCG′@10") is None
    assert [m[0] for m in plain_measures("R@0100,RP,R@100") or []] == ["R@100", "RP"]
    assert set(FAMILY_CODES) == {"R", "P", "MAP", "MRR", "nDCG", "RP", "Success"}


# ---------------------------------------------------------------- the command line


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "evaluation", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("extra", [[], ["--per-query"], ["--json", "--per-query"], ["--empty-queries", "count"]])
def test_the_command_prints_the_numpy_paths_bytes_without_numpy(tmp_path, extra):
    (tmp_path / "q").write_text(QRELS + "q2 0 d4 1\n")
    (tmp_path / "r").write_text(RUN.replace("2.5", "1.5"))  # a tie in q1
    args = ["score", "--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r"), *extra]
    fast = run_cli(*args)
    imported = {line.split("|")[-1].strip() for line in fast.stderr.splitlines() if line.startswith("import time:")}
    assert "numpy" not in imported and "evaluation._fastscore" in imported
    # The numpy path on the same files: the same handler module the command falls back to.
    code = ("import sys; from evaluation.cli import _parser; from evaluation.cli_score import score; "
            "a = _parser().parse_args(sys.argv[1:]); sys.exit(score(a, sys.stdout, sys.stderr))")
    slow = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    fast_err = "\n".join(line for line in fast.stderr.splitlines() if not line.startswith("import time:"))
    assert (fast.returncode, fast.stdout, fast_err) == (slow.returncode, slow.stdout, slow.stderr.rstrip("\n"))
    assert "ties" in fast_err or "equal scores" in fast_err or "--json" in extra
    if "--json" in extra:
        assert json.loads(fast.stdout)["warnings"][0]["code"] == "ties"
