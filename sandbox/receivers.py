"""What the sandbox hooks into the layers below at start-up: the software-only rule of uploads."""

from submissions.services import uploads

from .services import software_only_refusal

if software_only_refusal not in uploads.UPLOAD_RULES:
    uploads.UPLOAD_RULES.append(software_only_refusal)
