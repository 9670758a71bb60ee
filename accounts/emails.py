"""One spelling per mailbox, so one mailbox makes one account.

Most providers ignore the case of an address; Gmail also ignores dots in the
local part, and several providers deliver ``name+anything@`` to ``name@``.
Storing the canonical spelling makes ``ACCOUNT_UNIQUE_EMAIL`` refuse a
second account for the same mailbox. Only providers known to deliver the
variants to one mailbox are collapsed: elsewhere ``a+b@`` may be someone
else's address, and mail must reach the person who typed it.
"""

from __future__ import annotations

#: Domain → (canonical domain, drop dots in the local part, drop a +tag).
PROVIDERS: dict[str, tuple[str, bool, bool]] = {
    "gmail.com": ("gmail.com", True, True),
    "googlemail.com": ("gmail.com", True, True),
    "outlook.com": ("outlook.com", False, True),
    "hotmail.com": ("hotmail.com", False, True),
    "live.com": ("live.com", False, True),
    "icloud.com": ("icloud.com", False, True),
    "me.com": ("me.com", False, True),
    "proton.me": ("proton.me", False, True),
    "protonmail.com": ("protonmail.com", False, True),
    "pm.me": ("pm.me", False, True),
    "fastmail.com": ("fastmail.com", False, True),
}


def canonical_email(address: str) -> str:
    """``J.Doe+lexboard@GoogleMail.com`` → ``jdoe@gmail.com``; other addresses are only lower-cased."""
    address = address.strip().lower()
    local, at, domain = address.rpartition("@")
    if not at or not local:
        return address
    canonical_domain, drop_dots, drop_tag = PROVIDERS.get(domain, (domain, False, False))
    if drop_tag:
        local = local.split("+", 1)[0] or local
    if drop_dots:
        local = local.replace(".", "") or local
    return f"{local}@{canonical_domain}"
