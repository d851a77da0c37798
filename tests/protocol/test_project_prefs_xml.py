"""BOINC's project preferences XML (prefs_project.inc): the sets a volunteer edits on the
web, read back the same, and BOINC's own stored form read as BOINC reads it."""

from __future__ import annotations

import pytest

from apps.protocol import ProtocolError
from apps.protocol.project_prefs import (
    ProjectPrefs,
    ProjectPrefsDoc,
    parse_project_prefs,
    render_project_prefs,
)


def test_a_rendered_document_reads_back_the_same():
    doc = ProjectPrefsDoc(
        primary=ProjectPrefs(
            resource_share=250,
            no_cuda=True,
            allow_beta_work=True,
            apps_selected=(3, 5),
            allow_non_preferred_apps=True,
            specific=(("color_scheme", "Tahiti <Sunset>"),),
        )
    ).with_venue("home", ProjectPrefs(resource_share=40, no_cpu=True))
    assert parse_project_prefs(render_project_prefs(doc)) == doc


def test_the_app_selection_is_written_inside_project_specific_as_boinc_does():
    body = render_project_prefs(ProjectPrefsDoc(primary=ProjectPrefs(apps_selected=(7,))))
    assert "<project_specific>\n    <apps_selected>\n        <app_id>7</app_id>" in body


def test_boincs_stored_document_with_its_root_is_read():
    doc = parse_project_prefs(
        "<project_preferences>\n<resource_share>4</resource_share>\n<no_gpus>1</no_gpus>\n"
        '<venue name="work">\n<resource_share>9</resource_share>\n</venue>\n</project_preferences>\n'
    )
    assert (doc.primary.resource_share, doc.primary.no_gpus, doc.for_venue("work").resource_share) == (
        4,
        True,
        9,
    )


def test_a_venue_without_its_own_set_uses_the_primary():
    doc = ProjectPrefsDoc(primary=ProjectPrefs(resource_share=7))
    assert doc.for_venue("school").resource_share == 7


@pytest.mark.parametrize("share", ["abc", "-1", "1e12", "nan"])
def test_a_resource_share_out_of_bounds_leaves_the_default(share):
    doc = parse_project_prefs(f"<resource_share>{share}</resource_share>")
    assert doc.primary.resource_share == 100


def test_text_that_is_not_xml_is_refused():
    with pytest.raises(ProtocolError):
        parse_project_prefs("<resource_share>4")
