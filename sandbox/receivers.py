"""What the sandbox hooks into the layers below at start-up: the software-only rule of uploads, and its images'
failed runs counted in the quota."""

from submissions import selectors
from submissions.services import admission

from .services import failed_tries, software_only_refusal

if software_only_refusal not in admission.UPLOAD_RULES:
    admission.UPLOAD_RULES.append(software_only_refusal)
if failed_tries not in selectors.QUOTA_TRIES:
    selectors.QUOTA_TRIES.append(failed_tries)
