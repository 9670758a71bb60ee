"""``/accounts/orcid/login/`` and its callback (``orcid_login``, ``orcid_callback``), as allauth names them."""

from allauth.socialaccount.providers.oauth2.urls import default_urlpatterns

from .provider import OrcidProvider

urlpatterns = default_urlpatterns(OrcidProvider)
