"""How many submissions a scripted attacker needs per recovered (query, document) pair of a hidden split.

    .venv/bin/python bench/bench_attack.py                # 50 topics, 1-4 relevant each, quota 100 per identity
    .venv/bin/python bench/bench_attack.py --smoke        # 10 topics, a second

The attacker holds a good retriever (100 documents per topic, the relevant
ones somewhere in its top 30, as in tests/security/) and wants the hidden
qrels. What the site answers is computed by the functions the site uses:
the metric core's ``evaluate`` and ``recall_curve`` (what the page drew), and
``evaluation.ladder.ladder_step`` + ``round_score`` (what is released now).
The HTTP path of the same attacks is tested against gunicorn and a worker in
tests/security/; this script counts submissions, which the live stack would
only make slower.

* **before** (main before the budget): every run is scored and shown in
  full. The single-query attack — one query's 100 documents, read the
  recall curve's steps (a step at k is a relevant document at rank k) —
  recovers every relevant document of that query in the run, one
  submission per query.
* **after, one identity**: the same attack, and differencing (a full run,
  then the same run with one candidate document moved to rank 1 in one
  query: a higher MRR@10 says it is relevant), until the quota is spent.
  Every answer is what the Ladder releases: nothing, or a rounded mean.
* **after, several identities**: differencing across identities — the
  first identity releases the full run, each other identity's *first*
  submission (always judged against an empty run) is the full run with one
  candidate moved up; comparing the two released, rounded MRR@10 values
  tests one (query, document) pair per identity.

* **grid, one identity / several identities**: the same two attacks against
  what a hidden split releases since the disclosure module (the primary
  measure on its grid; any released number that goes up counts as a hit).

The lattice attack (tests/security/lattice.py: anchors on a known lattice,
probes behind fillers, three rounds per identity, decoded from every released
measure), on a 20-topic split as in tests/security/ and on the demo's size
(100 topics):

* **lattice before**: what main released before the disclosure module — every
  measure of a released run, rounded to 4 decimals;
* **lattice after**: ``submissions.disclosure`` — the primary measure only, on
  the grid of ``evaluation.ladder.step_for`` (the Ladder compares grid values).

The count-probe attack (tests/security/count_probe.py: anchors the attacker
takes to score 1, zeros outside the corpus, one or three guessed documents as
probes, three rounds per identity), decoded from the released primary measure
alone, on 20 and 100 topics, with a first run compared with an empty run or
with a best baseline (about 0.5 R@100): what the grid still lets through.

The verdict-probe attack (tests/security/test_verdict_probe.py): a baseline's ranking, four known relevant
documents, one guess; before the near-copy rule, after it, and after it with the rule escaped (value-neutral
changes on enough other topics), on 20 and 100 topics.

And the board's cost of the grid: how many adjacent entries of a board tie at
its step — the demo's baselines on its 100-topic test split (1 point), BSARD's
reported results (222 topics: 0.5 points) and a simulated crowded 222-topic
board (30 entries between 60 and 75 R@100).

Results go to var/bench-results/attack.json and stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from demo.baselines import baseline_runs  # noqa: E402
from demo.generator import generate  # noqa: E402
from evaluation.ladder import (  # noqa: E402
    ladder_step,
    near_copy_needed,
    near_copy_of,
    on_grid,
    round_score,
    step_for,
    topk_fingerprints,
)
from evaluation.noisy_margin import MECHANISM, margin_for, uniform_from_digest  # noqa: E402
from evaluation.qrels import read_qrels  # noqa: E402
from evaluation.runs import read_run  # noqa: E402
from evaluation.scoring import evaluate, recall_curve  # noqa: E402
from tests.security import count_probe, lattice  # noqa: E402

BASE_DIR = Path(__file__).resolve().parent.parent
DEPTH = 100
MEASURES = ["R@100", "MRR@10"]
PRIMARY = "R@100"
#: The bench's stand-in for the site's secret key (the attacker does not know it: the draws are unpredictable to it).
BENCH_KEY = b"bench-attack: the site's secret key"


def run_text(run: dict[str, list[str]]) -> bytes:
    return "".join(f"{q} Q0 {d} {i + 1} {DEPTH - i} x\n"
                   for q, docs in run.items() for i, d in enumerate(docs)).encode()


def site_draw(text: bytes) -> float:
    """The noise draw the site gives an upload of ``text`` (``submissions.services.ladder.verdict_draw``: an HMAC
    of its content's sha256 and the mechanism's version, keyed by the site's key; here the bench's key)."""
    content = hashlib.sha256(text).hexdigest()
    return uniform_from_digest(hmac.new(BENCH_KEY, f"{content}:{MECHANISM}".encode(), "sha256").digest())


class Split:
    """A hidden split: topics, corpus, qrels, and the attacker's retriever."""

    def __init__(self, *, topics: int, docs: int = 500, seed: int = 20150707):
        rng = np.random.default_rng(seed)
        self.docs = [f"d{i:04d}" for i in range(docs)]
        self.qids = [f"q{i:03d}" for i in range(1, topics + 1)]
        self.relevant: dict[str, set[str]] = {}
        self.run: dict[str, list[str]] = {}
        lines = []
        for q in self.qids:
            picked = rng.choice(docs, size=12, replace=False)
            n_rel = int(rng.integers(1, 5))
            self.relevant[q] = {self.docs[i] for i in picked[:n_rel]}
            for k, i in enumerate(picked):
                lines.append(f"{q} 0 {self.docs[i]} {1 if k < n_rel else 0}")
            ranking = [d for d in rng.permutation(self.docs).tolist() if d not in self.relevant[q]][: DEPTH - n_rel]
            for d in sorted(self.relevant[q]):
                ranking.insert(int(rng.integers(1, 30)), d)  # never first: moving it up shows
            self.run[q] = ranking[:DEPTH]
        self.qrels = read_qrels(("\n".join(lines) + "\n").encode())
        self.qrels_pairs = {(line.split()[0], line.split()[2]) for line in lines}

    def score(self, run: dict[str, list[str]]):
        return evaluate(self.qrels, read_run(run_text(run)), MEASURES, depth=DEPTH)

    def vector(self, evaluation) -> list[float]:
        """The primary measure on every topic of the split (0 where the run has none), for the Ladder."""
        by_q = dict(zip(evaluation.qids, np.asarray(evaluation.per_query[PRIMARY]).tolist()))
        return [by_q.get(q, 0.0) for q in self.qids]


class Identity:
    """One account under the Ladder: its best per-query vector, what it is shown."""

    def __init__(self, split: Split, *, grid: bool = False, noisy: bool = False):
        self.split, self.best, self.submissions, self.noisy = split, None, 0, noisy
        self.step = step_for(len(split.qids)) if grid else None

    def submit(self, run: dict[str, list[str]]) -> dict[str, float] | None:
        """What the site releases of ``run``: every measure at 4 decimals, or (``grid``) the primary measure on the
        split's grid (``submissions.disclosure``); None when the Ladder holds it back."""
        self.submissions += 1
        evaluation = self.split.score(run)
        new = self.split.vector(evaluation)
        step = self.step
        decision = ladder_step(best=self.best, new=new, grid=(lambda v: on_grid(v, step)) if step else None,
                               draw=site_draw(run_text(run)) if self.noisy else None)
        if not decision.released:
            return None
        self.best = new
        if step:
            return {PRIMARY: on_grid(float(evaluation.means[PRIMARY]), step)}
        return {m: round_score(float(evaluation.means[m])) for m in MEASURES}


def _higher(shown: dict[str, float] | None, base: dict[str, float] | None) -> bool:
    """Whether any measure both releases went up (the attacker reads every released number)."""
    return bool(shown and base) and any(m in base and shown[m] > base[m] for m in shown)


def before(split: Split) -> dict:
    """Main's code: one single-query run per topic, the recall curve's steps name the relevant documents."""
    found, submissions = set(), 0
    for q in split.qids:
        submissions += 1
        curve = recall_curve(split.score({q: split.run[q]}))  # what the page drew, at full precision
        steps = np.flatnonzero(np.diff(np.concatenate([[0.0], curve])) > 1e-9)
        found |= {(q, split.run[q][k]) for k in steps.tolist()}
    return _tally(split, found, submissions)


def after_one_identity(split: Split, *, quota: int, grid: bool = False, noisy: bool = False) -> dict:
    """The Ladder, one account: single-query probes and one-query differencing until the quota is spent."""
    me, found = Identity(split, grid=grid, noisy=noisy), set()
    base = me.submit(split.run)  # a legitimate full run: released (it beats an empty run)
    for q in split.qids:
        if me.submissions >= quota:
            break
        me.submit({q: split.run[q]})  # a one-query probe: never released, nothing to read
    candidates = [(q, k) for k in range(1, 30) for q in split.qids]
    for q, k in candidates:
        if me.submissions >= quota:
            break
        probe = dict(split.run)
        probe[q] = [split.run[q][k]] + split.run[q][:k] + split.run[q][k + 1:]
        shown = me.submit(probe)
        if _higher(shown, base):
            found.add((q, split.run[q][k]))
    return _tally(split, found, me.submissions)


def after_identities(split: Split, *, identities: int, grid: bool = False, noisy: bool = False) -> dict:
    """The Ladder, several accounts: each one's first (released) run tests one candidate against the base."""
    first = Identity(split, grid=grid, noisy=noisy)
    base = first.submit(split.run)
    found, submissions = set(), first.submissions
    candidates = [(q, k) for k in range(1, 30) for q in split.qids]
    for q, k in candidates[: identities - 1]:
        other = Identity(split, grid=grid, noisy=noisy)
        probe = dict(split.run)
        probe[q] = [split.run[q][k]] + split.run[q][:k] + split.run[q][k + 1:]
        shown = other.submit(probe)
        submissions += other.submissions
        if _higher(shown, base):
            found.add((q, split.run[q][k]))
    return _tally(split, found, submissions)


def _tally(split: Split, found: set, submissions: int) -> dict:
    right = {(q, d) for q, d in found if d in split.relevant[q]}
    total = sum(len(r) for r in split.relevant.values())
    return {"submissions": submissions, "recovered": len(right), "wrong_guesses": len(found - right),
            "relevant_pairs": total,
            "submissions_per_pair": round(submissions / len(right), 2) if right else None}


LATTICE_MEASURES = ["R@10", "R@100", "MAP@100", "MRR@10", "nDCG@10"]  # the hidden split of tests/security/


def lattice_attack(split: Split, *, identities: int, grid: bool, noisy: bool = False) -> dict:
    """Judgments the lattice attack recovers per identity and per released run, before (``grid=False``) or after."""
    n = len(split.qids)
    step = step_for(n) if grid else None
    recovered, wrong, released, runs = [], 0, 0, 0
    for identity in range(identities):
        best, learnt = None, {}
        for plan in lattice.plans(split.qids, split.run, identity=identity):
            runs += 1
            text = lattice.run_text(plan, split.run)
            evaluation = evaluate(split.qrels, read_run(text), LATTICE_MEASURES, depth=DEPTH)
            new = split.vector(evaluation)
            decision = ladder_step(best=best, new=new, grid=(lambda v: on_grid(v, step)) if step else None,
                                   draw=site_draw(text) if noisy else None)
            if not decision.released:
                continue
            best, released = new, released + 1
            means = {m: float(evaluation.means[m]) for m in LATTICE_MEASURES}
            shown = {PRIMARY: on_grid(means[PRIMARY], step)} if step else {m: round_score(v) for m, v in means.items()}
            learnt.update(lattice.decode(plan, shown, n_topics=n, step=step))
        right = {k for k, v in learnt.items() if v == (k[1] in split.relevant[k[0]])}
        recovered.append(len(right))
        wrong += len(learnt) - len(right)
    return {"topics": n, "identities": identities, "runs": runs, "released_runs": released,
            "recovered_per_identity": recovered, "max_per_identity": max(recovered), "wrong": wrong,
            "per_released_run": round(sum(recovered) / released, 2) if released else 0.0,
            "step": step}


def count_probe_attack(split: Split, *, identities: int, probes: int, baseline: bool, noisy: bool = False) -> dict:
    """Judgments the count-probe attack (tests/security/count_probe.py) recovers from the released primary measure.

    What the site releases since the stored release: R@100 on the grid of the result's N, the Ladder comparing
    grid values; a first run is compared with the split's best baseline (``baseline``: a curator's run as good
    as the attacker's retriever on every other topic and empty on the rest, R@100 about 0.5) or an empty run.
    """
    n = len(split.qids)
    step = step_for(n)
    start = None
    if baseline:
        start = split.vector(split.score({q: (split.run[q] if i % 2 else [f"x{q}b"])
                                          for i, q in enumerate(split.qids)}))
    recovered, wrong, released, runs = [], 0, 0, 0
    for identity in range(identities):
        best, learnt = None, {}
        for plan in count_probe.plans(split.qids, split.run, identity=identity, probes=probes):
            runs += 1
            rankings = count_probe.rankings(plan, split.run)
            evaluation = split.score(rankings)
            new = split.vector(evaluation)
            shown = on_grid(float(evaluation.means[PRIMARY]), step)
            reference = best if best is not None else start
            decision = ladder_step(best=reference, new=new, grid=lambda v: on_grid(v, step), new_shown=shown,
                                   start_name="the best baseline" if best is None and start is not None else "",
                                   draw=site_draw(run_text(rankings)) if noisy else None)
            if not decision.released:
                continue
            best, released = new, released + 1
            learnt.update(count_probe.decode(plan, shown, n_topics=n, step=step))
        right = {k for k, v in learnt.items() if v == (k[1] in split.relevant[k[0]])}
        recovered.append(len(right))
        wrong += len(learnt) - len(right)
    return {"topics": n, "identities": identities, "probes_per_run": probes, "baseline": baseline, "runs": runs,
            "released_runs": released, "recovered_per_identity": recovered, "max_per_identity": max(recovered),
            "total": sum(recovered), "wrong": wrong,
            "per_released_run": round(sum(recovered) / released, 2) if released else 0.0, "step": step}


def verdict_probe_attack(split: Split, *, identities: int, probes: int = 5, near_copy: bool, escape: bool = False,
                         noisy: bool = False, at_the_margin: bool = False, seed: int = 7) -> dict:
    """The verdict as a channel (tests/security/test_verdict_probe.py): the baseline's ranking (here: the
    attacker's retriever without its relevant documents, what BM25 misses), four relevant documents the attacker
    knows on four topics, one guessed document on a fifth; "released" reads relevant, "not a significant
    improvement" not. Each identity reads answers until its first release (after it the best has moved and the
    next verdicts no longer turn on one guess). ``near_copy``: the site's rule (``evaluation.ladder.
    near_copy_of``) against the baseline and the identity's released runs. ``escape``: the attacker knows the
    rule and swaps the last document of enough other topics for an unjudged one, so that the run changes the
    top documents of the topics the rule asks for while their values stay the same. ``noisy``: the site's noisy
    margin (``evaluation.noisy_margin``, a draw per upload keyed by the bench's key). ``at_the_margin``: the
    attacker also puts its retriever's ranking on enough further topics that topics improved − worsened sit one
    below the margin without the guess, where the guess moves the verdict's odds most (by e^(1/b)).
    """
    rng = np.random.default_rng(seed)
    step = step_for(len(split.qids))
    judged = {q: {d for d in split.docs if (q, d) in split.qrels_pairs} for q in split.qids}
    spare = [d for d in split.docs]
    baseline = {}
    for q in split.qids:
        kept = [d for d in split.run[q] if d not in split.relevant[q]]
        baseline[q] = (kept + [d for d in spare if d not in kept and d not in judged[q]])[:DEPTH]
    base_vector = split.vector(split.score(baseline))
    known_topics = split.qids[:4]
    known = {q: sorted(split.relevant[q])[0] for q in known_topics}
    targets = split.qids[4:]
    needed = near_copy_needed(len(split.qids))
    per_identity, runs, answered = [], 0, 0
    for n in range(identities):
        best, first = base_vector, True
        references = {"baseline": topk_fingerprints(baseline, DEPTH)}
        right = wrong = yes_net = 0
        for k in range(probes):
            target = targets[(n * probes + k) % len(targets)]
            relevant = bool(rng.random() < 0.5)
            guess = (sorted(split.relevant[target])[0] if relevant else
                     sorted(judged[target] - split.relevant[target] - set(baseline[target]))[0])
            run = {q: list(docs) for q, docs in baseline.items()}
            for q, d in known.items():
                run[q] = run[q][:DEPTH - 1] + [d]
            run[target] = run[target][:DEPTH - 1] + [guess]
            free = [q for q in split.qids if q not in known and q != target]
            if at_the_margin:  # net improved = the margin − 1 without the guess: its retriever on more topics
                lifted = free[: edge_lift(len(known))]
                for q in lifted:
                    run[q] = list(split.run[q])
                free = free[len(lifted):]
            if escape:
                changed = sum(1 for q in split.qids if run[q] != baseline[q])
                for q in free[: max(0, needed - changed)]:
                    fresh = next(d for d in spare if d not in run[q] and d not in judged[q])
                    run[q] = run[q][:DEPTH - 1] + [fresh]
            runs += 1
            fingerprint = topk_fingerprints(run, DEPTH)
            if near_copy and near_copy_of(new=fingerprint, references=references, units=split.qids) is not None:
                continue  # no verdict: nothing to read
            new = split.vector(split.score(run))
            decision = ladder_step(best=best, new=new, grid=lambda v: on_grid(v, step),
                                   start_name="the best baseline" if first else "",
                                   draw=site_draw(run_text(run)) if noisy else None)
            answered += 1
            right += decision.released == relevant
            wrong += decision.released != relevant
            yes_net += (1 if relevant else -1) if decision.released else 0
            if decision.released:
                break  # the best moved: this identity's next verdicts no longer read one guess
        # The attacker reads a "no" as "not relevant", or (against noise) a "yes" alone: the better of the two.
        per_identity.append(max(right - wrong, yes_net))
    return {"identities": identities, "probes_per_identity": probes, "runs": runs, "verdicts": answered,
            "recovered_per_identity": per_identity, "max_per_identity": max(per_identity),
            "total": int(sum(per_identity)), "verdicts_needed_changed_topics": needed,
            "margin": (margin_for(len(known) + 1 + (edge_lift(len(known)) if at_the_margin else 0)) if noisy
                       else None)}


def edge_lift(known: int) -> int:
    """How many more topics the attacker improves (its retriever's ranking) so that, with ``known`` improved ones,
    ``net`` sits one below the margin without the guess: ``changed`` = net + 1 with the guess relevant."""
    lift = 0
    while known + lift < margin_for(known + lift + 1) - 1:
        lift += 1
    return lift


def noisy_margin_channels(args: argparse.Namespace, split: Split) -> dict:
    """The channels that went through the Ladder before, against the site's rule now (the noisy margin)."""
    out: dict[str, dict] = {"grid_one_identity": after_one_identity(split, quota=args.quota, grid=True, noisy=True)}
    n = max(args.identities)
    out[f"grid_{n}_identities"] = after_identities(split, identities=n, grid=True, noisy=True)
    for topics in (20, 100):
        target = Split(topics=topics)
        out[f"lattice_{topics}_topics"] = lattice_attack(target, identities=args.lattice_identities, grid=True,
                                                         noisy=True)
        out[f"count_{topics}_topics_1_probes_baseline"] = count_probe_attack(
            target, identities=args.count_identities, probes=1, baseline=True, noisy=True)
    return out


def summary(results: dict, args: argparse.Namespace) -> dict:
    """Per channel the bench knows: judgments recovered per identity, the most of any identity, before -> after.

    "before": the site without the defence the row names; "after": the site now (the grid, the Ladder with its
    noisy margin, the near-copy rule). Differencing across identities: recovered pairs / identities.
    """
    noisy, verdicts, lattices, counts = (results["noisy_margin"], results["verdict_probe"], results["lattice"],
                                         results["count_probe"])
    n = max(args.identities)
    rows = {"single_query_recall_curve": {"before": results["before"]["recovered"],
                                          "after": noisy["grid_one_identity"]["recovered"],
                                          "what": "one identity, the page's recall curve, then differencing"},
            "differencing_across_identities": {
                "before": round(results[f"after_{n}_identities"]["recovered"] / n, 2),
                "after": round(noisy[f"grid_{n}_identities"]["recovered"] / n, 2),
                "what": f"{n} identities, each first run one moved candidate (4 decimals -> grid, noisy margin)"}}
    for topics in (20, 100):
        rows[f"lattice_{topics}_topics"] = {
            "before": lattices[f"lattice_{topics}_topics_before"]["max_per_identity"],
            "after": noisy[f"lattice_{topics}_topics"]["max_per_identity"],
            "what": "every measure at 4 decimals -> the primary on its grid, noisy margin"}
        rows[f"count_probe_{topics}_topics"] = {
            "before": counts[f"count_{topics}_topics_1_probes_baseline"]["max_per_identity"],
            "after": noisy[f"count_{topics}_topics_1_probes_baseline"]["max_per_identity"],
            "what": "the grid with the sign-flip test -> the grid with the noisy margin"}
        v = {name: verdicts[f"verdict_{topics}_topics_{name}"]["max_per_identity"]
             for name in ("before", "after", "after_escape", "noisy_escape", "noisy_escape_at_the_margin")}
        rows[f"verdict_probe_{topics}_topics"] = {"before": v["before"], "after": v["after"],
                                                  "what": "no rule -> the near-copy rule"}
        rows[f"verdict_probe_escaped_{topics}_topics"] = {
            "before": v["after_escape"], "after": v["noisy_escape"],
            "what": "the near-copy rule escaped: the sign-flip test -> the noisy margin"}
        rows[f"verdict_probe_at_the_margin_{topics}_topics"] = {
            "before": v["after_escape"], "after": v["noisy_escape_at_the_margin"],
            "what": "escaped, net improved one below the margin without the guess (the bound's worst case)"}
    return rows


def adjacent_ties(values: list[float], step: float) -> dict:
    """How many adjacent entries of a board (sorted by value) become ties when shown on ``step``."""
    ordered = sorted(values, reverse=True)
    shown = [on_grid(v, step) for v in ordered]
    distinct_before = sum(1 for a, b in zip(ordered, ordered[1:]) if a != b)
    ties = sum(1 for a, b, x, y in zip(ordered, ordered[1:], shown, shown[1:]) if a != b and x == y)
    return {"entries": len(values), "step_points": round(100 * step, 3), "adjacent_pairs": len(values) - 1,
            "adjacent_distinct_before": distinct_before, "adjacent_ties_after": ties}


def board_cost() -> dict:
    """The grid's cost on real and simulated boards."""
    data = generate()
    qrels = read_qrels("".join(f"{q} 0 {d} {g}\n" for q, docs in data.qrels("test").items()
                               for d, g in docs.items()).encode())
    demo_means = {}
    for key, per_split in baseline_runs(data).items():
        run = per_split.get("test", {})
        text = "".join(f"{q} Q0 {d} {i + 1} {s} {key}\n" for q, hits in run.items() for i, (d, s) in enumerate(hits))
        demo_means[key] = float(evaluate(qrels, read_run(text.encode()), [PRIMARY], depth=1000).means[PRIMARY])
    n_demo = len(data.qrels("test"))
    cards = json.loads((BASE_DIR / "catalogue" / "cards" / "reported_results.json").read_text())
    bsard = [row["R@100"] / 100 for row in cards["bsard"]["rows"] if row.get("R@100") is not None]
    crowded = np.random.default_rng(222).uniform(0.60, 0.75, size=30).tolist()
    return {"demo_test": {"topics": n_demo, "R@100": {k: round(v, 4) for k, v in demo_means.items()},
                          **adjacent_ties(list(demo_means.values()), step_for(n_demo))},
            "bsard_reported": {"topics": 222, **adjacent_ties(bsard, step_for(222))},
            "bsard_sized_crowded": {"topics": 222, **adjacent_ties(crowded, step_for(222))}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--quota", type=int, default=100, help="total submissions of one identity (the default limit)")
    parser.add_argument("--identities", type=int, nargs="*", default=[10, 50])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--lattice-identities", type=int, default=5)
    parser.add_argument("--count-identities", type=int, default=50, help="identities of the count-probe attack")
    parser.add_argument("--verdict-identities", type=int, default=20, help="identities of the verdict-probe attack")
    args = parser.parse_args()
    if args.smoke:
        args.topics, args.quota, args.identities, args.count_identities = 10, 20, [5], 5
        args.verdict_identities = 3
    started = time.perf_counter()
    split = Split(topics=args.topics)
    results = {"topics": args.topics, "quota": args.quota, "before": before(split),
               "after_one_identity": after_one_identity(split, quota=args.quota),
               "grid_one_identity": after_one_identity(split, quota=args.quota, grid=True)}
    for n in args.identities:
        results[f"after_{n}_identities"] = after_identities(split, identities=n)
        results[f"grid_{n}_identities"] = after_identities(split, identities=n, grid=True)
    lattice_results = {}
    for topics in (20, 100):
        target = Split(topics=topics)
        for grid in (False, True):
            name = f"lattice_{topics}_topics_{'after' if grid else 'before'}"
            lattice_results[name] = lattice_attack(target, identities=args.lattice_identities, grid=grid)
    results["lattice"] = lattice_results
    counting = {}
    for topics in (20, 100):
        target = Split(topics=topics)
        for probes, baseline in ((1, False), (3, False), (1, True)):
            name = f"count_{topics}_topics_{probes}_probes{'_baseline' if baseline else ''}"
            counting[name] = count_probe_attack(target, identities=args.count_identities, probes=probes,
                                                baseline=baseline)
    results["count_probe"] = counting
    verdicts = {}
    for topics in (20, 100):
        target = Split(topics=topics)
        for name, near_copy, escape, noisy, edge in (
                ("before", False, False, False, False), ("after", True, False, False, False),
                ("after_escape", True, True, False, False), ("noisy_escape", True, True, True, False),
                ("noisy_escape_at_the_margin", True, True, True, True)):
            verdicts[f"verdict_{topics}_topics_{name}"] = verdict_probe_attack(
                target, identities=args.verdict_identities, near_copy=near_copy, escape=escape, noisy=noisy,
                at_the_margin=edge)
    results["verdict_probe"] = verdicts
    results["noisy_margin"] = noisy_margin_channels(args, split)
    results["judgments_per_identity"] = summary(results, args)
    results["board_cost"] = board_cost()
    results["seconds"] = round(time.perf_counter() - started, 1)
    out = BASE_DIR / "var" / "bench-results" / "attack.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    for name, r in results.items():
        if isinstance(r, dict) and "submissions" in r:
            per = r["submissions_per_pair"]
            print(f"{name:24s} {r['submissions']:5d} submissions, {r['recovered']:3d} of {r['relevant_pairs']} "
                  f"relevant pairs recovered ({r['wrong_guesses']} wrong): "
                  + (f"{per} submissions per pair" if per is not None else "no pair recovered"))
    for name, r in lattice_results.items():
        print(f"{name:30s} {r['released_runs']:2d} of {r['runs']} runs released, judgments recovered per identity "
              f"{r['recovered_per_identity']} (max {r['max_per_identity']}, {r['wrong']} wrong), "
              f"{r['per_released_run']} per released run")
    for name, r in counting.items():
        print(f"{name:34s} {r['released_runs']:3d} of {r['runs']} runs released, judgments recovered: {r['total']} "
              f"({r['max_per_identity']} at most per identity, {r['wrong']} wrong), {r['per_released_run']} per "
              "released run")
    for name, r in verdicts.items():
        print(f"{name:32s} {r['runs']:3d} runs, {r['verdicts']:3d} verdicts, judgments recovered (right - wrong) per "
              f"identity: at most {r['max_per_identity']}, {r['total']} in all ({r['identities']} identities)")
    print("judgments recovered per identity (right - wrong, the most of any identity), before -> after:")
    for name, r in results["judgments_per_identity"].items():
        print(f"  {name:44s} {r['before']!s:>5} -> {r['after']!s:<5} {r['what']}")
    for name, r in results["board_cost"].items():
        print(f"{name:22s} {r['entries']:3d} entries, {r['topics']} topics, step {r['step_points']} points: "
              f"{r['adjacent_ties_after']} of {r['adjacent_distinct_before']} distinct adjacent pairs tie")
    return 0


if __name__ == "__main__":
    sys.exit(main())
