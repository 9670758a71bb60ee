"""Curators' admin of datasets' data terms: add a version (numbered for them), read the old ones, never edit one.

A version participants may have accepted is a legal record: the change form of a saved version is read-only,
nothing deletes one, and changing the terms means adding a version (everyone is asked again). Who accepted what
is in the accounts admin ("Terms acceptances"), with a CSV export.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Count
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import format_html

from catalogue.models import Dataset, DataTerms
from catalogue.selectors import data_terms_in_force
from catalogue.services import data_terms_publish


@admin.register(DataTerms)
class DataTermsAdmin(admin.ModelAdmin):
    list_display = ("__str__", "dataset", "version", "title", "created_at", "n_acceptances")
    list_filter = ("dataset",)
    search_fields = ("dataset__slug", "dataset__name", "title")
    list_select_related = ("dataset",)
    fields = ("dataset", "version", "title", "text", "created_at", "created_by", "acceptances_link")
    readonly_fields = ("version", "created_at", "created_by", "acceptances_link")
    read_only_fields = (
        "dataset", "version", "title", "text", "created_at", "created_by", "acceptances_link", "new_version_link")

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_n=Count("acceptances"))

    @admin.display(description="acceptances", ordering="_n")
    def n_acceptances(self, obj) -> int:
        return obj._n

    @admin.display(description="who accepted it")
    def acceptances_link(self, obj) -> str:
        if obj is None or obj.pk is None:
            return "–"
        url = reverse("admin:accounts_termsacceptance_changelist") + f"?terms__id__exact={obj.pk}"
        return format_html('<a href="{}">the acceptances of version {}</a> (export them as CSV there)', url,
                           obj.version)

    @admin.display(description="change the terms")
    def new_version_link(self, obj) -> str:
        if obj is None or obj.pk is None:
            return "–"
        current = data_terms_in_force(dataset_id=obj.dataset_id)
        url = reverse("admin:catalogue_dataterms_add") + f"?dataset={obj.dataset_id}"
        if current is not None and current.pk != obj.pk:
            return format_html('<a href="{}">add version {}</a>, starting from version {} (the text in force)', url,
                               current.version + 1, current.version)
        return format_html('<a href="{}">add version {}</a>, starting from this text', url, obj.version + 1)

    def get_fields(self, request, obj=None):
        return self.read_only_fields if obj is not None else self.fields

    def get_readonly_fields(self, request, obj=None):
        if obj is not None:  # a saved version is never changed: add a new one
            return self.read_only_fields
        return self.readonly_fields

    def add_view(self, request, form_url="", extra_context=None):
        """Without a dataset in the address, ask for it first: the form then starts from the text in force there."""
        if request.method == "GET" and not request.GET.get("dataset"):
            datasets = list(Dataset.objects.select_related("benchmark").order_by("benchmark__order", "order", "name"))
            if datasets:
                for dataset in datasets:
                    dataset.in_force = data_terms_in_force(dataset_id=dataset.pk)  # type: ignore[attr-defined]
                context = {**self.admin_site.each_context(request), "opts": self.opts, "datasets": datasets,
                           "title": "Add data terms version: which dataset?"}
                return render(request, "admin/catalogue/dataterms/choose_dataset.html", context)
        return super().add_view(request, form_url, extra_context)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def get_changeform_initial_data(self, request):
        """A new version starts from the text in force (a curator amends it), when the dataset is given."""
        initial = super().get_changeform_initial_data(request)
        dataset_id = initial.get("dataset")
        current = None
        if isinstance(dataset_id, str) and dataset_id.isdigit():
            current = data_terms_in_force(dataset_id=int(dataset_id))
        if current is not None:
            initial.update(title=current.title, text=current.text)
        return initial

    def save_model(self, request, obj, form, change):
        if change:  # the form is read-only; a crafted POST still changes nothing
            return
        saved = data_terms_publish(dataset=obj.dataset, title=obj.title, text=obj.text, user=request.user)
        obj.pk, obj.version, obj._state.adding = saved.pk, saved.version, False
        self.message_user(request, f"Version {saved.version} of {obj.dataset}'s terms is in force: every participant "
                                   "accepts it before their next download or upload.", messages.SUCCESS)
