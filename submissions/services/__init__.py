"""Writes of the submissions side, one module per stage of a submission's life.

The database row is the record of the job and the broker only a doorbell:

* :mod:`.inspection` — the cheap checks in the request: an upload read and
  checked (sizes, format, the JSON door, digests, queries, metadata,
  provenance) before anything is stored (``upload_inspect``).
* :mod:`.admission` — whether an upload is taken (the split, the account, the
  shared task's place, the quota, identical entries), then the file and a
  queued row atomically (``submission_create``).
* :mod:`.queue` — the doorbell: sends the scoring and rescoring messages by
  their registered names, never raising (the sweep rings again).
* :mod:`.lifecycle` — metadata, visibility, withdrawal, resubmission, and
  rescoring on request.
* :mod:`.scoring` — ``submission_score`` (the Celery task's body): claim the
  row with a conditional UPDATE, score, store the result and the status in
  one transaction.
* :mod:`.results` — compute scores on a qrels version with the metric core
  (retrieval runs, or :mod:`.predictions` for classification and NER) and
  store them.
* :mod:`.rescoring` — new judgments: staged publication, one rescoring per
  scored submission, and the switch in one UPDATE.
* :mod:`.publishing` — a curator's import and "publish and rescore".
* :mod:`.sweep` — the periodic sweep (Celery beat).
* :mod:`.fusion` — fused runs (RRF, CombSUM) as submissions of their own.

The public functions are re-exported here: ``from submissions import services``
then ``services.submission_create(...)``.
"""

from .admission import submission_create, upload_precheck
from .fusion import FusionFailed, FusionRefused, fused_run_ensure, fusion_create
from .inspection import METADATA_FIELDS, InspectedUpload, check_provenance, upload_inspect
from .lifecycle import (
    split_rescore,
    submission_rescore,
    submission_resubmit,
    submission_set_visibility,
    submission_update_metadata,
    submission_withdraw,
)
from .publishing import qrels_version_publish_and_rescore, release_import
from .queue import submission_enqueue
from .rescoring import (
    PublishOutcome,
    split_finish_rescoring,
    split_qrels_publish,
    split_rescoring_resend,
    submission_rescore_on,
)
from .results import ComputedResult, is_failure_marker, per_query_pack, result_compute, result_store
from .scoring import submission_score, submission_score_now
from .sweep import queued_hold, queued_holds_renew, scoring_recover, submissions_sweep

__all__ = [
    "METADATA_FIELDS",
    "check_provenance",
    "ComputedResult",
    "FusionFailed",
    "FusionRefused",
    "InspectedUpload",
    "PublishOutcome",
    "fused_run_ensure",
    "fusion_create",
    "is_failure_marker",
    "per_query_pack",
    "qrels_version_publish_and_rescore",
    "release_import",
    "result_compute",
    "result_store",
    "queued_hold",
    "queued_holds_renew",
    "scoring_recover",
    "split_finish_rescoring",
    "split_qrels_publish",
    "split_rescore",
    "split_rescoring_resend",
    "submission_create",
    "submission_enqueue",
    "submission_rescore",
    "submission_rescore_on",
    "submission_resubmit",
    "submission_score",
    "submission_score_now",
    "submission_set_visibility",
    "submission_update_metadata",
    "submission_withdraw",
    "submissions_sweep",
    "upload_inspect",
    "upload_precheck",
]
