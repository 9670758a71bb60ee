"""The demo's judging loop: an assessor account and a small pool of the hidden test split, assigned to it.

So that a fresh install can try the whole loop (judge in the browser, look at
the pool page, make a qrels version) without building anything first. The
pool is a depth-5 pool of the baselines over the first five test questions,
minus what the generated judgments already hold. Idempotent: an existing
account or pool is left as it is; the password is made random and returned
only when the account is created.
"""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import Group
from django.db import transaction

from assessment.models import ASSESSORS_GROUP, Pool
from assessment.pools import pool_assign, pool_build
from catalogue.models import Split

ASSESSOR_USERNAME = "assessor"
POOL_NAME = "Demo pool (depth 5, five questions)"
POOL_DEPTH = 5
POOL_TOPICS = 5


@transaction.atomic
def demo_assessor_ensure() -> tuple[AbstractBaseUser, str | None]:
    """The demo assessor (a member of the assessors group); its password when it was just created, else None."""
    User = get_user_model()
    user = User.objects.filter(username=ASSESSOR_USERNAME).first()
    password = None
    if user is None:
        password = secrets.token_urlsafe(12)
        user = User.objects.create_user(ASSESSOR_USERNAME, f"{ASSESSOR_USERNAME}@localhost", password)
    user.groups.add(Group.objects.get_or_create(name=ASSESSORS_GROUP)[0])
    return user, password


@transaction.atomic
def demo_pool_ensure(*, split: Split, assessor) -> tuple[Pool, bool]:
    """The demo pool of ``split`` assigned to ``assessor``; (pool, created)."""
    existing = Pool.objects.filter(split=split, name=POOL_NAME).first()
    if existing is not None:
        return existing, False
    qids = list(split.topics.order_by("qid").values_list("qid", flat=True)[:POOL_TOPICS])
    pool = pool_build(split=split, name=POOL_NAME, method=Pool.Method.DEPTH, params={"k": POOL_DEPTH},
                      qids=qids, seconds_per_judgment=30.0)
    pool_assign(pool=pool, assessors=[assessor], overlap_share=0)
    return pool, True
