"""Settings shared by every environment (see the package docstring)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dj_database_url
from kombu import Exchange, Queue

from lexboard.env import env_bool, env_int, env_list, env_path, env_rate, env_str
from lexboard.release import code_digest

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = env_path("LEXBOARD_VAR_DIR", BASE_DIR / "var")

SECRET_KEY = env_str("SECRET_KEY", "dev-only-insecure-key-change-me-in-production-0123456789")
DEBUG = env_bool("DEBUG", False)  # the site's own 404/500 pages unless a developer asks: DEBUG=1
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "allauth",
    "allauth.account",
    # Its tables always exist (an upload policy asks for a linked ORCID iD); its providers only with their keys.
    "allauth.socialaccount",
    # Each app's label is its package's name (catalogue was labelled leaderboard, leaderboard boards and campaigns
    # sharedtasks until 6 December 2026: catalogue/relabel.py carries an older database over).
    "catalogue",  # the dataset catalogue
    "submissions",
    "leaderboard",  # the leaderboards
    "participants",
    "presentation",
    "demo",
    "accounts",
    "campaigns",  # shared tasks
    "assessment",
    "sandbox",
    "snapshots",
    "curation",  # the curators' surface: the catalogue's admin, import_dataset
]

MIDDLEWARE = [
    "lexboard.middleware.ContentSecurityPolicyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "lexboard.middleware.DatabaseUnavailableMiddleware",
    # Under /api/, a path with or without its trailing slash is the same operation (api/contract.py).
    "api.contract.ApiSlashMiddleware",
    # Anonymous visitors' cached pages, before the session and the rest (leaderboard/page_cache.py).
    "leaderboard.page_cache.CachedPageMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]

ROOT_URLCONF = "lexboard.urls"
WSGI_APPLICATION = "lexboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -----------------------------------------------------------------
# SQLite in var/ unless DATABASE_URL names another database (postgres://...).
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'lexboard.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web, worker and beat share one SQLite file: wait for locks instead of
    # failing, and let readers run beside the one writer.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# URLs typed without a scheme (paper and code links) are https, as Django 6 will do.
FORMS_URLFIELD_ASSUME_HTTPS = True

# --- Cache --------------------------------------------------------------------
# Leaderboard pages are cached and invalidated by a per-split version key that
# every new score bumps. Rate-limit counters (log-in, sign-up, password reset,
# uploads) live here too and must be shared by every web process: with Redis
# everything is shared; otherwise pages stay in each process's memory (still
# correct: their key is a digest of the database) and the counters go to the
# database table ``lexboard_cache`` (lexboard/shared_counters_cache.py).
CACHE_URL = env_str("CACHE_URL", "")
CACHES: dict[str, dict[str, Any]]
if CACHE_URL.startswith("redis"):
    # Django's backend with one client object per pool (lexboard/redis_cache.py: 40% of a cached page's CPU).
    CACHES = {"default": {"BACKEND": "lexboard.redis_cache.RedisCache", "LOCATION": CACHE_URL}}
else:
    CACHES = {
        "default": {
            "BACKEND": "lexboard.shared_counters_cache.SharedCountersLocMemCache",
            "LOCATION": "lexboard",
            "OPTIONS": {"COUNTERS_TABLE": "lexboard_cache"},
        }
    }
# Pages rendered by other code are never served after a deploy (lexboard/release.py).
LEXBOARD_RELEASE = env_str("LEXBOARD_RELEASE", "") or code_digest(BASE_DIR)
CACHES["default"]["KEY_PREFIX"] = f"lexboard-{LEXBOARD_RELEASE}"

# --- Auth ---------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Accounts are django-allauth's (accounts/ adapts it): log-in by username or
# e-mail, one account per e-mail address, a verification mail at sign-up.
AUTHENTICATION_BACKENDS = ["allauth.account.auth_backends.AuthenticationBackend"]
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "leaderboard:home"
LOGOUT_REDIRECT_URL = "leaderboard:home"

# The client address of every rate limit (allauth's and Lexboard's own): the
# socket address, or, behind N trusted reverse proxies that each append to
# X-Forwarded-For, the N-th address from the right (lexboard/client_ip.py).
LEXBOARD_TRUSTED_PROXY_COUNT = env_int("LEXBOARD_TRUSTED_PROXY_COUNT", 0)
ALLAUTH_TRUSTED_PROXY_COUNT = LEXBOARD_TRUSTED_PROXY_COUNT
# Rate limits count per IPv6 network of this many bits (a home line gets a /64), per IPv4 address
# (lexboard/client_ip.py); allauth's own limits truncate the same way.
LEXBOARD_IPV6_PREFIX = env_int("LEXBOARD_IPV6_PREFIX", 64)
ALLAUTH_RATE_LIMIT_IPV6_PREFIX = LEXBOARD_IPV6_PREFIX

# The Content-Security-Policy every response gets unless its view sets one (lexboard/middleware.py): our templates
# carry no inline script or style. LEXBOARD_CSP_PATH_POLICIES maps path prefixes to another policy (None: none at
# all, for third-party pages we do not control); the first matching prefix wins.
LEXBOARD_CSP: str | None = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "frame-ancestors 'none'; base-uri 'self'; form-action 'self'"
)
LEXBOARD_CSP_PATH_POLICIES: list[tuple[str, str | None]] = []
# Seconds a client is asked to wait (Retry-After) on the 503 answered while the database is away.
LEXBOARD_RETRY_AFTER_SECONDS = env_int("LEXBOARD_RETRY_AFTER_SECONDS", 30)
# Answers held at a time by each web process for clients that ask a status with ?wait= (lexboard/long_poll.py): each
# holds a thread for up to 10 s, so keep it below the threads of a process (gunicorn: --threads); a request beyond
# them is answered at once. 0: no answer is held.
LEXBOARD_STATUS_WAIT_SLOTS = env_int("LEXBOARD_STATUS_WAIT_SLOTS", 2)

ACCOUNT_ADAPTER = "accounts.adapter.AccountAdapter"
ACCOUNT_SIGNUP_FORM_CLASS = "accounts.forms.SignupExtraForm"
ACCOUNT_FORMS = {"login": "accounts.login_form.LoginForm"}
ACCOUNT_LOGIN_METHODS = {"username", "email"}
ACCOUNT_SIGNUP_FIELDS = ["username*", "email*", "password1*", "password2*"]
ACCOUNT_UNIQUE_EMAIL = True
# "optional": the link is mailed at sign-up and log-in works before it is
# clicked; uploads to the splits that require it wait for it
# (accounts/policy.py). "mandatory": no log-in before the click.
ACCOUNT_EMAIL_VERIFICATION = env_str("LEXBOARD_EMAIL_VERIFICATION", "optional")
ACCOUNT_CONFIRM_EMAIL_ON_GET = False
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True
ACCOUNT_EMAIL_SUBJECT_PREFIX = "[Lexboard] "
ACCOUNT_LOGOUT_REDIRECT_URL = "leaderboard:home"
ACCOUNT_SIGNUP_REDIRECT_URL = "accounts:profile"
# One address per account (changing it replaces it), and no mail to addresses without an account.
ACCOUNT_CHANGE_EMAIL = True
ACCOUNT_EMAIL_UNKNOWN_ACCOUNTS = False
ACCOUNT_SESSION_REMEMBER = None
ACCOUNT_PASSWORD_RESET_BY_CODE_ENABLED = False
# Rates are COUNT/PERIOD with PERIOD s, m, h or d, optionally with a number
# (10/m, 3/h, 5/15m). Failed log-ins count per (address, username) and per
# address, never per username alone: a guesser at one address cannot lock the
# owner out of their right password from another (accounts/adapter.py).
LEXBOARD_LOGIN_RATE = env_rate("LEXBOARD_LOGIN_RATE", "10/m")
LEXBOARD_LOGIN_ADDRESS_RATE = env_rate("LEXBOARD_LOGIN_ADDRESS_RATE", "30/m")
# Accounts created per client address (only created ones count: a form with a
# typo costs nothing).
LEXBOARD_SIGNUP_RATE = env_rate("LEXBOARD_SIGNUP_RATE", "3/h")
# Password-reset requests per client address; per e-mail address a looser cap
# keeps anyone from flooding an inbox from many addresses.
LEXBOARD_PASSWORD_RESET_RATE = env_rate("LEXBOARD_PASSWORD_RESET_RATE", "5/h")
ACCOUNT_RATE_LIMITS = {
    "login_failed": f"{LEXBOARD_LOGIN_ADDRESS_RATE}/ip,{LEXBOARD_LOGIN_RATE}/key",
    "reset_password": f"{LEXBOARD_PASSWORD_RESET_RATE}/ip,20/h/key",
    "lexboard_signup": f"{LEXBOARD_SIGNUP_RATE}/ip",
}

# Sign-in with ORCID or GitHub, each only when the deployment gives its OAuth
# keys (register the app at orcid.org/developer-tools or github.com/settings/developers).
SOCIALACCOUNT_PROVIDERS: dict[str, dict[str, Any]] = {}
# ORCID's is allauth's provider with its addresses read from the settings (accounts/orcid/), so a test can point it
# at a local OAuth server.
PROVIDER_APPS = {"orcid": "accounts.orcid", "github": "allauth.socialaccount.providers.github"}
for _provider, _prefix in (("orcid", "ORCID"), ("github", "GITHUB")):
    _client_id = env_str(f"LEXBOARD_{_prefix}_CLIENT_ID", "")
    if _client_id:
        INSTALLED_APPS.append(PROVIDER_APPS[_provider])
        SOCIALACCOUNT_PROVIDERS[_provider] = {
            "APPS": [{"client_id": _client_id, "secret": env_str(f"LEXBOARD_{_prefix}_SECRET", ""), "key": ""}],
        }
if "github" in SOCIALACCOUNT_PROVIDERS:
    SOCIALACCOUNT_PROVIDERS["github"]["SCOPE"] = ["user:email"]
if "orcid" in SOCIALACCOUNT_PROVIDERS:
    # sandbox.orcid.org to try the sign-in before going live.
    SOCIALACCOUNT_PROVIDERS["orcid"]["BASE_DOMAIN"] = env_str("LEXBOARD_ORCID_DOMAIN", "orcid.org")
    SOCIALACCOUNT_PROVIDERS["orcid"]["MEMBER_API"] = False
# Where ORCID's sign-in page and its public API are (a local OAuth stub in tests/accounts/test_orcid.py).
# Empty or unset: derived from LEXBOARD_ORCID_DOMAIN.
LEXBOARD_ORCID_URL = env_str("LEXBOARD_ORCID_URL", "") or f"https://{env_str('LEXBOARD_ORCID_DOMAIN', 'orcid.org')}"
LEXBOARD_ORCID_API_URL = (env_str("LEXBOARD_ORCID_API_URL", "")
                          or f"https://pub.{env_str('LEXBOARD_ORCID_DOMAIN', 'orcid.org')}")
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False
SOCIALACCOUNT_STORE_TOKENS = False

EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Lexboard <noreply@lexboard.local>")
# The site's address, for the links in e-mails sent by workers (no request to build them from), and the
# address the workers render pages ahead as. Unset, the local site `make run` serves on PORT (one source for
# every link: web, workers and the commands).
LEXBOARD_SITE_URL = env_str("LEXBOARD_SITE_URL", f"http://127.0.0.1:{env_int('PORT', 8000)}")
# After a new score, the worker renders the busiest pages itself (leaderboard/page_cache.py: render_ahead).
LEXBOARD_RENDER_AHEAD = env_bool("LEXBOARD_RENDER_AHEAD", True)

# --- I18N ---------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Files --------------------------------------------------------------------
STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env_path("STATIC_ROOT", VAR_DIR / "staticfiles")
MEDIA_URL = "/media/"
MEDIA_ROOT = env_path("MEDIA_ROOT", VAR_DIR / "media")
# Uploaded runs and anything derived from hidden labels live here. Nothing in
# this folder is ever under a served URL.
DATA_DIR = env_path("LEXBOARD_DATA_DIR", VAR_DIR / "data")

STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "private": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(DATA_DIR), "base_url": None},
    },
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# --- Files in S3-compatible object storage (optional) ---------------------------
# With LEXBOARD_S3_BUCKET set, uploaded runs ("private") and media go to the
# bucket instead of local folders, so web and workers on several machines share
# nothing but the database, the broker and the bucket (docs/deploy.md).
# Credentials come the usual boto3 way (AWS_ACCESS_KEY_ID and
# AWS_SECRET_ACCESS_KEY in the environment, or an instance role).
LEXBOARD_S3_BUCKET = env_str("LEXBOARD_S3_BUCKET", "")
if LEXBOARD_S3_BUCKET:
    _s3 = {
        "bucket_name": LEXBOARD_S3_BUCKET,
        "endpoint_url": env_str("LEXBOARD_S3_ENDPOINT_URL", "") or None,
        "region_name": env_str("LEXBOARD_S3_REGION", "") or None,
        # "path" for servers that have no per-bucket host names (MinIO, moto, Ceph without wildcard DNS).
        "addressing_style": env_str("LEXBOARD_S3_ADDRESSING_STYLE", "") or None,
        "default_acl": "private",
        "file_overwrite": False,
        # Never a public URL: runs are read by the workers through the storage API only.
        "querystring_auth": True,
    }
    STORAGES = {
        **STORAGES,
        # Runs and anything derived from hidden labels: private objects.
        "private": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {**_s3, "location": "private"}},
        "default": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {**_s3, "location": "media"}},
    }

# --- Uploads and limits ---------------------------------------------------------
LEXBOARD_MAX_UPLOAD_BYTES = env_int("LEXBOARD_MAX_UPLOAD_BYTES", 200 * 1024 * 1024)
LEXBOARD_MAX_DECOMPRESSED_BYTES = env_int("LEXBOARD_MAX_DECOMPRESSED_BYTES", 1024 * 1024 * 1024)
LEXBOARD_MAX_RUN_LINES = env_int("LEXBOARD_MAX_RUN_LINES", 10_000_000)
# A benchmark archive read by import_benchmark (snapshots/archive/reader.py): the most bytes the whole
# archive may hold once inflated (a .tar.gz is inflated with this running budget), and the largest member.
LEXBOARD_ARCHIVE_MAX_BYTES = env_int("LEXBOARD_ARCHIVE_MAX_BYTES", 64 * 1024 * 1024 * 1024)
LEXBOARD_ARCHIVE_MAX_MEMBER_BYTES = env_int("LEXBOARD_ARCHIVE_MAX_MEMBER_BYTES", 4 * 1024 * 1024 * 1024)
# The upload check's budget inside the request (see submissions/services/inspection.py):
# decompressed bytes it scans (the rest of a larger file is checked by the worker),
# the largest gzip ratio it inflates past its first few MB, the longest run line,
# query id and document id it takes.
LEXBOARD_UPLOAD_SCAN_BYTES = env_int("LEXBOARD_UPLOAD_SCAN_BYTES", 128 * 1024 * 1024)
LEXBOARD_MAX_GZIP_RATIO = env_int("LEXBOARD_MAX_GZIP_RATIO", 100)
LEXBOARD_MAX_LINE_BYTES = env_int("LEXBOARD_MAX_LINE_BYTES", 1024)
LEXBOARD_MAX_QID_BYTES = env_int("LEXBOARD_MAX_QID_BYTES", 100)
LEXBOARD_MAX_DOCID_BYTES = env_int("LEXBOARD_MAX_DOCID_BYTES", 200)
# A JSON run is converted to TREC by a child process (evaluation/run_json_child.py), not the web process: its
# address space, CPU time and wall-clock time (the wall clock below gunicorn's 60 s timeout). The largest JSON
# run read in a request (LEXBOARD_UPLOAD_SCAN_BYTES) takes about 12 s of CPU and 40 MiB (docs/performance.md).
LEXBOARD_JSON_RUN_MEMORY_BYTES = env_int("LEXBOARD_JSON_RUN_MEMORY_BYTES", 256 * 1024 * 1024)
LEXBOARD_JSON_RUN_CPU_SECONDS = env_int("LEXBOARD_JSON_RUN_CPU_SECONDS", 30)
LEXBOARD_JSON_RUN_TIMEOUT_SECONDS = env_int("LEXBOARD_JSON_RUN_TIMEOUT_SECONDS", 45)
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
LEXBOARD_UPLOAD_RATE = env_str("LEXBOARD_UPLOAD_RATE", "30/h")
# Uploads per client network (an IPv6 /64, an IPv4 address) whoever is logged in: accounts made by one person
# share it. A lab behind one address shares it too: raise it for a busy lab's network (0/h: no limit).
LEXBOARD_UPLOAD_NETWORK_RATE = env_str("LEXBOARD_UPLOAD_NETWORK_RATE", "100/h")
# Presigned upload slots (object storage, submissions/services/presigned.py) one account may hold whose address
# is still valid, used or not: with LEXBOARD_MAX_UPLOAD_BYTES, what one account can keep in the bucket's incoming/
# at a time (0: no limit).
LEXBOARD_UPLOAD_OPEN_SLOTS = env_int("LEXBOARD_UPLOAD_OPEN_SLOTS", 3)
# The release ledger of hidden splits (submissions/services/ledger.py): curators are e-mailed when one participant
# or team, or the whole split, is released more bits than this in a day (a split may set its own, in the admin).
LEXBOARD_LEDGER_IDENTITY_BITS = env_int("LEXBOARD_LEDGER_IDENTITY_BITS", 20)
LEXBOARD_LEDGER_SPLIT_BITS = env_int("LEXBOARD_LEDGER_SPLIT_BITS", 200)
# First releases of new participants or teams a day on a hidden split; the others wait for the next day's budget
# or a curator (0: no budget).
LEXBOARD_FIRST_RELEASE_BUDGET = env_int("LEXBOARD_FIRST_RELEASE_BUDGET", 20)
# Storage has a bound (submissions/services/storage.py, docs/operations.md): the bytes
# one user's files may take on disk (0 = no quota), and the days after which the sweep
# removes the files of withdrawn submissions and of those that failed because of
# their file (0 = keep them forever). The rows, scores and histories stay.
LEXBOARD_STORAGE_QUOTA_BYTES = env_int("LEXBOARD_STORAGE_QUOTA_BYTES", 2 * 1024 * 1024 * 1024)
LEXBOARD_FILE_RETENTION_DAYS = env_int("LEXBOARD_FILE_RETENTION_DAYS", 30)

# --- Celery -------------------------------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
_BROKER_DIR = VAR_DIR / "broker"
# A submission scored by a worker that died must be redelivered well before a
# user wonders; longer than the hard time limit so a slow but live task is not
# handed to a second worker.
LEXBOARD_SCORING_SOFT_LIMIT = env_int("LEXBOARD_SCORING_SOFT_LIMIT", 600)
LEXBOARD_SCORING_HARD_LIMIT = env_int("LEXBOARD_SCORING_HARD_LIMIT", 660)
# A scoring attempt writes its heartbeat every stale/4 s (at most 5 s); one silent this long is dead, and every
# worker of the deployment puts its submission back in the queue within LEXBOARD_RECOVERY_INTERVAL more
# (submissions/worker_steps.py): a killed worker costs seconds, whoever runs the others and however they were
# started (docs/operations.md, "A worker that heals").
LEXBOARD_HEARTBEAT_STALE_SECONDS = env_int("LEXBOARD_HEARTBEAT_STALE_SECONDS", 10)
LEXBOARD_RECOVERY_INTERVAL = env_int("LEXBOARD_RECOVERY_INTERVAL", 2)
LEXBOARD_QUEUED_RESEND_SECONDS = env_int("LEXBOARD_QUEUED_RESEND_SECONDS", 300)
LEXBOARD_SWEEP_INTERVAL = env_int("LEXBOARD_SWEEP_INTERVAL", 60)
LEXBOARD_MAX_SCORING_ATTEMPTS = env_int("LEXBOARD_MAX_SCORING_ATTEMPTS", 3)
# The double entry reads a run of up to 32 MiB of text in this many processes, half each (evaluation/verify_halves.py):
# 1 reads it in the scoring process alone (docs/operations.md).
LEXBOARD_DOUBLE_ENTRY_PROCESSES = env_int("LEXBOARD_DOUBLE_ENTRY_PROCESSES", 2)

if CELERY_BROKER_URL.startswith("filesystem"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_BROKER_DIR / "out"),
        "data_folder_out": str(_BROKER_DIR / "out"),
        "processed_folder": str(_BROKER_DIR / "processed"),
        # Where fanout exchanges (remote control, pings) live; kombu's default is ./control.
        "control_folder": str(_BROKER_DIR / "control"),
        "store_processed": False,
        # kombu's filesystem transport looks for messages once a second by default: half a second of every
        # upload's wait on make run's site. A look at an empty queue costs 16 us (measured with the transport's
        # own _get), so fifty a second cost each worker 0.08% of a core; the wait is 10 ms on average.
        "polling_interval": 0.02,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": LEXBOARD_SCORING_HARD_LIMIT + 120}
# One queue name per deployment (and per test session, so parallel test runs
# sharing a Redis never take each other's messages).
CELERY_TASK_DEFAULT_QUEUE = env_str("LEXBOARD_QUEUE", "lexboard")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A scoring process that grew past this many KiB is replaced after its task
# (prefork), or exits and is started again (solo, lexboard/celery.py).
CELERY_WORKER_MAX_MEMORY_PER_CHILD = env_int("LEXBOARD_WORKER_MAX_MEMORY_KB", 1_500_000)
CELERY_TASK_SOFT_TIME_LIMIT = LEXBOARD_SCORING_SOFT_LIMIT
CELERY_TASK_TIME_LIMIT = LEXBOARD_SCORING_HARD_LIMIT
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Celery's Django fixup closes the database connections before and after every task unless this is set; then only
# every this many tasks. Between, lexboard/celery.py closes them as a web request would: when unusable or older than
# CONN_MAX_AGE (keep_the_database_connection).
CELERY_DB_REUSE_MAX = 1000
# What a task prints (the console e-mail backend's messages, make run's way of sending mail) goes to the worker's
# stdout as the web's does, not through the logger "celery.redirected" at WARNING: a warning means something.
CELERY_WORKER_REDIRECT_STDOUTS = False
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# The sweep has a queue of its own, consumed by a separate small worker
# (scripts/run.sh, docker/compose.yml), so it still runs when the scoring
# worker it repairs is dead or wedged (docs/operations.md).
LEXBOARD_SWEEP_QUEUE = env_str("LEXBOARD_SWEEP_QUEUE", f"{CELERY_TASK_DEFAULT_QUEUE}-sweep")
# What a worker started without -Q consumes (`celery -A lexboard worker -B`, as Celery's docs start one): the
# scoring queue and the sweep's, so such a worker alone also runs the sweep, the reveal and the e-mails' retries
# beat sends. make run's and compose's scoring workers name their queue (-Q), and the sweep has its own worker.
CELERY_TASK_QUEUES = [
    Queue(name, Exchange(name), routing_key=name) for name in (CELERY_TASK_DEFAULT_QUEUE, LEXBOARD_SWEEP_QUEUE)
]
# --- The sandbox: participants' images run by podman (docs/sandbox.md) ----------
# Its own queue, served only by workers on hosts with podman and root (the `sandbox` service of
# docker/compose.yml): a scoring worker never runs an image.
LEXBOARD_SANDBOX_QUEUE = env_str("LEXBOARD_SANDBOX_QUEUE", f"{CELERY_TASK_DEFAULT_QUEUE}-sandbox")
# Where a sandbox worker writes each run's /input and mounts its /output (local disk of the worker's host).
LEXBOARD_SANDBOX_WORK_DIR = env_path("LEXBOARD_SANDBOX_WORK_DIR", VAR_DIR / "sandbox" / "work")
# The sandbox's own podman image store (--root): participants' images never enter the host's. A neutral path, not
# under the site's var/ folder: a container's mount table shows it (its root file system's overlay layers).
LEXBOARD_SANDBOX_STORAGE_ROOT = env_path("LEXBOARD_SANDBOX_STORAGE_ROOT", Path("/var/lib/lexboard-sandbox"))
# An image archive larger than this is refused before it is stored.
LEXBOARD_SANDBOX_MAX_IMAGE_BYTES = env_int("LEXBOARD_SANDBOX_MAX_IMAGE_BYTES", 2 * 1024 * 1024 * 1024)
# The deployment's image registry, "host:port": participants may then name an image it holds (NAME:TAG or
# NAME@sha256:...) instead of uploading an archive; the web process resolves it to a digest, the sandbox worker
# pulls that digest. Empty: only archives (docs/operations.md, "A registry beside the deployment").
LEXBOARD_SANDBOX_REGISTRY = env_str("LEXBOARD_SANDBOX_REGISTRY", "")
# True for a registry without (verified) TLS, on localhost or a private network only: plain HTTP or unverified
# HTTPS when resolving, `podman pull --tls-verify=false` on the sandbox workers.
LEXBOARD_SANDBOX_REGISTRY_INSECURE = env_bool("LEXBOARD_SANDBOX_REGISTRY_INSECURE", False)
# The container's uids 0..65535 map to this host range (no host user may own it).
LEXBOARD_SANDBOX_UID_BASE = env_int("LEXBOARD_SANDBOX_UID_BASE", 1_000_000_000)
# A run whose worker has not said it is alive for this long is taken over by the redelivered message.
LEXBOARD_SANDBOX_HEARTBEAT_STALE_SECONDS = env_int("LEXBOARD_SANDBOX_HEARTBEAT_STALE_SECONDS", 120)
# Every worker consuming the sandbox queue writes a heartbeat row every LEXBOARD_SANDBOX_WORKER_BEAT_SECONDS
# (sandbox/worker_steps.py); with none newer than LEXBOARD_SANDBOX_WORKER_STALE_SECONDS the site runs no sandbox
# worker now: the image form and the API refuse an image before the upload, and a queued run's page and the client
# say no worker has answered (0: never checked, as under the test settings, whose tests start workers per test).
LEXBOARD_SANDBOX_WORKER_BEAT_SECONDS = env_int("LEXBOARD_SANDBOX_WORKER_BEAT_SECONDS", 5)
LEXBOARD_SANDBOX_WORKER_STALE_SECONDS = env_int("LEXBOARD_SANDBOX_WORKER_STALE_SECONDS", 30)
# Images no entry needs (never ran to a run, or their runs withdrawn) are removed after this many days.
LEXBOARD_SANDBOX_IMAGE_KEEP_DAYS = env_int("LEXBOARD_SANDBOX_IMAGE_KEEP_DAYS", 30)
# The sweep re-runs one reproduced entry at a time whose last check is older than this many days (0: only
# curators re-run, from the admin).
LEXBOARD_SANDBOX_RECHECK_DAYS = env_int("LEXBOARD_SANDBOX_RECHECK_DAYS", 0)
CELERY_TASK_ROUTES = {
    "evaluation.tasks.sweep_submissions": {"queue": LEXBOARD_SWEEP_QUEUE},
    "sandbox.run_image": {"queue": LEXBOARD_SANDBOX_QUEUE},
    "sandbox.sweep": {"queue": LEXBOARD_SWEEP_QUEUE},
    "submissions.sweep_upload_slots": {"queue": LEXBOARD_SWEEP_QUEUE},
}
CELERY_BEAT_SCHEDULE = {
    # Re-send lost sandbox runs, give up runs whose worker died twice, collect unused images (sandbox/tasks.py).
    "sandbox-sweep": {
        "task": "sandbox.sweep",
        "schedule": float(LEXBOARD_SWEEP_INTERVAL),
        "options": {"queue": LEXBOARD_SWEEP_QUEUE, "expires": float(LEXBOARD_SWEEP_INTERVAL)},
    },
    "sweep-submissions": {
        "task": "evaluation.tasks.sweep_submissions",  # the registered name (submissions/tasks.py)
        "schedule": float(LEXBOARD_SWEEP_INTERVAL),
        # Sweeps beat sent while the sweep worker was down are dropped, not run in a burst.
        "options": {"queue": LEXBOARD_SWEEP_QUEUE, "expires": float(LEXBOARD_SWEEP_INTERVAL)},
    },
    # Presigned upload slots (submissions/services/presigned.py): expire the unused, delete every object under the
    # bucket's incoming/ that no open slot owns.
    "sweep-upload-slots": {
        "task": "submissions.sweep_upload_slots",  # submissions/tasks.py
        "schedule": float(LEXBOARD_SWEEP_INTERVAL),
        "options": {"queue": LEXBOARD_SWEEP_QUEUE, "expires": float(LEXBOARD_SWEEP_INTERVAL)},
    },
    # Shared tasks (docs/operations.md): publish the private board of phases that closed (idempotent),
    # and send the 24-hour reminders and the notifications whose message was lost.
    "campaigns-reveal": {
        "task": "leaderboard.reveal_closed_phases",  # leaderboard/tasks.py
        "schedule": float(LEXBOARD_SWEEP_INTERVAL),
        "options": {"queue": LEXBOARD_SWEEP_QUEUE, "expires": float(LEXBOARD_SWEEP_INTERVAL)},
    },
    "campaigns-notices": {
        "task": "campaigns.notices_tick",  # campaigns/tasks.py
        "schedule": float(LEXBOARD_SWEEP_INTERVAL) * 5,
        "options": {"queue": LEXBOARD_SWEEP_QUEUE, "expires": float(LEXBOARD_SWEEP_INTERVAL) * 5},
    },
}

# --- API ----------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    "DEFAULT_THROTTLE_RATES": {"upload": LEXBOARD_UPLOAD_RATE, "anon": "600/m", "user": "1200/m"},
    # DRF's own throttles read X-Forwarded-For whole unless told how many proxies to trust.
    "NUM_PROXIES": LEXBOARD_TRUSTED_PROXY_COUNT,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Lexboard API",
    "DESCRIPTION": "Upload TREC runs to legal IR benchmarks and read leaderboards.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Request bodies get their own components: a file is `format: binary` in a multipart body,
    # read-only fields are left out of what a client sends (a generated client can upload).
    "COMPONENT_SPLIT_REQUEST": True,
    # `<id:...>` (lexboard/converters.py): a database id, 1 ... 2^63-1.
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}},
    # Clients authenticate with a token; the session (the site's own pages) is not part of the contract.
    "AUTHENTICATION_WHITELIST": ["accounts.authentication.ApiTokenAuthentication"],
    # The schema reads no database: a measure parameter is a string whose values GET /api/v1/datasets/{slug}/
    # lists, so a generated client works for every dataset, a curator's new one included.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.contract.schema_links",
        "api.contract.schema_closed_bodies",
        "api.contract.schema_body_media_types",
        "api.contract.schema_public_reads",
    ],
    "ENUM_NAME_OVERRIDES": {
        "SubmissionStatusEnum": "submissions.models.Submission.Status",
        "VisibilityEnum": "submissions.models.Submission.Visibility",
        "FamilyEnum": "submissions.models.Submission.Family",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

for _folder in (VAR_DIR, MEDIA_ROOT, DATA_DIR, STATIC_ROOT, *(_BROKER_DIR / f for f in ("out", "processed", "control"))):
    _folder.mkdir(parents=True, exist_ok=True)
