"""Volunteers: accounts (BOINC's "user" table) per project, teams, credit history."""

from __future__ import annotations

import hashlib
import re
import secrets

from django.contrib.auth.hashers import check_password, make_password
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.db.models.functions import Upper

from apps.core.db import PrefixSearchable
from apps.protocol import xml_fragment_problem


def new_authenticator() -> str:
    """A 32-hex-character account key, as BOINC's random_string() makes."""
    return secrets.token_hex(16)


# What accounts stored before passwords were hashed again: the client's md5 itself.
LEGACY_PASSWD_HASH = re.compile(r"[0-9a-fA-F]{32}")
PASSWD_HASH_LEN = 32


def passwd_hash(password: str, email_addr: str) -> str:
    """BOINC's password hash: md5(password + lower(email)), the same the client computes.

    It is what the client sends, so it works as a password: it is never stored as it is
    (make_passwd_hash)."""
    return hashlib.md5((password + email_addr.lower()).encode()).hexdigest()


def make_passwd_hash(digest: str | None) -> str:
    """The stored form of a client's passwd_hash: a salted slow hash of it (Django's
    password hasher), as BOINC stores password_hash(md5). None gives a hash no password
    matches: the account logs in with its account key only."""
    return make_password(None if digest is None else digest.lower())


def passwd_hash_dummy_check(candidate: str) -> None:
    """Spend what checking ``candidate`` against a stored hash costs, for an address no account
    has: a log-in with an unknown address then takes as long as one with a wrong password."""
    if len(candidate) == PASSWD_HASH_LEN:
        make_passwd_hash(candidate)


class Team(models.Model):
    """A team of volunteers within one project."""

    class TeamType(models.IntegerChoices):
        CLUB = 1
        COMPANY = 2
        PRIMARY_SCHOOL = 3
        SECONDARY_SCHOOL = 4
        JUNIOR_COLLEGE = 5
        UNIVERSITY = 6
        GOVERNMENT = 7

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="teams")
    name = models.CharField(max_length=200)
    founder = models.ForeignKey(
        "volunteers.Account", null=True, blank=True, on_delete=models.SET_NULL, related_name="founded_teams"
    )
    type = models.PositiveSmallIntegerField(choices=TeamType.choices, default=TeamType.CLUB)
    url = models.URLField(blank=True)
    description = models.TextField(blank=True)
    country = models.CharField(max_length=100, blank=True)
    joinable = models.BooleanField(default=True, help_text="Whether volunteers may join the team")
    # BOINC's founder transfer: a member's request (ping_user, ping_time) the founder may
    # answer; unanswered for 60 days, the member may take the team over.
    ping_user = models.ForeignKey(
        "volunteers.Account",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The member who asked to become founder",
    )
    ping_time = models.DateTimeField(
        null=True, blank=True, help_text="When foundership was last requested (empty: never)"
    )
    create_time = models.DateTimeField(auto_now_add=True)
    total_credit = models.FloatField(default=0)
    expavg_credit = models.FloatField(default=0, help_text="Recent average credit (half-life one week)")
    expavg_time = models.FloatField(default=0, help_text="Unix time of the last RAC update")

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="team_unique_name")]
        indexes = [
            models.Index(fields=["project", "-expavg_credit", "id"], name="team_top_rac"),
            models.Index(fields=["project", "-total_credit", "id"], name="team_top_total"),
        ]

    def __str__(self) -> str:
        return self.name


def public_cpid(cross_project_id: str, email_addr: str) -> str:
    """The cross-project id exported to stats sites: md5(cross_project_id + email)."""
    return hashlib.md5((cross_project_id + email_addr.lower()).encode()).hexdigest()


class Account(models.Model):
    """A volunteer's account on one project (BOINC's user row), identified by its authenticator."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="accounts")
    name = models.CharField(max_length=200)
    email_addr = models.EmailField(max_length=254)
    passwd_hash = models.CharField(
        max_length=254,  # BOINC's varchar(254): room for any hasher's encoding
        help_text="Salted hash of md5(password + lower(email)); empty: no password set yet",
    )
    authenticator = models.CharField(max_length=64, unique=True, default=new_authenticator)
    cross_project_id = models.CharField(max_length=32, default=new_authenticator)
    create_time = models.DateTimeField(auto_now_add=True)
    last_login_time = models.DateTimeField(
        null=True, blank=True, help_text="Last login on the project's web site (empty: never)"
    )
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.SET_NULL, related_name="members")
    country = models.CharField(max_length=100, blank=True)
    url = models.URLField(blank=True)
    show_hosts = models.BooleanField(default=True)
    stats_export_consent = models.BooleanField(default=True)
    project_prefs = models.TextField(blank=True, help_text="<project_preferences> body")
    global_prefs = models.TextField(blank=True, help_text="<global_preferences> body (computing preferences)")
    venue = models.CharField(
        max_length=50,
        blank=True,
        help_text="Default location of new computers (home, school, work; empty: none), as BOINC's user.venue",
    )
    no_gpus = models.BooleanField(default=False, help_text="Project preference: do not use GPUs")
    no_cpu = models.BooleanField(default=False, help_text="Project preference: do not use the CPU")
    allow_beta_work = models.BooleanField(
        default=False, help_text="Project preference: run test (beta) applications and app versions"
    )
    total_credit = models.FloatField(default=0)
    expavg_credit = models.FloatField(default=0)
    expavg_time = models.FloatField(default=0)
    # Account deletion (apps.volunteers.services.deletion): asked, confirmed, carried out.
    delete_requested = models.DateTimeField(
        null=True, blank=True, help_text="When the latest deletion confirmation link was sent"
    )
    delete_after = models.DateTimeField(
        null=True, blank=True, help_text="Deletion confirmed: when the grace period ends and it is done"
    )
    deleted_time = models.DateTimeField(
        null=True, blank=True, help_text="When the account was deleted (its personal data removed)"
    )

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "email_addr"], name="account_unique_email"),
        ]
        indexes = [
            models.Index(fields=["project", "-expavg_credit", "id"], name="account_top_rac"),
            models.Index(fields=["project", "-total_credit", "id"], name="account_top_total"),
            models.Index(fields=["delete_after"], name="account_delete_due"),
            # The admin's search: the start of a name, an address, each in any case.
            models.Index(PrefixSearchable(Upper("name")), name="account_name_prefix"),
            models.Index(Upper("email_addr"), name="account_email_upper"),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        # Both are sent to the client as XML content (the admin is where they are edited).
        for field in ("project_prefs", "global_prefs"):
            value = getattr(self, field)
            problem = xml_fragment_problem(value) if value else None
            if problem is not None:
                raise ValidationError({field: f"Not valid XML: {problem}"})

    def set_password(self, password: str) -> None:
        self.passwd_hash = make_passwd_hash(passwd_hash(password, self.email_addr))

    def check_passwd_hash(self, candidate: str) -> bool:
        """Whether ``candidate``, the md5(password + email) a client sends, is this account's.

        BOINC also accepts md5(authenticator + email). A row that still holds the bare md5
        (stored before hashing) or a hash of an outdated hasher is re-hashed and saved on
        success, as BOINC's check_passwd_hash() and Django's check_password() do.
        """
        candidate = candidate.lower()
        if len(candidate) != PASSWD_HASH_LEN:
            return False  # no stored hash is of anything else: spare the slow hash
        key_hash = hashlib.md5((self.authenticator + self.email_addr.lower()).encode()).hexdigest()
        if secrets.compare_digest(candidate.encode(), key_hash.encode()):
            return True
        if LEGACY_PASSWD_HASH.fullmatch(self.passwd_hash):
            matches = secrets.compare_digest(candidate.encode(), self.passwd_hash.lower().encode())
            if matches:
                self._update_passwd_hash(candidate)
            return matches
        return check_password(candidate, self.passwd_hash, setter=self._update_passwd_hash)

    def _update_passwd_hash(self, digest: str) -> None:
        self.passwd_hash = make_passwd_hash(digest)
        if self.pk is not None:
            self.save(update_fields=["passwd_hash"])

    @property
    def email(self) -> str:
        """The address under the name Django's password-reset form sends to."""
        return self.email_addr

    @property
    def email_hash(self) -> str:
        return hashlib.md5(self.email_addr.lower().encode()).hexdigest()

    @property
    def public_cpid(self) -> str:
        """This account's ``public_cpid``."""
        return public_cpid(self.cross_project_id, self.email_addr)


class DeletedAccount(models.Model):
    """An exported account that was deleted (BOINC's user_deleted table).

    db_dump lists these so statistics sites drop the user; ``cpid`` is the public
    cross-project id the user was exported under. Only accounts that were in the export
    (consent given) are recorded, and records expire (apps.portal.stats_export).
    """

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    userid = models.BigIntegerField(help_text="The deleted account's id")
    cpid = models.CharField(max_length=32)
    create_time = models.DateTimeField(db_index=True, help_text="When the account was deleted")

    class Meta:
        ordering = ["userid"]
        constraints = [models.UniqueConstraint(fields=["project", "userid"], name="deleted_account_unique")]

    def __str__(self) -> str:
        return f"deleted account {self.userid}"


class Badge(models.Model):
    """A badge users or teams earn (BOINC's badge table), made by the badge pass
    (apps.volunteers.services.badges): a credit level or a percentile of recent average credit."""

    class Kind(models.IntegerChoices):
        USER = 0, "user"
        TEAM = 1, "team"

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    kind = models.PositiveSmallIntegerField(choices=Kind.choices)
    name = models.CharField(max_length=64, help_text="Internal name, e.g. user_pct_0 or team_credit_3")
    title = models.CharField(max_length=100, help_text="Shown on the pages, e.g. Top 5% in average credit")
    create_time = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "name"]
        constraints = [models.UniqueConstraint(fields=["project", "kind", "name"], name="badge_unique_name")]

    def __str__(self) -> str:
        return self.title


class BadgeAward(models.Model):
    """A badge held by one user or one team (BOINC's badge_user and badge_team)."""

    badge = models.ForeignKey(Badge, on_delete=models.CASCADE, related_name="awards")
    account = models.ForeignKey(
        Account, null=True, blank=True, on_delete=models.CASCADE, related_name="badge_awards"
    )
    team = models.ForeignKey(
        Team, null=True, blank=True, on_delete=models.CASCADE, related_name="badge_awards"
    )
    create_time = models.DateTimeField(help_text="When the badge was first given")
    reassign_time = models.DateTimeField(help_text="When the badge pass last confirmed it")

    class Meta:
        ordering = ["badge_id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(account__isnull=False, team__isnull=True)
                | Q(account__isnull=True, team__isnull=False),
                name="badgeaward_one_owner",
            ),
            models.UniqueConstraint(fields=["badge", "account"], name="badgeaward_user_unique"),
            models.UniqueConstraint(fields=["badge", "team"], name="badgeaward_team_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.badge} for {self.account or self.team}"


class CreditHistory(models.Model):
    """Daily snapshot of a user's or a team's credit, for charts."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    account = models.ForeignKey(
        Account, null=True, blank=True, on_delete=models.CASCADE, related_name="credit_history"
    )
    team = models.ForeignKey(
        Team, null=True, blank=True, on_delete=models.CASCADE, related_name="credit_history"
    )
    day = models.DateField()
    total_credit = models.FloatField(default=0)
    expavg_credit = models.FloatField(default=0)

    class Meta:
        ordering = ["day"]
        verbose_name_plural = "credit history"
        constraints = [
            models.CheckConstraint(
                condition=Q(account__isnull=False, team__isnull=True)
                | Q(account__isnull=True, team__isnull=False),
                name="credithistory_one_owner",
            ),
            models.UniqueConstraint(fields=["account", "day"], name="credithistory_user_day"),
            models.UniqueConstraint(fields=["team", "day"], name="credithistory_team_day"),
        ]

    def __str__(self) -> str:
        return f"{self.account or self.team} {self.day}"


class LoginLockout(models.Model):
    """A log-in limit that was reached (apps.scheduler.ratelimits): who was held back, from
    where, and until when. A record for the admin; the counters themselves are in the cache."""

    class Scope(models.TextChoices):
        VOLUNTEER = "volunteer", "volunteer"
        STAFF = "staff", "staff"

    class Kind(models.TextChoices):
        ADDRESS = "address", "one client address, every account"
        ADDRESS_ACCOUNT = "address-account", "one account from one client address"
        ACCOUNT = "account", "one account from every address not known to it"

    scope = models.CharField(max_length=16, choices=Scope.choices)
    kind = models.CharField(max_length=16, choices=Kind.choices, help_text="Which limit was reached")
    account = models.CharField(
        max_length=254, blank=True, help_text="Email address or staff user name tried (empty: any)"
    )
    address = models.GenericIPAddressField(null=True, blank=True, help_text="Client address (empty: any)")
    time = models.DateTimeField(db_index=True, help_text="When the limit was reached")
    until = models.DateTimeField(help_text="When its window ends and log-ins are counted afresh")

    class Meta:
        ordering = ["-time"]

    def __str__(self) -> str:
        return f"{self.scope} {self.kind} {self.account or self.address}"
