from django.contrib import admin
from django.utils.safestring import SafeString, mark_safe

from apps.news.domain.markup import markup_html
from apps.news.models import NewsItem, ProjectLinks


@admin.register(NewsItem)
class NewsItemAdmin(admin.ModelAdmin):
    list_display = ["title", "project", "published", "audience", "send_as_notice"]
    list_filter = ["project", "send_as_notice", "published"]
    list_select_related = ["project", "account", "team"]
    search_fields = ["title"]
    raw_id_fields = ["account", "team"]
    readonly_fields = ["preview"]
    fields = ["project", "title", "body", "preview", "published", "account", "team", "send_as_notice"]

    @admin.display(description="For")
    def audience(self, item: NewsItem) -> str:
        if item.account is not None:
            return f"user {item.account}"
        if item.team is not None:
            return f"team {item.team}"
        return "everyone"

    @admin.display(description="As shown (saved text)")
    def preview(self, item: NewsItem) -> SafeString:
        # markup_html escapes every character of the text itself.
        return mark_safe(markup_html(item.body))


@admin.register(ProjectLinks)
class ProjectLinksAdmin(admin.ModelAdmin):
    list_display = ["project", "forum_url"]
    list_select_related = ["project"]
