"""The uploaded JSON kept beside its converted run; ``Result.verified_by`` records what the double entry checked.

``verified_by`` was the second implementation's name ("pytrec_eval", "plain"); it becomes a JSON record. Rows
stored before say only the method, and that the means were not checked then (``"means": false``).
"""

from django.db import migrations, models

import submissions.models


def to_record(apps, schema_editor):
    Result = apps.get_model("submissions", "Result")
    for pk, method in Result.objects.exclude(verified_by_name="").values_list("pk", "verified_by_name").iterator():
        Result.objects.filter(pk=pk).update(verified={"method": method, "means": False})


def to_name(apps, schema_editor):
    Result = apps.get_model("submissions", "Result")
    for pk, record in Result.objects.values_list("pk", "verified").iterator():
        method = record.get("method", "") if isinstance(record, dict) else ""
        if method:
            Result.objects.filter(pk=pk).update(verified_by_name=method[:16])


class Migration(migrations.Migration):

    dependencies = [
        ("submissions", "0021_ranking_sha256_release_kind"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="json_file",
            field=models.FileField(blank=True, max_length=300, storage=submissions.models.private_storage,
                                   upload_to=submissions.models.json_upload_to),
        ),
        migrations.RenameField(model_name="result", old_name="verified_by", new_name="verified_by_name"),
        migrations.AddField(model_name="result", name="verified", field=models.JSONField(blank=True, default=dict)),
        migrations.RunPython(to_record, to_name),
        migrations.RemoveField(model_name="result", name="verified_by_name"),
        migrations.RenameField(model_name="result", old_name="verified", new_name="verified_by"),
        migrations.AlterField(
            model_name="result",
            name="verified_by",
            field=models.JSONField(
                blank=True, default=dict,
                help_text="What the second implementation checked and agreed with: {method: pytrec_eval or plain, "
                          "measures, values_compared, means (every stored mean recomputed), parts (a shared task's "
                          "parts whose means were recomputed), source (trec, json: the uploaded JSON read again, "
                          "predictions)}; docs/metrics.md. Empty on the trace of a rescoring that could not be done, "
                          "and on classification results stored before December 2026; {method} alone (means: false) "
                          "on results stored before the means were checked"),
        ),
    ]
