"""Curators' admin for benchmarks, datasets, splits, topics, corpora, qrels versions and reported results.

Hidden labels stay hidden here too: qrels versions and corpora show counts,
versions and digests, never their content. Qrels change only through the
importers (a new version) and the "publish" action (which rescores), so the
admin writes them the same way the command line does. The dataset page has
an "Import files" view that runs the same importers as ``import_dataset``.
"""

# Importing the modules registers their ModelAdmins with the admin site (Django imports curation.admin).
from .datasets import BenchmarkAdmin, DatasetAdmin, ReportedResultAdmin
from .splits import CorpusAdmin, QrelsVersionAdmin, SplitAdmin, TopicAdmin
from .tasks import PhaseAdmin, PrivateBoardAdmin  # shared tasks: phases (with the reveal) and private boards
from .terms import DataTermsAdmin  # data terms: versions, never edited

__all__ = [
    "BenchmarkAdmin",
    "CorpusAdmin",
    "DataTermsAdmin",
    "DatasetAdmin",
    "PhaseAdmin",
    "PrivateBoardAdmin",
    "QrelsVersionAdmin",
    "ReportedResultAdmin",
    "SplitAdmin",
    "TopicAdmin",
]
