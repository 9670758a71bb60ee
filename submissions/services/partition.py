"""A shared task's public/private partition of the topics, on the scoring side.

While a phase partitions a split (``campaigns.selectors.phase_partition``),
every result is computed once on all topics and cut in three
(:func:`parts_of`): ``public`` (what the stored :class:`~submissions.models.Result`
holds, so every page, the API, the exports, compare, significance and the
Ladder see the public topics only), ``private`` (the private board's, at the
reveal) and ``full``. The parts are kept as
:class:`~submissions.models.ResultPart` rows. At the reveal,
:func:`.unpartition.split_unpartition` puts the full values back into the Results (the
living board goes on on all topics) and replays the Ladder on them.

Measures are means over evaluated queries (docs/metrics), so a part's mean is
the mean of the per-query values of its queries: exact, no second scoring.
"""

from __future__ import annotations

import io

import numpy as np

from ..models import ResultPart

#: Per-query arrays aligned with ``qids`` that a part keeps; the others (the ranks of relevant documents,
#: the recall curve) are dropped: a hidden split never shows them, and they would mix the parts.
ALIGNED_EXTRAS = ("n_relevant", "first_relevant_rank", "judged_at_10")


def parts_of(*, per_query: bytes, scores: dict[str, float], primary_measure: str,
             public: frozenset[str]) -> dict[str, tuple[dict[str, float], float | None, int, bytes]]:
    """{part: (scores, primary score, number of evaluated queries, per-query npz)} for public, private, full."""
    with np.load(io.BytesIO(per_query), allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    qids = arrays["qids"].astype(str)
    in_public = np.isin(qids, np.asarray(sorted(public), dtype=str))
    out = {"full": (dict(scores), scores.get(primary_measure), len(qids), per_query)}
    for part, mask in (("public", in_public), ("private", ~in_public)):
        kept = {"qids": qids[mask]}
        part_scores = {}
        for name in scores:
            values = np.asarray(arrays[name], dtype=np.float64)[mask]
            kept[name] = values
            part_scores[name] = float(values.mean()) if len(values) else 0.0
        for name in ALIGNED_EXTRAS:
            if name in arrays and len(arrays[name]) == len(qids):
                kept[name] = arrays[name][mask]
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **kept)
        out[part] = (part_scores, part_scores.get(primary_measure), int(mask.sum()), buffer.getvalue())
    return out


def parts_store(*, submission_id: int, version_id: int, parts: dict) -> None:
    """Keep the parts of one result (one row per part: a repeated scoring replaces its rows)."""
    for part, (scores, primary, n, blob) in parts.items():
        ResultPart.objects.update_or_create(
            submission_id=submission_id, qrels_version_id=version_id, part=part,
            defaults={"scores": scores, "primary_score": primary, "n_queries": n, "per_query": blob})
