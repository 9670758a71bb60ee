"""allauth's ORCID provider (id ``orcid``) with the adapter of :mod:`accounts.orcid.views`."""

from __future__ import annotations

from allauth.socialaccount.providers.orcid.provider import OrcidProvider as AllauthOrcidProvider

from .views import OrcidOAuth2Adapter


class OrcidProvider(AllauthOrcidProvider):
    oauth2_adapter_class = OrcidOAuth2Adapter


provider_classes = [OrcidProvider]
