"""One owner of what a hidden split shows: no code outside ``submissions/disclosure.py`` rounds a score or reads
``Split.hidden`` to decide what to show, but for the uses listed here, each with its reason.

The check reads the source (``ast``): a call to ``round``, ``round_score``, ``coarse_p`` or ``on_grid``, a
format spec with a precision on an expression naming a score, mean, value or p-value, and a read of an
attribute ``hidden`` (not ``disclosure.hidden``). A new page or field that rounds or decides on its own fails
here; route it through the module, or add it below with the reason it is not a released number.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.project import PACKAGES as ALL_PACKAGES

ROOT = Path(__file__).resolve().parents[2]
#: Every package but the metric core (whose job is computing the numbers).
PACKAGES = tuple(p for p in ALL_PACKAGES if p != "evaluation")
OWNER = "submissions/disclosure.py"
ROUNDING = {"round", "round_score", "coarse_p", "on_grid"}
SCORE_WORDS = re.compile(r"score|mean|value|p_|diff", re.I)

#: (file, function, kind) → why it is not a released number of a hidden split, or not a display decision.
ALLOWED: dict[tuple[str, str, str], str] = {
    ("assessment/judging.py", "progress_per_assessor", "round"): "assessors' seconds of work",
    ("sandbox/selectors.py", "sandbox_worker_silence", "round"): "seconds since a sandbox worker last answered",
    ("assessment/judging.py", "seconds_since", "round"): "assessors' seconds of work",
    ("assessment/pools.py", "_statistics", "round"): "a pool's expected hours of judging",
    ("api/boards.py", "get", "hidden"): "states the split's flag itself",
    ("leaderboard/downloads.py", "_sources", "hidden"): "which files a split offers: a hidden split's qrels are the labels",
    ("leaderboard/private_board.py", "rank_on_grid", "on_grid"): "the reveal's rows on the grid of the private topics",
    ("leaderboard/private_board.py", "rank_on_grid", "round_score"): "the reveal's rows when no grid applies",
    ("leaderboard/qrels_history.py", "qrels_history", "round"): "Kendall's tau between boards (public splits only)",
    ("leaderboard/significance.py", "_two_digits", "round"): "the power section's topic counts, not a score",
    ("leaderboard/significance.py", "power_context", "on_grid"): "the power section on the split's grid (disclosure.step_for)",
    ("leaderboard/significance.py", "power_context", "round"): "points of a detectable difference, from baselines only",
    ("leaderboard/suites.py", "_format", "format"): "a suite's aggregate of values the boards released",
    ("leaderboard/views_tasks.py", "phase_timeline", "round"): "a phase's elapsed share of time",
    ("leaderboard/views_tasks.py", "task", "round"): "a phase's public share of topics, a setting",
    ("demo/management/commands/seed_bench.py", "handle", "round"): "synthetic scores of the benchmark seeder",
    ("snapshots/archive/released.py", "_phase_shown", "round"): "a shared task's public share as its page writes "
                                                                 "it (a whole percent), a setting, no score",
    ("snapshots/archive/writer.py", "_export", "hidden"): "an archive encrypts (or leaves out) hidden splits' "
                                                                   "labels and states each split's flag; shows nothing",
    ("demo/services.py", "_pct", "format"): "the demo card's text",
    ("demo/services.py", "baselines_ensure", "round"): "a baseline's latency in milliseconds",
    ("catalogue/cards/__init__.py", "to_fraction", "round"): "papers' reported percentages read into fractions",
    ("catalogue/importers/__init__.py", "_classification", "hidden"): "the curator's flag an import creates the "
                                                                        "split with (the registry's parser)",
    ("catalogue/importers/__init__.py", "_trec", "hidden"): "the curator's flag an import creates the split with "
                                                              "(the registry's parser)",
    ("catalogue/importers/base.py", "kind", "hidden"): "an import names the split it creates",
    ("catalogue/importers/classification.py", "classification_import", "hidden"): "an import creates the split",
    ("catalogue/importers/classification.py", "kind", "hidden"): "an import names the split it creates",
    ("catalogue/importers/classification.py", "line", "hidden"): "an import's report to the curator",
    ("catalogue/importers/report.py", "line", "hidden"): "an import's report to the curator",
    ("catalogue/importers/store.py", "dataset_import", "hidden"): "an import creates the split; its report",
    ("catalogue/models.py", "default_split", "hidden"): "which split uploads go to by default",
    ("catalogue/models.py", "requires_verified_email", "hidden"): "who may upload",
    ("catalogue/models.py", "uses_ladder", "hidden"): "the Ladder's decision",
    ("catalogue/models.py", "judgment_batch_minimum", "hidden"): "the smallest batch of new judgments a hidden "
                                                                 "split publishes (a publishing rule, no number)",
    ("presentation/plots.py", "_linear_ticks", "round"): "axis ticks",
    ("presentation/plots.py", "_num", "format"): "SVG coordinates",
    ("presentation/plots.py", "_tick_label", "format"): "axis labels",
    ("presentation/plots.py", "_tick_label", "round"): "axis labels",
    ("campaigns/models.py", "clean", "hidden"): "a shared task needs a hidden split (validation)",
    ("campaigns/models.py", "draw_public", "round"): "the size of the public part, a setting",
    ("participants/analysis.py", "__init__", "hidden"): "a refusal names the split's kind",
    ("catalogue/page_generation.py", "cache_key", "hidden"): "the one cache key of split-derived values (never "
                                                              "shown)",
    ("participants/analysis.py", "recall_curve_points", "round"): "cutoffs of a curve drawn on public splits only",
    ("participants/analysis.py", "value_histogram", "round"): "bin edges of a histogram drawn on public splits only",
    ("lexboard_cli/client.py", "_grid_decimals", "round"): "the decimals of the grid the API named",
    ("lexboard_cli/client.py", "percent_text", "round"): "the client puts what the API released on the grid the "
                                                         "API named (evaluation.ladder.percent_text's twin)",
    ("lexboard_cli/client.py", "percent_text", "format"): "the client prints what the API released, as the site does",
    ("lexboard_cli/client.py", "wait", "round"): "a progress fraction",
    ("api/sandbox.py", "run_body", "round"): "a sandbox queue's estimate in seconds",
    ("lexboard_cli/client.py", "_bytes", "format"): "a file's size",
    ("catalogue/models.py", "clean", "hidden"): "validation: a hidden split of five topics or more keeps the Ladder",
    ("sandbox/models.py", "clean", "hidden"): "validation: only a hidden split can be software-only",
    ("sandbox/selectors.py", "describe", "round"): "a queue estimate in minutes",
    ("sandbox/services.py", "_compare", "round"): "a re-run's score differences, stored for curators; pages show them "
                                                  "on public splits only (sandbox_tags.reruns asks disclosure.hidden)",
    ("participants/compare.py", "compare", "round"): "float noise of a difference of two released values",
    ("submissions/services/fusion.py", "fusable_by", "hidden"): "who may fuse a run (its release, not a number)",
    ("submissions/services/ledger.py", "release_bits", "round"): "the ledger's count of grid values (bits)",
    ("submissions/services/results.py", "result_compute", "hidden"): "which languages the worker scores on its own",
    ("submissions/services/scoring.py", "run", "round"): "a scoring progress fraction",
    ("submissions/services/inspection.py", "check_queries", "hidden"): "the coverage rule at upload",
    ("participants/views.py", "_status_payload", "round"): "a scoring progress fraction",
}

#: Templates print what their view was given; a read of ``.hidden`` decides on its own (templates/), so each is
#: counted here with the reason it decides no number. (template, reads) → why.
TEMPLATE_HIDDEN: dict[tuple[str, int], str] = {
    ("leaderboard/_dataset_card.html", 1): "the split's label (\"hidden labels\"), a fact of the catalogue",
    ("leaderboard/dataset.html", 6): "labels of the split and the qrels history's τ column, whose values the view "
                                     "gives on public splits only (qrels_history asks disclosure)",
    ("leaderboard/significance_legend.html", 1): "the legend's sentence about hidden splits",
    ("participants/compare.html", 1): "the split's label",
    ("participants/fusion.html", 1): "the split's label",
    ("participants/mine.html", 1): "the split's label",
    ("participants/submission_analysis.html", 1): "the sentence about hidden labels",
    ("participants/upload.html", 1): "the split's label",
    ("snapshots/detail.html", 1): "the snapshot's label",
}
HIDDEN_READ = re.compile(r"[\w.]+\.hidden\b(?!_)")
#: A count of topics taken from per-query values in a template: the evaluated-topic count, which
#: ``disclosure.evaluated_count`` / ``topic_count_shown`` withholds during a shared task (#24).
TOPIC_COUNT = re.compile(r"qids\s*\|\s*length|analysis\.n_topics")


def _findings() -> set[tuple[str, str, str]]:
    found = set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if "migrations" in path.parts or name == OWNER:
                continue
            source = path.read_text()

            def visit(node: ast.AST, function: str, name=name, source=source) -> None:
                for child in ast.iter_child_nodes(node):
                    inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) \
                        else function
                    kind = None
                    if isinstance(child, ast.Call):
                        called = child.func
                        called_name = called.id if isinstance(called, ast.Name) else getattr(called, "attr", "")
                        kind = called_name if called_name in ROUNDING else None
                    elif isinstance(child, ast.Attribute) and child.attr == "hidden" and isinstance(child.ctx, ast.Load):
                        kind = None if ast.get_source_segment(source, child.value) == "disclosure" else "hidden"
                    elif isinstance(child, ast.FormattedValue) and child.format_spec is not None:
                        spec = "".join(str(v.value) for v in ast.walk(child.format_spec) if isinstance(v, ast.Constant))
                        expression = ast.get_source_segment(source, child.value) or ""
                        if re.search(r"\.\d+[fge%]", spec) and SCORE_WORDS.search(expression):
                            kind = "format"
                    if kind:
                        found.add((name, inner, kind))
                    visit(child, inner)

            visit(ast.parse(source), "<module>")
    return found


def test_only_the_disclosure_module_rounds_scores_or_reads_split_hidden_for_display():
    found = _findings()
    unexplained = sorted(found - set(ALLOWED))
    assert not unexplained, (
        "rounding or a Split.hidden read outside submissions/disclosure.py (route it through the module, or add it "
        "to ALLOWED with the reason it is no released number):\n" + "\n".join(map(str, unexplained)))


def test_the_allowlist_names_only_what_is_there():
    """A use that went away leaves the list too, so the list stays a true account."""
    stale = sorted(set(ALLOWED) - _findings())
    assert not stale, f"ALLOWED names uses that no longer exist: {stale}"


def test_docs_architecture_names_the_module():
    assert OWNER in (ROOT / "docs" / "architecture.md").read_text()


def _template_reads() -> tuple[dict[str, int], list[str]]:
    hidden: dict[str, int] = {}
    counts: list[str] = []
    for path in sorted((ROOT / "templates").rglob("*.html")):
        name = path.relative_to(ROOT / "templates").as_posix()
        text = path.read_text()
        if n := len(HIDDEN_READ.findall(text)):
            hidden[name] = n
        counts += [f"{name}: {m.group(0)}" for m in TOPIC_COUNT.finditer(text)]
    return hidden, counts


def test_templates_read_split_hidden_only_where_listed_and_print_no_topic_count_of_their_own():
    """#24: the compare page printed ``ref.qids|length`` and the power section ``analysis.n_topics``, counts that
    disclosure withholds during a shared task. A template prints what its view gives (the view asks disclosure)."""
    hidden, counts = _template_reads()
    listed = dict(TEMPLATE_HIDDEN)
    unexplained = sorted(f"{name}: {n} read(s) of .hidden" for name, n in hidden.items() if (name, n) not in listed)
    assert not unexplained, ("a template reads .hidden on its own (ask disclosure in the view, or list it in "
                             "TEMPLATE_HIDDEN with the reason it decides no number):\n" + "\n".join(unexplained))
    assert not counts, "a template counts topics itself (give it disclosure.topic_count_shown):\n" + "\n".join(counts)
    stale = sorted(f"{name} ({n})" for name, n in listed if hidden.get(name) != n)
    assert not stale, f"TEMPLATE_HIDDEN names reads that no longer exist: {stale}"
