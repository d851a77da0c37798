"""Admin pieces shared by several apps."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ERROR_FLAG, ChangeList
from django.db import DataError, NotSupportedError, OperationalError, connections, router, transaction
from django.db.models import Field, Model, Q, QuerySet, URLField
from django.http import HttpRequest
from django_otp.admin import OTPAdminAuthenticationForm

logger = logging.getLogger(__name__)

# Larger numbers are no id of a BIGINT column; they are searched as names only.
_MAX_ID = 2**63 - 1


class RecordAdmin(admin.ModelAdmin):
    """Rows the system writes (records of what happened): admins read and may delete them,
    never add or edit them."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def _term_id(term: str) -> int | None:
    """The term as a row id, or None when it is no number a BIGINT column could hold."""
    term = term.strip()
    # isdigit() alone admits '²' and other digits int() refuses.
    return int(term) if term.isascii() and term.isdigit() and int(term) <= _MAX_ID else None


def indexed_search(
    queryset: QuerySet[Any],
    term: str,
    *,
    names: Iterable[str] = ("name",),
    numbers: Iterable[str] = ("id",),
    project_ids: Sequence[int] | None = None,
    also: Q | None = None,
) -> QuerySet[Any]:
    """Rows whose name is exactly ``term``, or (for a number) whose id fields equal it.

    The search of tables of millions of rows (results, workunits, output files): a substring
    search reads the whole table on every search; each of these conditions reads an index.
    With ``project_ids`` the names are matched per project so that a (project, name) unique
    index serves them. ``also`` is one more condition, which must be indexed as well.
    """
    term = term.strip()
    if not term:
        return queryset
    query = Q()
    for field in names:
        match = Q(**{field: term})
        if project_ids is not None:
            match &= Q(project_id__in=list(project_ids))
        query |= match
    number = _term_id(term)
    if number is not None:
        for field in numbers:
            query |= Q(**{field: number})
    if also is not None:
        query |= also
    return queryset.filter(query)


class HostileInputGuard(admin.ModelAdmin):
    """What every ModelAdmin on the site does (``GuardedAdminSite`` mixes it in): a hand-made URL
    gets a list with nothing, Django's "invalid lookup" ``?e=1`` or a 400, never a 500."""

    def formfield_for_dbfield(
        self, db_field: Field, request: HttpRequest, **kwargs: Any
    ) -> forms.Field | None:
        # A URL typed without a scheme (a project's base_url, a team's site) is taken as
        # https, Django 6's default, rather than 5's http (and its deprecation warning).
        if isinstance(db_field, URLField):
            kwargs.setdefault("assume_scheme", "https")
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        # No stored text holds a NUL (PostgreSQL refuses one), so such a term matches nothing;
        # passed on, it makes the driver raise. The changelist's search form already refuses
        # it; the autocomplete view (which calls this too) does not.
        if "\x00" in search_term:
            return queryset.none(), False
        return super().get_search_results(request, queryset, search_term)

    def get_changelist_instance(self, request: HttpRequest) -> ChangeList:
        # The changelist counts its rows here, so the URL's filters reach the database now.
        # Django checks them only while building the query; many values pass that and fail
        # when it runs: a year past 9999, an integer past 64 bits, a NUL, a bad regex, a range
        # of one value, a lookup the database lacks. As Django does while building, any error
        # is taken for a bad parameter (answered with ?e=1), but only when the URL carries
        # some: the bare list, where ?e=1 leads, still fails loudly when the server is at fault.
        if not any(key != ERROR_FLAG for key in request.GET):
            return super().get_changelist_instance(request)
        try:
            with _savepoint(self.model):
                return super().get_changelist_instance(request)
        except _REFUSED_VALUE as exc:
            if (
                isinstance(exc, OperationalError)
                and connections[router.db_for_read(self.model)].vendor != "sqlite"
            ):
                raise  # elsewhere an OperationalError is the server's trouble, not the URL's
            # Logged, so a filter that fails for a reason of ours is still seen.
            logger.warning(
                "admin %s: refused lookup %s", self.model._meta.label, request.GET.urlencode(), exc_info=True
            )
            raise IncorrectLookupParameters(exc) from exc


# What the database (or Django and the driver, converting the value) answers to a value
# it cannot take: a year past 9999 or an integer past 64 bits (ValueError, OverflowError),
# a __range of one value (IndexError), a NUL or a malformed range or regex (DataError on
# PostgreSQL; SQLite reports a bad regex as an OperationalError), a lookup the backend
# lacks (NotSupportedError). Anything else, a lost connection or a bug, stays a server error.
_REFUSED_VALUE = (
    ValueError,
    TypeError,
    IndexError,
    OverflowError,
    DataError,
    NotSupportedError,
    OperationalError,
)


def _savepoint(model: type[Model]) -> AbstractContextManager[Any]:
    """A savepoint inside a transaction (tests, ATOMIC_REQUESTS): a query PostgreSQL refuses
    aborts the transaction around it. Outside one, nothing: a transaction would take
    SQLite's write lock for a read."""
    using = router.db_for_read(model)
    return transaction.atomic(using=using) if connections[using].in_atomic_block else nullcontext()


# django-otp's log-in page for the admin, with the device and token fields.
OTP_LOGIN_TEMPLATE = "otp/admin111/login.html"


def staff_verified(user: Any) -> bool:
    """Whether ``user`` passed the second factor, when COBBLESTONE_STAFF_OTP asks for one. A
    user not signed in through the admin's log-in (the API's HTTP Basic) never has."""
    if not settings.COBBLESTONE_STAFF_OTP:
        return True
    is_verified = getattr(user, "is_verified", None)
    return bool(is_verified is not None and is_verified())


class _RefusalMessage:
    """Say how long to wait when the log-in limits refused the attempt (the authentication
    backend leaves the text on the request) instead of calling the password wrong."""

    request: HttpRequest | None

    def get_invalid_login_error(self) -> forms.ValidationError:
        refusal = getattr(self.request, "login_refusal", None)
        if refusal:
            return forms.ValidationError(refusal, code="too_many_attempts")
        return super().get_invalid_login_error()  # type: ignore[misc]  # the form class supplies it


class StaffLoginForm(_RefusalMessage, AdminAuthenticationForm):
    """The admin's log-in form: user name and password."""


class StaffOTPLoginForm(_RefusalMessage, OTPAdminAuthenticationForm):
    """The same, then a one-time password from the user's TOTP device (COBBLESTONE_STAFF_OTP)."""


class GuardedAdminSite(admin.AdminSite):
    """The admin site (``admin.site``, through ``apps.core.admin_apps``). Every ModelAdmin
    registered on it, the project's and the third-party ones (auth, Celery beat and results)
    alike, is given ``HostileInputGuard``, so a new admin is guarded without doing anything.

    With COBBLESTONE_STAFF_OTP on, it is django-otp's OTPAdminSite in effect: the log-in asks
    for a one-time password too, and only a user verified by a device may enter. The switch
    is read on each request, so the setting needs no other change (the device tables are
    always there, so devices can be enrolled before it is turned on)."""

    @property
    def login_form(self) -> type[AdminAuthenticationForm]:  # type: ignore[override]  # a property where Django has an attribute
        return StaffOTPLoginForm if settings.COBBLESTONE_STAFF_OTP else StaffLoginForm

    @property
    def login_template(self) -> str | None:  # type: ignore[override]  # a property where Django has an attribute
        return OTP_LOGIN_TEMPLATE if settings.COBBLESTONE_STAFF_OTP else None

    def has_permission(self, request: HttpRequest) -> bool:
        return super().has_permission(request) and staff_verified(request.user)

    def register(
        self,
        model_or_iterable: type[Model] | Iterable[type[Model]],
        admin_class: type[admin.ModelAdmin] | None = None,
        **options: Any,
    ) -> None:
        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, HostileInputGuard):
            admin_class = type(
                admin_class.__name__,
                (HostileInputGuard, admin_class),
                {
                    "__module__": admin_class.__module__,
                    "__qualname__": admin_class.__qualname__,
                    "__doc__": admin_class.__doc__,
                },
            )
        super().register(model_or_iterable, admin_class, **options)
