"""Settings for Cobblestone, read from the environment only.

Defaults give a setup that runs from a checkout: SQLite and a filesystem Celery
broker under ``var/``. ``DEBUG`` is off unless set: ``make run`` and the tests turn it
on (and ``make run`` keeps a generated ``SECRET_KEY`` in ``var/``). Production sets
``SECRET_KEY``, ``DATABASE_URL`` (PostgreSQL), ``CELERY_BROKER_URL`` and ``CACHE_URL``
(Redis).
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env(name: str, default: str = "") -> str:
    """Read a variable, or its ``NAME_FILE`` companion (for container secrets)."""
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        return Path(file_path).read_text().strip()
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = env(name, "")
    if raw == "":
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean, got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = env(name, "")
    if raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from exc


def env_float(name: str, default: float) -> float:
    raw = env(name, "")
    if raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from exc


VAR_DIR = Path(env("COBBLESTONE_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY is required when DEBUG is off")
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"

ALLOWED_HOSTS = [
    h.strip() for h in env("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h.strip()
]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in env("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

# In production the session and CSRF cookies travel only over HTTPS: the volunteer's
# session shows the account key. A project served on plain HTTP sets SECURE_COOKIES=false.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", not DEBUG)
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto (and strips it from clients).
if env_bool("BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# HSTS is a promise browsers remember; opt in once HTTPS is permanent.
SECURE_HSTS_SECONDS = int(env_float("SECURE_HSTS_SECONDS", 0))

INSTALLED_APPS = [
    "apps.core.admin_apps.GuardedAdminConfig",  # django.contrib.admin with the guarded site (apps/core/admin_base.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served as static files (no CDN)
    "health_check",
    "django_celery_beat",
    "django_celery_results",
    # Two-factor log-in for staff (TOTP); enforced only with COBBLESTONE_STAFF_OTP.
    "django_otp",
    "django_otp.plugins.otp_totp",
    "apps.core",
    "apps.projects",
    "apps.volunteers",
    "apps.applications",
    "apps.hosts",
    "apps.account_deletion",  # after apps.volunteers: its admin extends the accounts' admin
    "apps.credit",
    "apps.sequences",
    "apps.work",
    "apps.locality",
    "apps.trickles",
    "apps.scheduler",
    "apps.submit",
    "apps.news",
    "apps.emulator",
    "apps.portal",
    "apps.boinc_import",
    "apps.ops",
    "apps.benchmarks",  # measuring tools only: no product app imports it
]

MIDDLEWARE = [
    # Ahead of the rest (only DatabaseOutageMiddleware, inserted below, wraps it): everything
    # after sees the client's address.
    "apps.ops.middleware.ClientAddressMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",  # request.user.is_verified(), for COBBLESTONE_STAFF_OTP
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "boincproj.urls"
WSGI_APPLICATION = "boincproj.wsgi.application"

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

# SQLite by default, in IMMEDIATE mode so concurrent writers queue on the lock
# instead of failing with "database is locked" on upgrade (healthchecks does this).
_default_sqlite = f"sqlite:///{VAR_DIR / 'cobblestone.sqlite3'}"
DATABASES = {"default": dj_database_url.parse(env("DATABASE_URL", _default_sqlite), conn_max_age=60)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers run beside the one writer. With synchronous=NORMAL a commit is not
    # flushed to disk until the next checkpoint: the file is never corrupted and survives a
    # crash of the processes, but a power loss may undo the last commits. FULL flushes every
    # commit (about 2 ms each here, more than the work of an upload or a daemon's batch).
    _sqlite_sync = env("COBBLESTONE_SQLITE_SYNCHRONOUS", "NORMAL").upper()
    if _sqlite_sync not in ("NORMAL", "FULL"):
        raise ImproperlyConfigured(
            f"COBBLESTONE_SQLITE_SYNCHRONOUS must be NORMAL or FULL, not {_sqlite_sync!r}"
        )
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": f"PRAGMA journal_mode=WAL; PRAGMA synchronous={_sqlite_sync};",
        }
    )
    # A file (not memory) so live-server and concurrency tests share it across threads;
    # one per process so concurrent test runs never share it.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}
else:
    # Server-side binding lets psycopg prepare the scheduler's repeated statements, so
    # PostgreSQL parses and plans each once per connection instead of once per RPC.
    if env_bool("DATABASE_SERVER_SIDE_BINDING", True):
        DATABASES["default"].setdefault("OPTIONS", {}).update(
            {"server_side_binding": True, "prepare_threshold": 2}
        )
    # How many prepared statements a connection keeps (psycopg's default is 100). The RPC's
    # own lists travel as arrays (apps.core.db.any_of), but the ORM's IN lists still give
    # each length its own statement; past the limit psycopg deallocates and prepares again,
    # which measured ~15 % more database CPU per RPC than keeping them.
    DATABASE_PREPARED_MAX = env_int("DATABASE_PREPARED_MAX", 1000)
    # One test database per process, so concurrent test runs on one server never collide.
    DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default'].get('NAME') or 'db'}_{os.getpid()}"}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The first hashes new passwords (volunteers' and admins'); the others still verify
# hashes made before, which are upgraded at the next successful log-in.
PASSWORD_HASHERS = [
    "apps.volunteers.hashers.BoincBCryptSHA256PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
    # BOINC's web code stores PHP's bcrypt of md5(password + email); imported accounts keep
    # it until their next log-in re-hashes it with the first hasher.
    "django.contrib.auth.hashers.BCryptPasswordHasher",
]

# Staff log-ins (the admin's and the API's HTTP Basic) counted and limited as volunteers' are.
AUTHENTICATION_BACKENDS = ["apps.ops.staff_auth.RateLimitedModelBackend"]

# Two-factor authentication for staff (recommended in production): the admin asks for a
# one-time password from a TOTP device (enrolled in the admin under TOTP devices) and the API
# takes only the admin's verified session, no HTTP Basic. Enroll the devices, then turn it on.
COBBLESTONE_STAFF_OTP = env_bool("COBBLESTONE_STAFF_OTP", False)
OTP_TOTP_ISSUER = env("OTP_TOTP_ISSUER", "Cobblestone")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
# Serve static files from the apps directly in development (no collectstatic step for `make run`).
WHITENOISE_USE_FINDERS = env_bool("WHITENOISE_USE_FINDERS", DEBUG)
# In production, `collectstatic` writes every file under a content-hashed name (and gzip/brotli
# copies) into STATIC_ROOT, which nginx or whitenoise serve with far-future cache headers.
STATIC_MANIFEST = env_bool("STATIC_MANIFEST", not DEBUG)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        # WhiteNoise's, serving a page even before collectstatic has run (apps/ops/static.py).
        "BACKEND": "apps.ops.static.CollectedStaticStorage"
        if STATIC_MANIFEST
        else "whitenoise.storage.CompressedStaticFilesStorage"
    },
}

LOGIN_URL = "/admin/login/"

# Scheduler requests are small; uploads stream and are bounded by max_nbytes.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 4 * 1024 * 1024)

# --- Email ---------------------------------------------------------------------
# Password reset links, team founder requests, address-change notices. Printed on the
# console (the web process's output) unless an SMTP server is named.
EMAIL_HOST = env("EMAIL_HOST", "")
EMAIL_BACKEND = env(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL are exclusive: set one")
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 30)
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", "cobblestone@localhost")
# How long a password reset link works (seconds; Django's default, three days).
PASSWORD_RESET_TIMEOUT = env_int("PASSWORD_RESET_TIMEOUT", 3 * 86400)

# --- Cobblestone --------------------------------------------------------------
COBBLESTONE_DATA_DIR = Path(env("COBBLESTONE_DATA_DIR", str(VAR_DIR / "data")))
COBBLESTONE_BASE_URL = env("COBBLESTONE_BASE_URL", "http://127.0.0.1:8000").rstrip("/")
# Largest scheduler request body accepted (bytes); larger gets 413.
COBBLESTONE_MAX_REQUEST_BYTES = env_int("COBBLESTONE_MAX_REQUEST_BYTES", 2 * 1024 * 1024)
# Seconds past the delay bound before a result is timed out (BOINC's report_grace_period).
COBBLESTONE_REPORT_GRACE_PERIOD = env_int("COBBLESTONE_REPORT_GRACE_PERIOD", 3600)
# Relocations of a work sequence before it is put in ERROR (docs/sequences.md).
COBBLESTONE_SEQUENCE_MAX_RELOCATIONS = env_int("COBBLESTONE_SEQUENCE_MAX_RELOCATIONS", 10)
# Rows handled per daemon pass.
COBBLESTONE_DAEMON_BATCH = env_int("COBBLESTONE_DAEMON_BATCH", 1000)
# db_purge's idle-row rules (apps.work.services.dead_rows): days without contact or login
# after which a host or account that never took part is archived and deleted; 0 = never.
COBBLESTONE_PURGE_IDLE_HOSTS_DAYS = env_int("COBBLESTONE_PURGE_IDLE_HOSTS_DAYS", 0)
COBBLESTONE_PURGE_IDLE_ACCOUNTS_DAYS = env_int("COBBLESTONE_PURGE_IDLE_ACCOUNTS_DAYS", 0)
# Remote job submission: jobs in one submit_batch, bytes of one request, bytes of one job file.
COBBLESTONE_SUBMIT_MAX_JOBS = env_int("COBBLESTONE_SUBMIT_MAX_JOBS", 20000)
COBBLESTONE_SUBMIT_MAX_REQUEST_BYTES = env_int("COBBLESTONE_SUBMIT_MAX_REQUEST_BYTES", 32 * 1024 * 1024)
COBBLESTONE_SUBMIT_MAX_FILE_BYTES = env_int("COBBLESTONE_SUBMIT_MAX_FILE_BYTES", 100 * 1024 * 1024)

# --- REST framework -----------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "apps.core.api.pagination.EstimatedCountPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "apps.core.api.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "apps.ops.staff_auth.RateLimitedBasicAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["apps.core.api.OperatorPermission"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Cobblestone API",
    "DESCRIPTION": "BOINC-compatible project server: scheduler (JSON face), operators' API, volunteer data.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI from the installed drf-spectacular-sidecar package: no CDN, works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Celery -------------------------------------------------------------------
# Default broker: kombu's filesystem transport under var/ (no server, no extra
# dependency, no lock contention with the SQLite database). See docs/architecture.md.
_broker_dir = VAR_DIR / "broker"
CELERY_BROKER_URL = env("CELERY_BROKER_URL", "filesystem://")
if CELERY_BROKER_URL.startswith("filesystem://"):
    # kombu's transport with messages written whole before a worker can take them.
    CELERY_BROKER_TRANSPORT = "boincproj.broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "out"),
        "data_folder_out": str(_broker_dir / "out"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
CELERY_RESULT_BACKEND = env("CELERY_RESULT_BACKEND", "django-db")
CELERY_RESULT_EXTENDED = True
# For a task that sets no limit of its own: every Cobblestone task sets its own (its tasks.py),
# so these bound only Celery's built-in tasks.
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 600)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 540)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "UTC"
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# A worker keeps its database connection from task to task, checked around each task as
# Django checks it around each request (boincproj.celery): Celery's default, a new
# connection for every task, costs PostgreSQL more than a short daemon pass. Celery still
# replaces it after this many tasks.
CELERY_DB_REUSE_MAX = env_int("CELERY_DB_REUSE_MAX", 500)

# --- Operations: client address, monitoring, logs, error reports -------------------


def env_networks(name: str, default: str) -> list[str]:
    """A comma list of networks (``10.0.0.0/8``, ``::1``), checked now so a typo fails at start."""
    values = [v.strip() for v in env(name, default).split(",") if v.strip()]
    for value in values:
        try:
            ipaddress.ip_network(value, strict=False)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name}: {value!r} is not an IP address or network") from exc
    return values


# Proxies whose X-Forwarded-For names the client (nginx on this machine by default); the
# scheduler records that address as the host's, and the monitoring gate checks it.
TRUSTED_PROXIES = env_networks("TRUSTED_PROXIES", "127.0.0.1,::1")
# Who may read /metrics and the detailed /health/ report: these networks, or anyone who
# sends "Authorization: Bearer <MONITORING_TOKEN>" (when set).
MONITORING_ALLOWED_NETWORKS = env_networks("MONITORING_ALLOWED_NETWORKS", "127.0.0.1,::1")
MONITORING_TOKEN = env("MONITORING_TOKEN", "")
# /health/ reports a data area (COBBLESTONE_DATA_DIR or a project's download/upload area on
# another file system) with less free space than this as unhealthy.
HEALTH_DISK_MIN_FREE_MB = env_int("HEALTH_DISK_MIN_FREE_MB", 1024)
# Behind nginx with TLS: redirect plain-HTTP requests that reach Django (monitoring scrapes
# over loopback are exempt), and the HSTS options `check --deploy` asks about.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^health/", r"^metrics$"]
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)

LOG_FORMAT = env("LOG_FORMAT", "plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be plain or json, got {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        # One JSON object per line (python-json-logger), for log shippers.
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s %(process)d",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# Error reports: set SENTRY_DSN to send unhandled exceptions and logged errors of the web
# processes, Celery workers and commands to Sentry (or a compatible service such as GlitchTip).
SENTRY_DSN = env("SENTRY_DSN", "")
if SENTRY_DSN:
    from boincproj.sentry import sentry_init

    sentry_init(
        dsn=SENTRY_DSN,
        environment=env("SENTRY_ENVIRONMENT", "production"),
        traces_sample_rate=env_float("SENTRY_TRACES_SAMPLE_RATE", 0.0),
    )

# --- Faults and load: outages, rate limits, load shedding (docs/faults.md) -------------
# A connection kept between requests (CONN_MAX_AGE) is checked before its first use in each
# request or task, so a restarted PostgreSQL costs one reconnect instead of a failed request.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
    # An unreachable server fails a request in seconds (an answer the client retries on),
    # not after the operating system's TCP timeout of minutes.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "connect_timeout", env_int("DATABASE_CONNECT_TIMEOUT", 5)
    )

# Database errors become the answers BOINC gives while a project is down (outermost, ahead
# of ClientAddressMiddleware, so it also sees what the other middleware raise).
MIDDLEWARE.insert(0, "apps.scheduler.middleware.DatabaseOutageMiddleware")
# Seconds a client is asked to wait when the database is unreachable (BOINC's maintenance_delay).
COBBLESTONE_MAINTENANCE_DELAY = env_int("COBBLESTONE_MAINTENANCE_DELAY", 3600)


def cache_from_url(url: str) -> dict[str, object]:
    """A CACHES entry from ``redis://``/``rediss://``, ``file:///path`` or ``locmem://``."""
    scheme, _, rest = url.partition("://")
    if scheme in ("redis", "rediss"):
        # A Redis that is down fails a cache call in a second; the rate limits then let the
        # request through rather than hold it.
        options = {"socket_connect_timeout": 1.0, "socket_timeout": 1.0}
        return {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url, "OPTIONS": options}
    if scheme == "file" and rest:
        return {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": rest}
    if scheme == "locmem":
        return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": rest}
    raise ImproperlyConfigured(
        f"CACHE_URL must be redis://, rediss://, file:///path or locmem://, got {url!r}"
    )


# The rate limits' counters live here, so they must be shared by every web process: files
# under var/ for `make run` (its gunicorn has several processes), Redis in production.
CACHES = {"default": cache_from_url(env("CACHE_URL", f"file://{VAR_DIR / 'cache'}"))}


def env_rate(name: str, default: str) -> str | None:
    """A rate "N/period" (django-ratelimit's: 20/15m, 50/h, 5/s); "off" disables it."""
    raw = env(name, default).strip()
    if raw.lower() == "off":
        return None
    if not re.fullmatch(r"[0-9]+/[0-9]*[smhd]", raw):
        raise ImproperlyConfigured(f"{name} must look like 20/15m or 50/h (or be off), got {raw!r}")
    return raw


# Failed log-ins (lookup_account.php, the log-in form, password and email changes) per
# client address, per client address and email address, and per email address from
# addresses the account has not logged in from in KNOWN_CLIENT_DAYS; new accounts
# (create_account.php and the sign-up form) per client address. A volunteer who mistypes a
# password a few times stays well under them; guesses from many addresses do not lock the
# owner out of the addresses they log in from (apps/scheduler/ratelimits.py).
COBBLESTONE_RATELIMIT_LOGIN_IP = env_rate("COBBLESTONE_RATELIMIT_LOGIN_IP", "20/15m")
COBBLESTONE_RATELIMIT_LOGIN_IP_ACCOUNT = env_rate("COBBLESTONE_RATELIMIT_LOGIN_IP_ACCOUNT", "10/15m")
COBBLESTONE_RATELIMIT_LOGIN_ACCOUNT = env_rate("COBBLESTONE_RATELIMIT_LOGIN_ACCOUNT", "200/h")
COBBLESTONE_RATELIMIT_SIGNUP_IP = env_rate("COBBLESTONE_RATELIMIT_SIGNUP_IP", "20/h")
# Account managers' servers (BAM!, Science United) make many accounts from one address:
# these networks are exempt from the sign-up limit (and from nothing else).
COBBLESTONE_ACCOUNT_MANAGER_NETWORKS = env_networks("COBBLESTONE_ACCOUNT_MANAGER_NETWORKS", "")
# The same three for staff: the admin log-in and the API's HTTP Basic authentication.
COBBLESTONE_RATELIMIT_STAFF_LOGIN_IP = env_rate("COBBLESTONE_RATELIMIT_STAFF_LOGIN_IP", "10/15m")
COBBLESTONE_RATELIMIT_STAFF_LOGIN_IP_ACCOUNT = env_rate(
    "COBBLESTONE_RATELIMIT_STAFF_LOGIN_IP_ACCOUNT", "5/15m"
)
COBBLESTONE_RATELIMIT_STAFF_LOGIN_ACCOUNT = env_rate("COBBLESTONE_RATELIMIT_STAFF_LOGIN_ACCOUNT", "30/h")
# How long an address a log-in succeeded from stays known to that account.
COBBLESTONE_KNOWN_CLIENT_DAYS = env_int("COBBLESTONE_KNOWN_CLIENT_DAYS", 30)
# Days between the confirmation of an account's deletion and the deletion itself (0: at once).
COBBLESTONE_ACCOUNT_DELETE_GRACE_DAYS = env_int("COBBLESTONE_ACCOUNT_DELETE_GRACE_DAYS", 7)
# Password-reset emails (and the notice of a sign-up with a taken address): requests per
# client address, messages per email address.
COBBLESTONE_RATELIMIT_RESET_MAIL_IP = env_rate("COBBLESTONE_RATELIMIT_RESET_MAIL_IP", "10/h")
COBBLESTONE_RATELIMIT_RESET_MAIL_ADDRESS = env_rate("COBBLESTONE_RATELIMIT_RESET_MAIL_ADDRESS", "3/h")
# Behind a reverse proxy every request comes from the proxy's address: name the META key
# that holds the client's (e.g. HTTP_X_REAL_IP, set by the proxy and stripped from clients).
RATELIMIT_IP_META_KEY = env("RATELIMIT_IP_META_KEY", "") or None

# Load shedding of the scheduler RPC, per web process: at most SLOTS RPCs run at once; one
# that cannot start within QUEUE_SECONDS of arriving (the wait behind other RPCs, plus the
# time its X-Request-Start header shows it waited in front of Django) is told the server
# is busy and to come back after BUSY_DELAY seconds (the client honours request_delay).
COBBLESTONE_SCHED_SLOTS = env_int("COBBLESTONE_SCHED_SLOTS", 2)
COBBLESTONE_SCHED_QUEUE_SECONDS = env_float("COBBLESTONE_SCHED_QUEUE_SECONDS", 1.0)
COBBLESTONE_BUSY_DELAY = env_int("COBBLESTONE_BUSY_DELAY", 120)

# The worker never gives up on a broker that is restarting (Celery's default stops after
# 100 attempts), and waits for one that is not up yet when it starts.
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
if CELERY_RESULT_BACKEND == "django-db":
    # The same table, written so a lost database connection cannot stop the worker.
    CELERY_RESULT_BACKEND = "boincproj.results:DatabaseBackend"
