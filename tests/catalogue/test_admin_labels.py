"""The admin's form controls have names a screen reader reads (issue #38), checked in the HTML the server sends.

The browser sweep (tests/browser/test_admin_sweep.py) runs axe-core on the curator's pages; these are its fast
half, without a browser: a tabular inline's inputs and header cells, a date-and-time field's two inputs, the
sandbox's split select and a fusion's parts.
"""

from __future__ import annotations

from datetime import timedelta
from html.parser import HTMLParser

import pytest
from django.utils import timezone

from campaigns.models import Phase
from catalogue.models import Split
from submissions.models import Submission
from tests.users import participant

pytestmark = pytest.mark.django_db


class Controls(HTMLParser):
    """The form controls a page shows (not hidden ones), the ``for`` of its labels and its header cells' text."""

    def __init__(self) -> None:
        super().__init__()
        self.controls: list[dict[str, str]] = []
        self.label_for: set[str] = set()
        self.headers: list[str] = []
        self._in_th = False

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag in ("input", "select", "textarea") and a.get("type") not in ("hidden", "submit", "button"):
            self.controls.append({"tag": tag, **a})
        elif tag == "label" and a.get("for"):
            self.label_for.add(a["for"])
        elif tag == "th":
            self._in_th = True
            self.headers.append("")

    def handle_endtag(self, tag):
        if tag == "th":
            self._in_th = False

    def handle_data(self, data):
        if self._in_th:
            self.headers[-1] += data.strip()

    def unnamed(self, prefix: str = "") -> list[str]:
        return [c.get("id") or c.get("name", "?") for c in self.controls
                if c.get("id", "").startswith(prefix) and "__prefix__" not in c.get("id", "")
                and c.get("id") not in self.label_for and not c.get("aria-label")]


def controls(client, url: str) -> Controls:
    response = client.get(url)
    assert response.status_code == 200, url
    parsed = Controls()
    parsed.feed(response.content.decode())
    return parsed


def test_a_datasets_split_inline_labels_every_input_and_names_every_header_cell(tiny_dataset, client, staff):
    client.force_login(staff)
    page = controls(client, f"/admin/catalogue/dataset/{tiny_dataset.pk}/change/")
    inline = [c for c in page.controls if c.get("id", "").startswith("id_splits-0-")]
    assert len(inline) >= 8, "the split inline's first row has its name, kind, boxes and limits"
    assert page.unnamed("id_splits-") == []
    assert "" not in page.headers, f"an empty header cell: {page.headers}"


def test_a_phases_dates_name_their_date_and_time_inputs(tiny_dataset, client, staff):
    client.force_login(staff)
    now = timezone.now()
    split = Split.objects.get(dataset=tiny_dataset, name="test")
    phase = Phase.objects.create(split=split, title="Task", opens_at=now + timedelta(days=1),
                                 closes_at=now + timedelta(days=3))
    page = controls(client, f"/admin/campaigns/phase/{phase.pk}/change/")
    names = {c["id"]: c.get("aria-label") for c in page.controls if c.get("id", "").startswith("id_opens_at")}
    assert names == {"id_opens_at_0": "Opens at: date", "id_opens_at_1": "Opens at: time"}
    assert page.unnamed() == []


def test_the_sandboxs_split_is_a_plain_select_and_a_fusions_parts_are_ids(tiny_dataset, client, staff):
    client.force_login(staff)
    picker = next(c for c in controls(client, "/admin/sandbox/splitsandbox/add/").controls if c.get("id") == "id_split")
    assert "admin-autocomplete" not in picker.get("class", ""), "select2: an unnamed combobox the CSP breaks"
    user = participant("fuser")
    run = Submission.objects.create(user=user, split=Split.objects.get(dataset=tiny_dataset, name="dev"),
                                    system_name="parts", original_name="r.trec", file_size=1)
    page = controls(client, f"/admin/submissions/submission/{run.pk}/change/")
    parts = next(c for c in page.controls if c.get("name") == "fusion_of")
    assert parts["tag"] == "input" and "vManyToManyRawIdAdminField" in parts.get("class", "")
    assert page.unnamed() == []
