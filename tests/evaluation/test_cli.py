"""The command line, run as a subprocess the way a participant runs it."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.run_json import json_run_to_trec

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evaluation", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\nq1 0 d2 2\nq2 0 d3 1\nq3 0 d4 0\n")
    (tmp_path / "a.run").write_text("q1 Q0 d1 1 2 a\nq1 Q0 d9 2 1 a\nq2 Q0 d3 1 1 a\nzz Q0 d3 1 1 a\n")
    (tmp_path / "b.run").write_text("q1 Q0 d2 1 2 b\nq1 Q0 d1 2 1 b\n")
    (tmp_path / "bad.run").write_text("q1 Q0 d1 1 2 a\nq1 Q0 d2 2 nan a\nq1 Q0 d3\n")
    return tmp_path


def test_it_prints_a_table_and_warnings_on_stderr(files):
    res = cli("score", "--qrels", str(files / "q.qrels"), "--run", str(files / "a.run"), "--measures", "R@1,MAP@10")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[1].split() == ["R@1", "0.7500"] and lines[-1].split() == ["queries", "2"]
    assert "not in this split" in res.stderr and "'zz'" in res.stderr


def test_it_prints_json_with_per_query_values(files):
    res = cli("score", "--qrels", str(files / "q.qrels"), "--run", str(files / "b.run"), "--measures", "R@1",
              "--json", "--per-query")
    data = json.loads(res.stdout)
    assert data["measures"] == {"R@1": 0.25} and data["queries"] == 2
    assert data["per_query"] == {"q1": {"R@1": 0.5}, "q2": {"R@1": 0.0}}
    assert {w["code"] for w in data["warnings"]} == {"missing_queries", "no_relevant"}


def test_it_uses_the_default_measures(files):
    data = json.loads(cli("score", "--qrels", str(files / "q.qrels"), "--run", str(files / "a.run"), "--json").stdout)
    assert {"R@10", "R@100", "R@1000", "MAP@100", "MRR@10", "nDCG@10", "P@10", "RP"} <= set(data["measures"])


def test_it_exits_2_with_line_numbers_on_invalid_input(files):
    res = cli("score", "--qrels", str(files / "q.qrels"), "--run", str(files / "bad.run"))
    assert res.returncode == 2 and res.stdout == ""
    assert [line.split(":")[1] for line in res.stderr.splitlines()] == ["2", "3"]


def test_it_groups_the_lines_that_share_a_problem(files):
    rows = []
    for i in range(3000):
        rows.append(f"q1,Q0,d{i},1,0.5,a" if i % 2 == 0 else f"q1 Q0 d{i} 1 x{i} a")
    (files / "many.run").write_text("\n".join(rows) + "\n")
    res = cli("score", "--qrels", str(files / "q.qrels"), "--run", str(files / "many.run"))
    assert res.returncode == 2 and res.stdout == ""
    run = files / "many.run"
    assert res.stderr.splitlines() == [
        f"{run}:1: 1,500 of 3,000 lines: comma- or semicolon-separated — use spaces or tabs between the 6 columns "
        "(query id, Q0, document id, rank, score, run tag) (lines 1, 3, 5, …)",
        f"{run}:2: 1,500 of 3,000 lines: the score is not a number; write a plain decimal number such as 14.2 or "
        "-0.5 (lines 2, 4, 6, …)",
    ]


def test_it_exits_2_on_an_unknown_measure(files):
    res = cli("score", "--qrels", str(files / "q.qrels"), "--run", str(files / "a.run"), "--measures", "F1")
    assert res.returncode == 2 and "unknown measure 'F1'" in res.stderr


def test_it_compares_runs_with_pvalues(files):
    res = cli("compare", "--qrels", str(files / "q.qrels"), "--run", str(files / "a.run"), "--run",
              str(files / "b.run"), "--measure", "R@1", "--json")
    assert res.returncode == 0, res.stderr
    row = json.loads(res.stdout)["comparisons"][0]
    assert row["difference"] == pytest.approx(-0.5)
    assert 0 <= row["p_randomization"] <= 1 and 0 <= row["p_ttest"] <= 1 and "p_randomization_holm" in row


def test_it_fuses_runs_to_stdout(files):
    res = cli("fuse", "--method", "rrf", "--k", "60", str(files / "a.run"), str(files / "b.run"))
    assert res.returncode == 0, res.stderr
    first = res.stdout.splitlines()[0].split()
    assert first[:4] == ["q1", "Q0", "d1", "1"] and float(first[4]) == pytest.approx(1 / 61 + 1 / 62)
    assert first[5] == "rrf60"


def test_it_refuses_a_run_with_the_wrong_id_scheme_given_a_corpus(files):
    (files / "corpus.txt").write_text("CivC::1\nCivC::2\nCivC::3\n")
    res = cli("score", "--qrels", str(files / "q.qrels"), "--run", str(files / "a.run"), "--corpus",
              str(files / "corpus.txt"))
    assert res.returncode == 2 and "id scheme" in res.stderr and "CivC::1" in res.stderr


def test_score_alone_starts_without_blas_threads():
    """``python -m evaluation score`` sets OPENBLAS_NUM_THREADS=1 before numpy's import; other commands and
    importers do not (evaluation/_startup.py)."""
    probe = ("import os, sys; sys.argv = ['-m']; sys.orig_argv = [sys.executable, '-m', 'evaluation', {cmd!r}]; "
             "os.environ.pop('OPENBLAS_NUM_THREADS', None); import evaluation; "
             "print(os.environ.get('OPENBLAS_NUM_THREADS'))")
    for cmd, expected in (("score", "1"), ("compare", "None")):
        res = subprocess.run([sys.executable, "-c", probe.format(cmd=cmd)], cwd=ROOT, capture_output=True, text=True,
                             timeout=60)
        assert res.stdout.strip() == expected, res.stderr
    from evaluation._startup import started_as_score_command
    assert not started_as_score_command()  # this process imported the package as a library


@pytest.mark.parametrize("args", [("--help",), ("score", "--help"), ("compare", "--help"), ("fuse", "--help")])
def test_help_imports_neither_numpy_nor_the_scorer(args):
    """Each command imports what it needs when it runs (evaluation/cli.py): the help needs no numpy."""
    res = subprocess.run([sys.executable, "-X", "importtime", "-m", "evaluation", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "usage:" in res.stdout, res.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")}
    assert not imported & {"numpy", "scipy", "pytrec_eval", "evaluation.scoring", "evaluation.runs"}, sorted(imported)


def test_the_package_loads_its_names_when_first_used():
    code = ("import sys, evaluation; assert 'numpy' not in sys.modules; "
            "from evaluation import evaluate, read_qrels; assert 'numpy' in sys.modules; "
            "print(evaluate.__module__, read_qrels.__module__)")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.stdout.split() == ["evaluation.scoring", "evaluation.qrels"], res.stderr


def test_score_loads_the_second_implementation_only_for_verify(files):
    args = [sys.executable, "-X", "importtime", "-m", "evaluation", "score", "--qrels", str(files / "q.qrels"),
            "--run", str(files / "a.run"), "--measures", "R@1"]
    plain = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=60)
    verified = subprocess.run([*args, "--verify"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0 and verified.returncode == 0, plain.stderr[-500:] + verified.stderr[-500:]
    assert "pytrec_eval" not in plain.stderr and "pytrec_eval" in verified.stderr
    assert "verified:" in verified.stderr


def test_compare_refuses_the_convention_that_lets_each_run_choose_its_queries(files):
    res = cli("compare", "--qrels", str(files / "q.qrels"), "--run", str(files / "a.run"), "--run",
              str(files / "b.run"), "--empty-queries", "trec_eval")
    assert res.returncode == 2 and "invalid choice: 'trec_eval' (choose from 'omit', 'count')" in res.stderr


@pytest.mark.parametrize("gzipped", [False, True])
def test_score_takes_the_json_runs_the_site_takes_with_the_numbers_of_their_trec_run(files, tmp_path, gzipped):
    """#38 item 7: `score --run run.json` was refused ("this looks like JSON"); the site converted the same file."""
    run = {"q1": {"d1": 3.0, "d9": 2.0, "d2": 1.0}, "q2": {"d3": 0.5, "d7": 0.7}}
    data = json.dumps(run).encode()
    path = tmp_path / ("run.json.gz" if gzipped else "run.json")
    path.write_bytes(gzip.compress(data) if gzipped else data)
    trec = tmp_path / "run.trec"
    trec.write_bytes(json_run_to_trec(data))
    args = ["--qrels", str(files / "q.qrels"), "--json", "--per-query"]
    from_json = cli("score", "--run", str(path), *args)
    assert from_json.returncode == 0, from_json.stderr
    assert json.loads(from_json.stdout) == json.loads(cli("score", "--run", str(trec), *args).stdout)


def test_score_refuses_a_json_run_in_the_sites_words(files, tmp_path):
    path = tmp_path / "run.json"
    path.write_bytes(b'{"q1": {"d1": ' + b"9" * 5000 + b"}}")
    res = cli("score", "--qrels", str(files / "q.qrels"), "--run", str(path))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert f"{path}:1: query 'q1', document 'd1': the score is a number of more than 64 characters" in res.stderr


@pytest.mark.parametrize("how", ["file", "pipe"])  # a file goes to the compiled path (when built), a pipe to numpy's
@pytest.mark.parametrize("empty", ["omit", "count", "trec_eval"])
def test_a_run_sharing_no_query_with_the_qrels_is_refused_under_every_convention(files, empty, how):
    # trec_eval: "No queries with both results and relevance info", exit 7; never means over no query.
    run = "zz Q0 d1 1 2 a\nyy Q0 d3 1 1 a\n"
    (files / "other.run").write_text(run)
    args = ["score", "--qrels", str(files / "q.qrels"), "--empty-queries", empty]
    if how == "file":
        res = cli(*args, "--run", str(files / "other.run"))
    else:
        res = subprocess.run([sys.executable, "-m", "evaluation", *args, "--run", "/dev/stdin"], cwd=ROOT,
                             input=run, capture_output=True, text=True, timeout=60)
    where = str(files / "other.run") if how == "file" else "/dev/stdin"
    assert res.returncode == 2 and res.stdout == "", res.stdout
    assert res.stderr.startswith(f"{where}: none of the run's 2 queries is in the qrels (3 queries): nothing to "
                                 "score"), res.stderr
