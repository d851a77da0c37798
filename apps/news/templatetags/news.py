"""``{{ item.body|news_markup }}`` and ``{% project_news project %}`` (the home page's news)."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from apps.news.domain.markup import markup_html
from apps.news.services import public_news
from apps.projects.models import Project

register = template.Library()
HOME_ITEMS = 5


@register.filter
def news_markup(text: str) -> SafeString:
    """The news markup as HTML; markup_html escapes every character of the text itself."""
    return mark_safe(markup_html(text))


@register.inclusion_tag("news/home_news.html")
def project_news(project: Project) -> dict[str, Any]:
    items = list(public_news(project=project, now=timezone.now())[: HOME_ITEMS + 1])
    return {"project": project, "items": items[:HOME_ITEMS], "more": len(items) > HOME_ITEMS}
