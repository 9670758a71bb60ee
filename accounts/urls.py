"""Account URLs: allauth's pages (names ``account_*``) and ours (namespace ``accounts``), all under /accounts/.

Only allauth's e-mail/password account pages are mounted (plus the social
sign-in pages when a provider's keys are set), not its whole URL set.
"""

from django.conf import settings
from django.urls import include, path

from . import views

app_name = "accounts"

urlpatterns = [
    path("profile/", views.profile, name="profile"),
    path("tokens/", views.token_create, name="token_create"),
    path("tokens/<id:token_id>/revoke/", views.token_revoke, name="token_revoke"),
    path("participation/<id:split_id>/", views.participation, name="participation"),
]

#: Mounted without a namespace: allauth's views and templates name their URLs ``account_login`` etc.
allauth_urlpatterns = [path("", include("allauth.account.urls"))]
if settings.SOCIALACCOUNT_PROVIDERS:  # sign-in with ORCID or GitHub: only when a deployment set their keys
    allauth_urlpatterns.append(path("3rdparty/", include("allauth.socialaccount.urls")))
    for provider in settings.SOCIALACCOUNT_PROVIDERS:
        allauth_urlpatterns.append(path("", include(f"{settings.PROVIDER_APPS[provider]}.urls")))
