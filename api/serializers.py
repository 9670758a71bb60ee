"""The API's serializers of submissions and of its one error shape (the OpenAPI schema is built from them)."""

from __future__ import annotations

import re

from django.core.validators import RegexValidator
from django.http import QueryDict
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema_field, inline_serializer
from rest_framework import serializers

from participants.forms import METADATA_HELP, METADATA_LABELS
from submissions.disclosure import (
    SCORES_ARE,
    budget_warnings,
    ladder_note,
    released_scores,
    result_grid,
    result_released,
)
from submissions.models import Submission
from submissions.provenance import (
    FIELD_HELP,
    MODELS_MAX_LENGTH,
    MODELS_PATTERN,
    CouldHaveSeen,
    TrainingData,
    validate_models_used,
)
from submissions.selectors import current_result_of
from submissions.services import METADATA_FIELDS

ErrorSerializer = inline_serializer(
    name="Error",
    fields={
        "error": inline_serializer(
            name="ErrorBody",
            fields={
                "message": serializers.CharField(help_text="What went wrong and what to do, for a person."),
                "details": inline_serializer(
                    name="ErrorDetail",
                    fields={
                        "line": serializers.IntegerField(
                            allow_null=True, help_text="Line of the uploaded file, when the problem has one."
                        ),
                        "reason": serializers.CharField(),
                        "lines": serializers.ListField(
                            child=serializers.IntegerField(), required=False,
                            help_text="A problem found on several lines of a run (problems are grouped by kind): the "
                                      "first lines with it; `line` and `reason` are the first one's."),
                        "count": serializers.IntegerField(
                            required=False, help_text="How many lines have this kind of problem."),
                    },
                    many=True,
                ),
                "terms": inline_serializer(
                    name="TermsToAccept",
                    required=False,
                    help_text="Only on a 403 for a dataset's data terms not accepted yet: which, and where to accept.",
                    fields={
                        "dataset": serializers.CharField(),
                        "version": serializers.IntegerField(),
                        "title": serializers.CharField(),
                        "url": serializers.CharField(help_text="The page that shows the text and takes the acceptance."),
                        "accept": serializers.CharField(
                            help_text='POST {"version": N} here to accept version N after reading it.'),
                    },
                ),
            },
        )
    },
)


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


# What each status means whatever the operation; an operation names its own 400/404 and so on.
_ERROR_MEANING = {
    400: "A parameter or field was refused; `details` names each problem.",
    401: "The token sent is not valid (or none was sent where one is required).",
    403: "Not allowed for this account.",
    404: "Not found, or not visible to you.",
    409: "The request conflicts with the object's state.",
    413: "The request body is larger than the server accepts.",
    429: "Too many requests in a short time; `Retry-After` says when to try again.",
    503: "The database is not answering; nothing was changed. `Retry-After` says when to try again.",
}


def error_responses(*codes: int, **described: str) -> dict[int, OpenApiResponse]:
    """The error answers of an operation, all in the one error shape.

    ``codes`` take the general meaning; ``described`` (``e404="No such dataset."``) a specific one.
    401 (a bad token is refused even on public operations) and 503 (database away) are always there.
    """
    out = {code: _error(_ERROR_MEANING[code]) for code in sorted({401, 503, *codes})}
    for key, description in described.items():
        out[int(key.removeprefix("e"))] = _error(description)
    return dict(sorted(out.items()))


#: An http(s) address with a host name: the part of Django's ``URLValidator`` (which the model runs after it) that
#: the schema can state as a pattern. ``https://example.a`` (one-letter top-level domain), an IP address, a user
#: name or a space are refused by both; ``tests/api/test_schema_truth.py`` checks that the model accepts every
#: address the pattern admits.
WEB_ADDRESS = (
    r"^[Hh][Tt][Tt][Pp][Ss]?://(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}"
    r"(?::[0-9]{1,5})?(?:[/?#][!-~]*)?$"
)
WEB_ADDRESS_MAX_LENGTH = 200  # the model's URLField


@extend_schema_field({"type": "string", "pattern": WEB_ADDRESS, "maxLength": WEB_ADDRESS_MAX_LENGTH})
class WebAddressField(serializers.CharField):
    """An http(s) address the way the server checks it, typed in the schema by the same pattern (not ``format: uri``,
    which admits ``mailto:`` and ``https://example.a``, both refused here). Empty means none."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_blank", True)
        kwargs.setdefault("required", False)
        kwargs.setdefault("max_length", WEB_ADDRESS_MAX_LENGTH)
        super().__init__(**kwargs)
        self.validators.append(RegexValidator(re.compile(WEB_ADDRESS), message=(
            "an http:// or https:// address with a host name, e.g. https://arxiv.org/abs/2301.00001")))


@extend_schema_field({"type": "string", "pattern": MODELS_PATTERN, "maxLength": MODELS_MAX_LENGTH})
class ModelsUsedField(serializers.CharField):
    """``models_used`` as the API takes it: exactly the schema's pattern (``id licence`` lines), checked line by line
    first so that a problem names its line; nothing trimmed or reshaped, so what the schema admits is what is taken."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_blank", True)
        kwargs.setdefault("required", False)
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("max_length", MODELS_MAX_LENGTH)
        kwargs.setdefault("help_text", FIELD_HELP["models_used"])
        super().__init__(**kwargs)
        self.validators = [validate_models_used, RegexValidator(re.compile(MODELS_PATTERN), message=(
            "one model per line, `identifier licence` with one space between, no blank lines or spaces around, "
            "the licence in at most five words (e.g. `BAAI/bge-m3 MIT`)"))]


class StrictInput(serializers.Serializer):
    """A request body whose fields are all known: a misspelt or read-only one is a 400 naming it, not ignored."""

    def to_internal_value(self, data):
        if hasattr(data, "keys"):
            writable = {name for name, field in self.fields.items() if not field.read_only}
            unknown = sorted(set(data.keys()) - writable)
            if unknown:
                raise serializers.ValidationError(
                    {name: [f"not a field of this request; it takes {', '.join(sorted(writable))}."]
                     for name in unknown})
            if not isinstance(data, QueryDict):  # a JSON body: each value of the JSON type its schema states
                wrong = {name: [f"must be {kind}, as the schema says (got {type(data[name]).__name__})."]
                         for name, field in self.fields.items()
                         if name in data and data[name] is not None and (kind := _json_type_error(field, data[name]))}
                if wrong:
                    raise serializers.ValidationError(wrong)
        return super().to_internal_value(data)


def _json_type_error(field: serializers.Field, value) -> str | None:
    """The JSON type ``field`` takes when ``value`` is not of it (DRF would coerce 12 to "12" and "12" to 12)."""
    if isinstance(field, serializers.BooleanField):
        return None if isinstance(value, bool) else "true or false"
    if isinstance(field, (serializers.CharField, serializers.ChoiceField)):
        return None if isinstance(value, str) else "a string"
    if isinstance(field, serializers.IntegerField):
        return None if isinstance(value, int) and not isinstance(value, bool) else "a whole number"
    if isinstance(field, (serializers.FloatField, serializers.DecimalField)):
        return None if isinstance(value, (int, float)) and not isinstance(value, bool) else "a number"
    if isinstance(field, serializers.ListField):
        return None if isinstance(value, list) else "a list"
    return None


class SubmissionMetadataInput(StrictInput, serializers.ModelSerializer):
    """What the participant says about the system, and who sees it: the fields an upload sends and a PATCH changes."""

    models_used = ModelsUsedField()

    paper_url = WebAddressField(label=METADATA_LABELS["paper_url"], help_text=METADATA_HELP["paper_url"])
    code_url = WebAddressField(label=METADATA_LABELS["code_url"], help_text=METADATA_HELP["code_url"])

    class Meta:
        model = Submission
        fields = list(METADATA_FIELDS)
        # The same words as the upload form ("Paper URL", not the field name's "Paper url").
        # A multipart form has no null: an optional number is left out, not sent as "null".
        extra_kwargs = {
            name: {"help_text": help_text, "label": METADATA_LABELS.get(name) or None, "allow_null": False}
            for name, help_text in METADATA_HELP.items()
            if name in METADATA_FIELDS
        }


class SubmissionCreateInput(SubmissionMetadataInput):
    """The multipart form of an upload: where it goes, the file, and what the system is."""

    dataset = serializers.SlugField(help_text="The dataset's slug, e.g. `bsard` (see `GET /api/v1/datasets/`).")
    split = serializers.SlugField(
        required=False, allow_blank=True, help_text="The split's name; default: the dataset's hidden test split."
    )
    run_file = serializers.FileField(
        allow_empty_file=True,
        help_text=(
            "The file to score, plain or gzip-compressed. Retrieval datasets: a run in TREC format "
            "(`qid Q0 docid rank score tag`). Classification and NER datasets (`task` in `GET /api/v1/datasets/`): "
            'predictions in JSON Lines, one object per example, e.g. `{"id": "doc-1", "label": "civil"}` '
            '(single-label), `{"id": "doc-1", "labels": ["civil", "tax"]}` (multi-label) or '
            '`{"id": "s-1", "tags": ["B-PER", "I-PER", "O"]}` (NER).'
        ),
    )

    class Meta(SubmissionMetadataInput.Meta):
        fields = ["dataset", "split", "run_file", *METADATA_FIELDS]


class SubmissionFromUploadInput(SubmissionMetadataInput):
    """An upload whose file was sent to a presigned slot: where it goes (the slot's split), the key, the system."""

    dataset = serializers.SlugField(help_text="The dataset's slug, e.g. `bsard` (see `GET /api/v1/datasets/`).")
    split = serializers.SlugField(
        required=False, allow_blank=True, help_text="The split's name; default: the dataset's hidden test split."
    )
    upload_key = serializers.CharField(
        max_length=300, help_text="The `upload_key` of the slot (`POST /api/v1/uploads/`) the file was sent to.")

    class Meta(SubmissionMetadataInput.Meta):
        fields = ["dataset", "split", "upload_key", *METADATA_FIELDS]


class ModelUsedSerializer(serializers.Serializer):
    """One line of ``models_used``: a model the system uses and its licence, as its owner states them."""

    id = serializers.CharField(help_text="The model's identifier, e.g. `BAAI/bge-m3`.")
    licence = serializers.CharField(help_text="Its licence as stated, e.g. `MIT`, `proprietary`.")


def training_data_field(**kwargs) -> serializers.ChoiceField:
    """The provenance vocabulary's training data, as the schema's enum (from code, never from the database)."""
    return serializers.ChoiceField(choices=TrainingData.choices, help_text=(
        "What the system was trained on, as its owner states it: " + "; ".join(
            f"`{c.value}` {c.label}" for c in TrainingData) + "."), **kwargs)


def could_have_seen_field(**kwargs) -> serializers.ChoiceField:
    """Whether the system could have seen the split's corpus or test questions, as the schema's enum."""
    return serializers.ChoiceField(choices=CouldHaveSeen.choices, help_text=(
        "Whether the system could have seen this split's test data, as its owner states it: " + "; ".join(
            f"`{c.value}` {c.label}" for c in CouldHaveSeen) + "."), **kwargs)


class SubmissionCreatedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Submission.Status.choices)
    url = serializers.URLField(help_text="Poll this URL for the status and the scores.")
    page = serializers.URLField(help_text="The submission's page on the site.")
    visibility = serializers.CharField(help_text="public, anonymous or private (the default when not given).")
    visibility_note = serializers.CharField(
        required=False, help_text="Present when `visibility` was not sent: says the entry is private by default."
    )


#: A stored paper or code address as the API returns it: the address, or empty for none (not `format: uri`, which
#: "" fails).
_STORED_ADDRESS = {"type": "string", "maxLength": WEB_ADDRESS_MAX_LENGTH}


class SubmissionSerializer(serializers.ModelSerializer):
    """A submission as its owner (or anyone, when public) sees it: status, aggregate scores, warnings."""

    url = serializers.SerializerMethodField()
    page = serializers.SerializerMethodField()
    dataset = serializers.SerializerMethodField()
    split = serializers.SerializerMethodField()
    qrels_version = serializers.SerializerMethodField()
    scores = serializers.SerializerMethodField()
    scores_are = serializers.SerializerMethodField()
    grid = serializers.SerializerMethodField()
    released = serializers.SerializerMethodField()
    message = serializers.SerializerMethodField()
    warnings = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()
    team = serializers.SerializerMethodField()
    paper_url = serializers.SerializerMethodField()
    code_url = serializers.SerializerMethodField()
    withdrawn = serializers.SerializerMethodField()
    training_data = training_data_field(read_only=True)
    could_have_seen = could_have_seen_field(read_only=True)
    models = serializers.SerializerMethodField()
    disclosed = serializers.SerializerMethodField()
    missing_provenance = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = [
            "id",
            "url",
            "page",
            "status",
            "progress",
            "dataset",
            "split",
            "system_name",
            "visibility",
            # What its owner says about the system (METADATA_FIELDS: what an upload sends and a PATCH changes).
            "description",
            "paper_url",
            "code_url",
            "family",
            "params",
            "latency_ms",
            "llm_calls_per_query",
            "llm_tokens_per_query",
            "hardware",
            "qrels_version",
            "scores",
            "scores_are",
            "grid",
            "released",
            "message",
            "warnings",
            "error",
            "created_at",
            "scored_at",
            "team",
            "after_task",
            "final_run",
            "withdrawn",
            "training_data",
            "training_data_note",
            "models_used",
            "models",
            "could_have_seen",
            "disclosed",
            "missing_provenance",
        ]

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path

    def get_url(self, obj: Submission) -> str:
        return self._absolute(reverse("api:submission", args=[obj.pk]))

    def get_page(self, obj: Submission) -> str:
        return self._absolute(obj.get_absolute_url())

    def get_dataset(self, obj: Submission) -> str:
        return obj.split.dataset.slug

    def get_split(self, obj: Submission) -> str:
        return obj.split.name

    def _names_its_authors(self, obj: Submission) -> bool:
        """An anonymous entry's team and links would name its authors: shown to its owner and staff only."""
        user = getattr(self.context.get("request"), "user", None)
        return obj.visibility != Submission.Visibility.ANONYMOUS or obj.manageable_by(user)

    def get_team(self, obj: Submission) -> str | None:
        """As the board shows it: the shared task's team the run was entered for, else the team or affiliation its
        owner gave (``team`` of an upload or a PATCH); null when none, or for an anonymous entry seen by another."""
        if not self._names_its_authors(obj):
            return None
        return (obj.entrant_team.name if obj.entrant_team is not None else obj.team) or None

    @extend_schema_field(_STORED_ADDRESS)
    def get_paper_url(self, obj: Submission) -> str:
        """The paper describing the system (empty when none, or for an anonymous entry seen by another)."""
        return obj.paper_url if self._names_its_authors(obj) else ""

    @extend_schema_field(_STORED_ADDRESS)
    def get_code_url(self, obj: Submission) -> str:
        """The system's code (empty when none, or for an anonymous entry seen by another)."""
        return obj.code_url if self._names_its_authors(obj) else ""

    @extend_schema_field(ModelUsedSerializer(many=True))
    def get_models(self, obj: Submission) -> list[dict[str, str]]:
        """``models_used`` read line by line: each model's identifier and licence."""
        return [m.as_dict() for m in obj.models_list]

    def get_disclosed(self, obj: Submission) -> bool:
        """The provenance is complete (the board's "disclosed" mark): trained on, models and licences, could have
        seen are all stated."""
        return obj.disclosed

    def get_missing_provenance(self, obj: Submission) -> list[str]:
        """The provenance fields not stated yet (empty when ``disclosed``)."""
        return obj.provenance_missing

    def get_withdrawn(self, obj: Submission) -> bool:
        """Withdrawn by its owner: on no board any more (the file and scores are kept)."""
        return obj.withdrawn_at is not None

    def get_qrels_version(self, obj: Submission) -> int | None:
        result = current_result_of(obj)
        return result.qrels_version.version if result is not None else None

    def get_scores(self, obj: Submission) -> dict[str, float | None]:
        """Aggregate scores only (means over the evaluated queries), fractions between 0 and 1.

        On a hidden split: the primary measure only, on the split's grid (``grid``), the values the pages
        show, and ``{}`` when the Ladder did not release the run (``submissions.disclosure``).
        """
        if obj.status != Submission.Status.SCORED:
            return {}
        user = getattr(self.context.get("request"), "user", None)
        return released_scores(current_result_of(obj), split=obj.split, viewer=user)

    def get_scores_are(self, obj: Submission) -> str:
        """The unit of ``scores`` (fractions; the site shows percent)."""
        return SCORES_ARE

    def get_grid(self, obj: Submission) -> float | None:
        """The step a hidden split's released values sit on, as a fraction (0.01: whole points); null when public
        and for a run the Ladder did not release (its own step is one topic's share of the topics it was scored on:
        for a run on a chosen subset, how many of them are judged; #24)."""
        result = current_result_of(obj)
        if result is not None and not result_released(result, split=obj.split):
            return None
        return result_grid(result, split=obj.split)

    def get_released(self, obj: Submission) -> bool | None:
        """Whether the scores are shown: false when the Ladder of a hidden split held them back; null until scored."""
        result = current_result_of(obj)
        if obj.status != Submission.Status.SCORED or result is None:
            return None
        return result_released(result, split=obj.split)

    def get_message(self, obj: Submission) -> str:
        """The Ladder's word on a hidden split ("Not a significant improvement over your best (X)…"); else empty."""
        result = current_result_of(obj) if obj.status == Submission.Status.SCORED else None
        user = getattr(self.context.get("request"), "user", None)
        return ladder_note(result, split=obj.split, is_owner=obj.manageable_by(user))

    def get_warnings(self, obj: Submission) -> list[dict]:
        """Facts about the file (ties, rows cut, unknown documents); on a hidden split none about the judgments."""
        return budget_warnings(obj.warnings, split=obj.split)

    def get_error(self, obj: Submission) -> dict | None:
        """Why scoring failed; the line-by-line details only for the owner and staff."""
        if obj.status != Submission.Status.FAILED or not obj.error:
            return None
        user = getattr(self.context.get("request"), "user", None)
        if obj.manageable_by(user):
            return {"message": obj.error.get("message", ""), "details": obj.error.get("details", [])}
        return {"message": "Scoring this run failed.", "details": []}
