from django.apps import AppConfig


class CurationConfig(AppConfig):
    """The curators' surface above the domain: the catalogue's admin (benchmarks, datasets, splits, the import
    form), data terms' versions, shared tasks' admin actions (the reveal, the partition), ``manage.py import_dataset``.

    It has no model: the admin's addresses come from the models' app labels (``/admin/catalogue/dataset/``,
    ``/admin/campaigns/phase/``), not from this package.
    """

    name = "curation"
    verbose_name = "Curation"
