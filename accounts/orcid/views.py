"""ORCID's OAuth2 adapter with the addresses of the settings (see the package's docstring)."""

from __future__ import annotations

from allauth.socialaccount.providers.oauth2.views import OAuth2CallbackView, OAuth2LoginView
from allauth.socialaccount.providers.orcid.views import OrcidOAuth2Adapter as AllauthOrcidAdapter
from django.conf import settings


class OrcidOAuth2Adapter(AllauthOrcidAdapter):
    authorize_url = f"{settings.LEXBOARD_ORCID_URL.rstrip('/')}/oauth/authorize"
    access_token_url = f"{settings.LEXBOARD_ORCID_API_URL.rstrip('/')}/oauth/token"
    profile_url = f"{settings.LEXBOARD_ORCID_API_URL.rstrip('/')}/v3.0/%s/record"


oauth2_login = OAuth2LoginView.adapter_view(OrcidOAuth2Adapter)
oauth2_callback = OAuth2CallbackView.adapter_view(OrcidOAuth2Adapter)
