"""submissions/0014: results judged before the released value was stored get the value their split showed.

A retrieval result is scored at the latest migration, the database is taken back to 0013 (the two fields gone)
and forward again: the migration fills them with the stored mean on the grid of the result's N, the value the
board showed then.
"""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from evaluation.ladder import on_grid, step_for
from submissions.models import Result
from submissions.services import submission_create, submission_score_now

from .conftest import good_run, upload

BEFORE = ("submissions", "0013_ladder_message_text")


def _migrate(targets) -> None:
    MigrationExecutor(connection).migrate(targets)


@pytest.mark.django_db(transaction=True)
def test_the_migration_stores_the_value_the_board_showed(tiny_dataset, alice):
    split = tiny_dataset.splits.get(name="test")
    sub = submission_score_now(submission_create(user=alice, split=split, upload=upload(good_run()), enqueue=False,
                                                 metadata={"system_name": "old", "family": "lexical",
                                                           "visibility": "public"}).pk)
    result = Result.objects.get(submission=sub)
    assert result.released_step is not None
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    _migrate([BEFORE if app == "submissions" else (app, name) for app, name in leaves])
    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    result = Result.objects.get(submission=sub)
    step = step_for(result.n_queries)
    assert (result.released_score, result.released_step) == (on_grid(result.primary_score, step), step)
