"""The admin's view of how much computing each homogeneous redundancy class has."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import AppFactory, HostFactory

pytestmark = pytest.mark.django_db


def test_the_view_sums_each_classs_recent_credit_and_flops(admin_client):
    windows = HostFactory(
        os_name="Microsoft Windows 11", p_vendor="AuthenticAMD", p_model="AMD Ryzen 5", expavg_credit=300
    )
    project = windows.project
    for credit in (60, 40):
        HostFactory(
            account=windows.account,
            os_name="Linux",
            p_vendor="GenuineIntel",
            p_model="Xeon",
            expavg_credit=credit,
        )
    HostFactory(account=windows.account, os_name="Haiku", p_vendor="GenuineIntel", expavg_credit=50)
    HostFactory(account=windows.account, os_name="Linux", p_vendor="GenuineIntel", expavg_credit=0.5)  # idle

    page = admin_client.get(reverse("admin:hosts_host_hr_classes", args=[project.pk])).content.decode()

    coarse = page[page.index("Coarse") :]
    assert "Windows, Intel</td><td>1</td><td>300.0</td><td>75.0 %</td><td>12</td>" in coarse
    assert "Linux, Intel</td><td>2</td><td>100.0</td><td>25.0 %</td><td>24</td>" in coarse
    assert "Unknown class (gets no work)</td><td>1</td><td>50.0</td>" in coarse


def test_the_app_page_links_to_its_projects_classes(admin_client):
    app = AppFactory()
    page = admin_client.get(reverse("admin:applications_app_change", args=[app.pk])).content.decode()
    assert reverse("admin:hosts_host_hr_classes", args=[app.project_id]) in page
    assert 'name="homogeneous_redundancy"' in page
    assert 'name="homogeneous_app_version"' in page
