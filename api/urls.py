"""API URLs (namespace ``api``, under /api/v1/)."""

from django.urls import path

from leaderboard.page_cache import anonymous_page_cache
from leaderboard.selectors import api_leaderboard_page_key

from . import analysis, boards, finals, researcher, sandbox, submissions, terms
from .contract import SchemaView

app_name = "api"

urlpatterns = [
    path("submissions/", submissions.SubmissionListCreate.as_view(), name="submissions"),
    path("submissions/<id:pk>/", submissions.SubmissionDetail.as_view(), name="submission"),
    path("uploads/", submissions.UploadSlotCreate.as_view(), name="upload_slots"),
    path("submissions/from-upload", submissions.SubmissionFromUpload.as_view(), name="submissions_from_upload"),
    path("submissions/<id:pk>/final", finals.SubmissionFinalView.as_view(), name="submission_final"),
    path("submissions/<id:pk>/per-query", researcher.SubmissionPerQuery.as_view(), name="submission_per_query"),
    path("submissions/<id:pk>/withdraw", researcher.SubmissionWithdraw.as_view(), name="submission_withdraw"),
    path("sandbox/runs/", sandbox.SandboxRunCreate.as_view(), name="sandbox_runs"),
    path("sandbox/runs/<id:pk>/", sandbox.SandboxRunDetail.as_view(), name="sandbox_run"),
    path("sandbox/runs/<id:pk>/cancel", sandbox.SandboxRunCancel.as_view(), name="sandbox_run_cancel"),
    path("datasets/", boards.DatasetList.as_view(), name="datasets"),
    path("datasets/<slug:slug>/", boards.DatasetDetail.as_view(), name="dataset"),
    # Cached for anonymous readers like the leaderboard pages (leaderboard/page_cache.py, docs/performance.md).
    path("datasets/<slug:slug>/leaderboard", anonymous_page_cache(api_leaderboard_page_key)(
        boards.LeaderboardView.as_view()), name="leaderboard"),
    path("datasets/<slug:slug>/files", boards.DatasetFilesView.as_view(), name="dataset_files"),
    path("datasets/<slug:slug>/terms", terms.TermsView.as_view(), name="dataset_terms"),
    path("datasets/<slug:slug>/terms/accept", terms.TermsAcceptView.as_view(), name="dataset_terms_accept"),
    path("datasets/<slug:slug>/tasks", researcher.DatasetTasks.as_view(), name="dataset_tasks"),
    path("compare/", analysis.CompareView.as_view(), name="compare"),
    path("fusions/", analysis.FusionCreate.as_view(), name="fusions"),
    path("schema/", SchemaView.as_view(), name="schema"),
    path("docs/", boards.docs, name="docs"),
]
