"""The command line's compiled fast path (evaluation/fastscore.py, evaluation/fastscore_c/) against the numpy path.

What it computes must be the numpy path's doubles bit for bit (per-query values, means) and its notices word for
word (missing and unknown queries, queries without a relevant document under each convention, ties, the depth
cut), and everything else must be handed back (None), so the numpy path refuses or warns.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from evaluation import evaluate, fastscore, read_qrels, read_run
from evaluation.errors import RunFormatError
from evaluation.fastscore import FAMILY_CODES, available, plain_measures, score_plain

ROOT = Path(__file__).resolve().parents[2]


def gz(data: bytes) -> bytes:
    """Gzipped with a fixed time: parameters that hold it name the same test in every xdist worker."""
    return gzip.compress(data, mtime=0)
MEASURES = "R@1,R@3,R@10,P@1,P@3,P@10,MAP@2,MAP@10,MRR@1,MRR@3,MRR@10,nDCG@1,nDCG@3,nDCG@10,nDCG@1000,RP,Success@1,Success@3"


@pytest.fixture(autouse=True)
def native():
    if not available():
        if os.environ.get("LEXBOARD_REQUIRE_NATIVE"):
            pytest.fail("evaluation/_fastscore is not built: run `make native`")
        pytest.skip("evaluation/_fastscore is not built (make native)")


def numpy_path(run: Path, qrels: Path, measures: str = MEASURES, *, depth: int = 1000, threshold: int = 1,
               precision: str = "float32", empty: str = "omit",
               ) -> tuple[list[str], dict[str, list[float]], dict[str, float], list]:
    q = read_qrels(str(qrels), threshold=threshold)
    ev = evaluate(q, read_run(str(run)), measures, depth=depth, score_precision=precision,  # type: ignore[arg-type]
                  empty_queries=empty)  # type: ignore[arg-type]
    # What the command shows (cli_score.score): the qrels' no_relevant notice only when such queries are omitted.
    notices = [n for n in q.notices if not (n.code == "no_relevant" and empty != "omit")]
    warnings = [w.to_dict() for w in notices + ev.warnings]
    return ev.qids, {m: v.tolist() for m, v in ev.per_query.items()}, ev.means, warnings


def fast_path(run: Path, qrels: Path, measures: str = MEASURES, *, depth: int = 1000, threshold: int = 1,
              precision: str = "float32", empty: str = "omit"):
    return score_plain(run=str(run), qrels=str(qrels), measures=measures, depth=depth, threshold=threshold,
                       score_precision=precision, empty_queries=empty)  # type: ignore[arg-type]


def assert_same(run: Path, qrels: Path, **kw) -> None:
    fast = fast_path(run, qrels, **kw)
    assert fast is not None, f"the case was handed back: {run.read_bytes()!r} {qrels.read_bytes()!r} {kw}"
    qids, per_query, means, warnings = numpy_path(run, qrels, **kw)
    assert fast.qids == qids
    assert fast.per_query == per_query  # == on floats: the same bits (no NaN here)
    assert fast.means == means
    assert [w.to_dict() for w in fast.warnings] == warnings


# ---------------------------------------------------------------- the plain case, bit for bit

QIDS = ["q1", "q2", "10", "9", "topic-with-a-long-identifier", "Q3", "é1", "τ", "z€"]
DOCS = [f"d{i}" for i in range(15)] + ["CivC::11", "CivC::2", "a-docid-longer-than-16-bytes", "Z", "d1x",
                                       "Άρθρο-1", "Ärt.2", "art.2", "\U0001d400"]
SCORE_TEXT = st.one_of(
    st.sampled_from(["1", "2", "0", "-1", "1.5", "1.50", "2.000000", "29.958970", "29.958969", "-0.0", "0.1",
                     "12345678901234567890.5", "0.30000000000000004441", "340282346638528859811704183484516925440"]),
    st.builds(lambda x, d: f"{x:.{d}f}", st.floats(min_value=-50, max_value=50), st.integers(0, 9)),
)


@st.composite
def cases(draw):
    """Qrels and a run as researchers send them: some qrels queries missing from the run, some run queries the
    qrels lack, qrels queries without a relevant document, UTF-8 ids, more rows than the depth."""
    qids = draw(st.lists(st.sampled_from(QIDS), min_size=1, max_size=6, unique=True))
    threshold = draw(st.sampled_from([1, 1, 2]))
    qrels_lines, run_blocks = [], []
    for i, q in enumerate(qids):
        judged = draw(st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 3), min_size=1, max_size=8))
        if i == 0 or draw(st.integers(0, 4)):  # a relevant document, usually
            judged[draw(st.sampled_from(DOCS))] = draw(st.integers(threshold, 3))
        in_qrels = i == 0 or draw(st.integers(0, 5)) > 0  # else a run query the qrels lack
        in_run = i == 0 or draw(st.integers(0, 5)) > 0  # else a qrels query the run misses
        if in_qrels:
            qrels_lines += [f"{q} 0 {d} {g}" for d, g in judged.items()]
        if not in_run and in_qrels:
            continue
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=14, unique=True))
        rows = [(d, draw(SCORE_TEXT)) for d in docs]
        if draw(st.booleans()):  # usually written in ranked order
            rows.sort(key=lambda r: -float(r[1]))
        sep = draw(st.sampled_from([" ", "\t", "  "]))
        run_blocks.append([sep.join([q, "Q0", d, str(i + 1), s, "tag"]) for i, (d, s) in enumerate(rows)])
    order = draw(st.permutations(range(len(run_blocks))))
    eol = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    lines = [line for i in order for line in run_blocks[i]]
    if draw(st.integers(0, 4)) == 0:  # not grouped by query (shards concatenated, rows shuffled)
        lines = draw(st.permutations(lines))
    run_text = "".join(line + eol for line in lines)
    qrels_lines = draw(st.permutations(qrels_lines))
    depth = draw(st.sampled_from([1000, 14, 100, 1, 3, 5]))
    precision = draw(st.sampled_from(["float32", "float64"]))
    empty = draw(st.sampled_from(["omit", "omit", "count", "trec_eval"]))
    gzipped = draw(st.sampled_from([None, None, None, "run", "qrels"]))
    return eol.join(qrels_lines) + draw(st.sampled_from([eol, ""])), run_text, threshold, depth, precision, empty, gzipped


@pytest.mark.slow  # > 2 s (docs/testing.md)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_it_computes_the_numpy_paths_bits_and_says_its_notices(tmp_path_factory, case):
    qrels_text, run_text, threshold, depth, precision, empty, gzipped = case
    folder = tmp_path_factory.mktemp("fast")
    (folder / "q").write_bytes(gz(qrels_text.encode()) if gzipped == "qrels" else qrels_text.encode())
    (folder / "r").write_bytes(gz(run_text.encode()) if gzipped == "run" else run_text.encode())
    assert_same(folder / "r", folder / "q", threshold=threshold, depth=depth, precision=precision, empty=empty)


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_bsard_sized_run_with_ties(tmp_path, gzipped):
    lines, qrels = [], []
    for q in range(222):
        qrels += [f"{1000 + q} 0 {(q * 7 + j) % 22633} {1 + j % 2}" for j in range(1 + q % 5)]
        lines += [f"{1000 + q} Q0 {(q * 7 + r * 13) % 22633} {r + 1} {(1000 - r) // 3 / 7:.6f} bm25" for r in range(1000)]
    (tmp_path / "q").write_text("\n".join(qrels) + "\n")
    text = ("\n".join(lines) + "\n").encode()
    assert len(text) > 3 << 20  # gzipped, it is inflated in several feeds of at most 1 MiB
    (tmp_path / "r").write_bytes(gz(text) if gzipped else text)
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
    ("gzip run", QRELS, gz(RUN.encode())),
    ("gzip qrels", gz(QRELS.encode()), RUN),
    ("gzip run with a BOM", QRELS, gz(("\ufeff" + RUN).encode())),
    ("UTF-8 docid", QRELS.replace("d3", "Άρθρο-3"), RUN.replace("d3", "Άρθρο-3") + "q2 Q0 dé 2 0.5 t\n"),
    ("UTF-8 query ids and tag", QRELS.replace("q2", "τ2"), RUN.replace("q2", "τ2").replace(" t\n", " ταγ\n")),
    ("a four-byte character", QRELS, RUN.replace("d9", "d\U0001d400")),
    ("a DEL byte in a docid", QRELS, RUN.replace("d9", "d\x7f9")),
    ("unknown query", QRELS, RUN + "q7 Q0 d3 1 1 t\n"),
    ("six unknown queries", QRELS, RUN + "".join(f"u{i} Q0 d3 1 1 t\n" for i in range(6))),
    ("unknown queries first, with ties", QRELS, "u1 Q0 d1 1 1 t\nu1 Q0 d2 2 1 t\n" + RUN),
    ("missing query", QRELS, RUN.replace("q2 Q0 d3 1 1 t\n", "")),
    ("only a qrels query without a relevant document", QRELS + "q3 0 d1 0\n", "q3 Q0 d1 1 1 t\n"),
    ("qrels query without a relevant document", QRELS + "q3 0 d1 0\n", RUN + "q3 Q0 d1 1 1 t\n"),
    ("qrels query without a relevant document, not in the run", QRELS + "q3 0 d1 0\n", RUN),
    ("positive grades below the threshold", QRELS + "q3 0 d1 1\n", RUN + "q3 Q0 d1 1 1 t\n"),
    ("not grouped", QRELS, RUN + "q1 Q0 d5 3 0.5 t\n"),
    ("unknown query not grouped", QRELS, "q7 Q0 d3 1 1 t\n" + RUN + "q7 Q0 d4 2 0.5 t\n"),
    ("not grouped, gzip", QRELS, gz(("q7 Q0 d3 1 1 t\n" + RUN + "q1 Q0 d5 3 2.5 t\n").encode())),
])
@pytest.mark.parametrize("empty", ["omit", "count", "trec_eval"])
def test_these_files_are_taken_with_the_numpy_paths_notices(tmp_path, name, qrels, run, empty):
    for file, text in (("q", qrels), ("r", run)):
        (tmp_path / file).write_bytes(text if isinstance(text, bytes) else text.encode())
    threshold = 2 if name == "positive grades below the threshold" else 1
    assert_same(tmp_path / "r", tmp_path / "q", empty=empty, threshold=threshold)


@pytest.mark.parametrize("gzipped", [False, True])
@pytest.mark.parametrize("empty", ["omit", "count", "trec_eval"])
def test_a_run_with_no_query_of_the_qrels_is_refused_in_the_numpy_paths_words(tmp_path, empty, gzipped):
    run = b"q7 Q0 d3 1 1 t\nq8 Q0 d1 1 1 t\n"
    (tmp_path / "q").write_text(QRELS + "q3 0 d1 0\n")
    (tmp_path / "r").write_bytes(gz(run) if gzipped else run)
    with pytest.raises(RunFormatError) as fast:
        fast_path(tmp_path / "r", tmp_path / "q", empty=empty)
    assert "none of the run's 2 queries is in the qrels (3 queries)" in str(fast.value)
    args = ["score", "--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r"), "--empty-queries", empty]
    slow = subprocess.run([sys.executable, "-c", NUMPY_PATH_ONLY, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert (slow.returncode, slow.stdout, slow.stderr) == (2, "", str(fast.value) + "\n")


def test_rows_beyond_the_depth_are_cut_and_counted_as_the_numpy_path_does(tmp_path):
    (tmp_path / "q").write_text(QRELS)
    (tmp_path / "r").write_text(RUN + "q3 Q0 d1 1 1 t\nq3 Q0 d2 2 1 t\nq3 Q0 d3 3 1 t\n")
    for depth in (1, 2, 3):  # a tie group across the depth counts once it starts within it
        assert_same(tmp_path / "r", tmp_path / "q", depth=depth)
    fast = fast_path(tmp_path / "r", tmp_path / "q", depth=1)
    assert fast is not None and [w.code for w in fast.warnings] == ["unknown_queries", "ties", "depth_cut"]
    assert fast.warnings[-1].count == 3


@pytest.mark.parametrize("name, qrels, run", [
    ("gzip of two members", QRELS, gz(RUN.encode()) + gz(RUN.encode())),
    ("corrupt gzip", QRELS, gz(RUN.encode())[:-6]),
    ("gzip inside gzip", QRELS, gz(gz(RUN.encode()))),
    ("gzip with bytes after it", QRELS, gz(RUN.encode()) + b"\0\0"),
    ("corrupt gzip qrels", gz(QRELS.encode())[:-6], RUN),
    ("text that is not UTF-8", QRELS, RUN + "q2 Q0 d\xe9 2 0.5 t\n".encode("latin-1").decode("latin-1")),
    ("a comment line", QRELS, "# a run\n" + RUN),
    ("blank line", QRELS, RUN + "\n"),
    ("blank qrels line", QRELS + "\n", RUN),
    ("a vertical tab", QRELS, RUN.replace("d9 2", "d9\x0b2")),
    ("text after the tag", QRELS, RUN.replace("1 t\n", "1 t extra\n")),
    ("five columns", QRELS, RUN + "q2 Q0 d4 2 0.5\n"),
    ("exponent score", QRELS, RUN.replace("2.5", "2.5e0")),
    ("nan score", QRELS, RUN.replace("2.5", "nan")),
    ("score beyond a C float", QRELS, RUN.replace("2.5", "1" + "0" * 39)),
    ("rank not an integer", QRELS, RUN.replace("d9 2", "d9 2.0")),
    ("docid twice", QRELS, RUN.replace("d9", "d1")),
    ("docid twice, not grouped", QRELS, RUN + "q1 Q0 d1 3 0.5 t\n"),
    ("docid twice beyond the depth", QRELS, RUN + "q2 Q0 d3 2 0.5 t\n"),
    ("docid twice in an unknown query", QRELS, RUN + "q7 Q0 d3 1 1 t\nq7 Q0 d3 2 0.5 t\n"),
    ("two tags", QRELS, RUN.replace("1 1 t", "1 1 u")),
    ("qrels pair twice", QRELS + "q1 0 d1 0\n", RUN),
    ("grade not an integer", QRELS.replace("d3 2", "d3 2.0"), RUN),
    ("empty run", QRELS, ""),
    ("JSON-looking run", QRELS.replace("q1", "[q1"), RUN.replace("q1", "[q1")),
    ("HTML-looking qrels", QRELS.replace("q1", "<q1"), RUN.replace("q1", "<q1")),
    ("a lone CR", QRELS, RUN.replace("\n", "\r", 1)),
    ("a docid of 257 bytes", QRELS, RUN.replace("d9", "d" * 257)),
    ("a docid of 257 bytes in UTF-8", QRELS, RUN.replace("d9", "é" * 128 + "d")),
    ("a judged docid of 257 bytes", QRELS.replace("d2", "d" * 257), RUN),
    ("a query id of 257 bytes", QRELS.replace("q2", "q" * 257), RUN.replace("q2", "q" * 257)),
    ("a tag of 257 bytes", QRELS, RUN.replace(" t\n", " " + "t" * 257 + "\n")),
    ("a line over 1 MiB", QRELS, RUN + "q2 Q0 d4 2 0.5 t" + " " * (1 << 20) + "\n"),
])
def test_it_hands_back_the_rest(tmp_path, name, qrels, run):
    for file, text in (("q", qrels), ("r", run)):
        data = text if isinstance(text, bytes) else text.encode("latin-1" if "not UTF-8" in name else "utf-8")
        (tmp_path / file).write_bytes(data)
    assert fast_path(tmp_path / "r", tmp_path / "q") is None, name


@pytest.mark.parametrize("encoded", [b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80",
                                     b"\xf8\x88\x80\x80\x80", b"\xef\xbf"])
def test_it_hands_back_what_pythons_utf_8_decoder_refuses(tmp_path, encoded):
    with pytest.raises(UnicodeDecodeError):
        encoded.decode("utf-8")
    (tmp_path / "q").write_text(QRELS)
    (tmp_path / "r").write_bytes(RUN.encode().replace(b"d9", b"d" + encoded + b"9"))
    assert fast_path(tmp_path / "r", tmp_path / "q") is None


def test_it_hands_back_unknown_families(tmp_path):
    for measures in ("bpref", "MAP'@10", "nDCG@1001", "R@0", "RP@10", "R", "nonsense", ""):
        assert plain_measures(measures) is None, measures
    assert plain_measures("R@100, R@100,nDCG′@10") is None
    assert [m[0] for m in plain_measures("R@0100,RP,R@100") or []] == ["R@100", "RP"]
    assert set(FAMILY_CODES) == {"R", "P", "MAP", "MRR", "nDCG", "RP", "Success"}


# ---------------------------------------------------------------- the command line


#: ``python -m evaluation ARGS`` on the numpy path alone: the handler module the command falls back to, its
#: refusals said as the command says them.
NUMPY_PATH_ONLY = ("import sys; from evaluation.cli import _parser; from evaluation.cli_score import score; "
                   "from evaluation.errors import InputError; a = _parser().parse_args(sys.argv[1:])\n"
                   "try: sys.exit(score(a, sys.stdout, sys.stderr))\n"
                   "except InputError as e: print(e, file=sys.stderr); sys.exit(2)")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "evaluation", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


# What researchers send: a tie in q1; q2 missing from the run; a query the qrels lack; a query without a relevant
# document; rows beyond a depth of 2; gzip; a UTF-8 docid.
COMMAND_RUNS = {
    "plain": RUN.replace("2.5", "1.5"),
    "with notices": "q1 Q0 d1 1 1.5 t\nq1 Q0 d9 2 1.5 t\nq1 Q0 Άρθρο 3 1 t\nq7 Q0 d3 1 1 t\nq3 Q0 d1 1 1 t\n",
}


@pytest.mark.parametrize("extra", [[], ["--per-query"], ["--json", "--per-query"], ["--empty-queries", "count"],
                                   ["--empty-queries", "trec_eval", "--depth", "2"]])
@pytest.mark.parametrize("files", ["plain", "with notices", "with notices, gzip"])
def test_the_command_prints_the_numpy_paths_bytes_without_numpy(tmp_path, extra, files):
    (tmp_path / "q").write_text(QRELS + "q2 0 d4 1\n" + ("q3 0 d1 0\n" if files != "plain" else ""))
    run = COMMAND_RUNS[files.removesuffix(", gzip")].encode()
    (tmp_path / "r").write_bytes(gz(run) if files.endswith("gzip") else run)
    args = ["score", "--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r"), *extra]
    fast = run_cli(*args)
    imported = {line.split("|")[-1].strip() for line in fast.stderr.splitlines() if line.startswith("import time:")}
    assert "numpy" not in imported and "evaluation._fastscore" in imported
    # The numpy path on the same files: the same handler module the command falls back to.
    slow = subprocess.run([sys.executable, "-c", NUMPY_PATH_ONLY, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    fast_err = "\n".join(line for line in fast.stderr.splitlines() if not line.startswith("import time:"))
    assert (fast.returncode, fast.stdout, fast_err) == (slow.returncode, slow.stdout, slow.stderr.rstrip("\n"))
    if "--json" in extra:
        codes = [w["code"] for w in json.loads(fast.stdout)["warnings"]]
        assert "ties" in codes and (files == "plain" or {"unknown_queries", "missing_queries"} <= set(codes))
    else:
        assert "equal scores" in fast_err


def test_gzip_is_read_with_the_standard_librarys_zlib_when_isal_is_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(fastscore, "_decompressobj", zlib.decompressobj)
    monkeypatch.setattr(fastscore, "INFLATE_ERRORS", (zlib.error,))
    (tmp_path / "q").write_bytes(gz(QRELS.encode()))
    (tmp_path / "r").write_bytes(gz(RUN.encode()))
    assert_same(tmp_path / "r", tmp_path / "q")
    (tmp_path / "r").write_bytes(gz(RUN.encode())[:-6])
    assert fast_path(tmp_path / "r", tmp_path / "q") is None


def test_a_run_from_a_pipe_is_left_whole_to_the_numpy_path(tmp_path):
    (tmp_path / "q").write_text(QRELS)
    (tmp_path / "r").write_bytes(gz(RUN.encode()))
    args = ["score", "--qrels", str(tmp_path / "q"), "--measures", "R@10,MAP@10"]
    from_file = run_cli(*args, "--run", str(tmp_path / "r"))
    from_pipe = subprocess.run([sys.executable, "-m", "evaluation", *args, "--run", "/dev/stdin"], cwd=ROOT,
                               input=(tmp_path / "r").read_bytes(), capture_output=True, timeout=60)
    assert from_pipe.returncode == 0, from_pipe.stderr
    assert from_pipe.stdout.decode() == from_file.stdout and "R@10" in from_file.stdout
