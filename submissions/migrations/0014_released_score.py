"""Result.released_score / released_step: the primary measure as a hidden split shows it, stored once.

Existing judged results of retrieval and NER datasets get the value their split showed (the stored mean on the
grid of the result's N, ``evaluation.ladder.step_for``); classification results (their grid needs the gold's label
supports) are left empty and computed when the Ladder next judges them (a qrels switch replays every result).
"""

from django.db import migrations, models

from evaluation.ladder import on_grid, step_for


def backfill(apps, schema_editor):
    Result = apps.get_model("submissions", "Result")
    rows = (Result.objects.filter(primary_score__isnull=False, n_queries__gt=0)
            .exclude(submission__split__dataset__task__in=["single", "multi"])
            .only("pk", "primary_score", "n_queries"))
    for row in rows.iterator():
        step = step_for(row.n_queries)
        Result.objects.filter(pk=row.pk).update(released_score=on_grid(row.primary_score, step), released_step=step)


class Migration(migrations.Migration):

    dependencies = [
        ("submissions", "0013_ladder_message_text"),
    ]

    operations = [
        migrations.AddField(
            model_name="result",
            name="released_score",
            field=models.FloatField(blank=True, null=True, verbose_name="released primary value (on the grid)"),
        ),
        migrations.AddField(
            model_name="result",
            name="released_step",
            field=models.FloatField(blank=True, null=True, verbose_name="grid step of the released value"),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
