# A split may require every entry to state its provenance (submissions/provenance.py) before upload.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('catalogue', '0012_hidden_splits_keep_the_ladder'),
    ]

    operations = [
        migrations.AddField(
            model_name='split',
            name='requires_provenance',
            field=models.BooleanField(default=False, help_text='Uploads (form, API, client, images) must say what the system was trained on, its models and their licences, and whether it could have seen the corpus or the test questions; refused otherwise, before they count against the quota. Entries already on the board stay.', verbose_name='entries must state their provenance'),
        ),
    ]
