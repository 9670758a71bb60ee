# Provenance: what the system was trained on, its models and their licences, what it could have seen.
# 0016 moves the old yes/no there, 0017 removes it: PostgreSQL refuses to alter a table with the pending trigger
# events an update leaves until its transaction commits, so data and schema changes go in migrations of their own.

import submissions.provenance
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('submissions', '0014_released_score'),
    ]

    operations = [
        migrations.AddField(
            model_name='submission',
            name='could_have_seen',
            field=models.CharField(choices=[('no', 'neither the corpus nor the test questions'), ('corpus', 'the corpus'), ('test_questions', 'the test questions'), ('both', 'the corpus and the test questions'), ('unknown', 'unknown (not stated)')], default='unknown', max_length=16, verbose_name='could have seen'),
        ),
        migrations.AddField(
            model_name='submission',
            name='models_used',
            field=models.TextField(blank=True, help_text='one model per line: its identifier, a space, its licence (an SPDX id such as Apache-2.0, or `proprietary`), e.g. `BAAI/bge-m3 MIT`', max_length=6040, validators=[submissions.provenance.validate_models_used], verbose_name='models and their licences'),
        ),
        migrations.AddField(
            model_name='submission',
            name='training_data',
            field=models.CharField(choices=[('none', 'none (nothing trained, e.g. BM25)'), ('train_split', "this dataset's train split"), ('other_legal', 'other legal corpora'), ('web_scale', 'web-scale data only'), ('unknown', 'unknown (not stated)')], default='unknown', max_length=16, verbose_name='trained on'),
        ),
        migrations.AddField(
            model_name='submission',
            name='training_data_note',
            field=models.TextField(blank=True, max_length=500, verbose_name='training data, in words'),
        ),
    ]
