"""Sign-in with ORCID: allauth's ORCID provider, its addresses read from the settings.

allauth's adapter fixes ``https://orcid.org`` and ``https://pub.orcid.org``
when it is imported; this one takes ``LEXBOARD_ORCID_URL`` and
``LEXBOARD_ORCID_API_URL`` (by default the same addresses, or the sandbox's
with ``LEXBOARD_ORCID_DOMAIN``), so a test can run the whole OAuth dance
against a local server. Everything else is allauth's.
"""
