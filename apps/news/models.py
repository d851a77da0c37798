from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone


class NewsItem(models.Model):
    """A news item of a project, written in the admin: on the home page and in the RSS feeds,
    and sent as a notice in scheduler replies. One for a single user or team is theirs only."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="news")
    title = models.CharField(max_length=200)
    body = models.TextField(
        max_length=20000,
        blank=True,
        help_text="Plain text: a blank line starts a paragraph; [b]bold[/b], [i]italic[/i], "
        "[url=https://…]text[/url]. HTML is shown as typed.",
    )
    published = models.DateTimeField(
        default=timezone.now, help_text="Shown from this time on (a later time holds the item back)"
    )
    account = models.ForeignKey(
        "volunteers.Account",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="Only for this user (their personal feed and their computers' notices)",
    )
    team = models.ForeignKey(
        "volunteers.Team",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="Only for the members of this team",
    )
    send_as_notice = models.BooleanField(
        default=True,
        help_text="Also send it in scheduler replies for its first 30 days, so that the BOINC "
        "client shows it among its notices at the next contact",
    )

    class Meta:
        ordering = ["-published", "-id"]
        indexes = [models.Index(fields=["project", "-published"], name="news_project_published")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(account__isnull=True) | models.Q(team__isnull=True),
                name="news_one_user_or_one_team",
            ),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def is_public(self) -> bool:
        return self.account_id is None and self.team_id is None

    def clean(self) -> None:
        if self.account_id is not None and self.team_id is not None:
            raise ValidationError("A news item is for everyone, one user or one team, not both.")
        for field in ("account", "team"):
            target = getattr(self, field)
            if target is not None and self.project_id is not None and target.project_id != self.project_id:
                raise ValidationError({field: f"Not a {field} of this project."})


class ProjectLinks(models.Model):
    """Links of a project that Cobblestone does not serve itself, for the BOINC Manager's menu."""

    project = models.OneToOneField("projects.Project", on_delete=models.CASCADE, related_name="news_links")
    forum_url = models.URLField(
        blank=True, help_text="The project's message boards (empty: no link in the BOINC Manager)"
    )

    class Meta:
        verbose_name = "project links"
        verbose_name_plural = "project links"

    def __str__(self) -> str:
        return f"links of {self.project}"
