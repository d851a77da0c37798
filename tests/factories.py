"""factory_boy factories: defaults give a valid minimal row; tests set what they care about."""

from __future__ import annotations

import factory
from django.utils import timezone

from apps.applications.models import App, AppVersion
from apps.hosts.models import Host, HostAppVersion, HostCoproc
from apps.news.models import NewsItem
from apps.projects.models import Platform, Project
from apps.sequences.models import WorkSequence
from apps.volunteers.models import Account, Team, make_passwd_hash, passwd_hash
from apps.work.domain.states import ServerState
from apps.work.models import InputFile, OutputFile, Result, Workunit


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"proj{n}")
    name = factory.LazyAttribute(lambda o: f"Project {o.slug}")
    request_delay = 0


class PlatformFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Platform
        django_get_or_create = ("name",)

    name = "x86_64-pc-linux-gnu"
    user_friendly_name = "Linux on x86_64"


class AccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Account

    class Params:
        password = None  # none unless a test gives one: hashing it is slow by design

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"volunteer{n}")
    email_addr = factory.LazyAttribute(lambda o: f"{o.name}@example.com")
    passwd_hash = factory.LazyAttribute(
        lambda o: make_passwd_hash(passwd_hash(o.password, o.email_addr) if o.password else None)
    )


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"Team {n}")


class AppFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = App

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"app{n}")
    user_friendly_name = factory.LazyAttribute(lambda o: f"App {o.name}")


class AppVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AppVersion

    app = factory.SubFactory(AppFactory)
    platform = factory.SubFactory(PlatformFactory)
    version_num = 100


class HostFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Host

    account = factory.SubFactory(AccountFactory)
    project = factory.LazyAttribute(lambda o: o.account.project)
    domain_name = factory.Sequence(lambda n: f"host{n}")
    p_ncpus = 4
    p_fpops = 3e9
    m_nbytes = 8e9
    d_free = 100e9
    platform_name = "x86_64-pc-linux-gnu"
    rpc_time = factory.LazyFunction(timezone.now)


class HostCoprocFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = HostCoproc

    host = factory.SubFactory(HostFactory)
    proc_type = "NVIDIA"
    name = "NVIDIA GeForce RTX 4070"
    count = 1
    peak_flops = 29e12
    available_ram = 12e9
    have_opencl = True
    compute_capability = 890


class HostAppVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = HostAppVersion

    host = factory.SubFactory(HostFactory)
    app_version = factory.SubFactory(AppVersionFactory)
    app = factory.LazyAttribute(lambda o: o.app_version.app)


class WorkunitFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Workunit

    app = factory.SubFactory(AppFactory)
    project = factory.LazyAttribute(lambda o: o.app.project)
    name = factory.Sequence(lambda n: f"wu{n}")
    rsc_fpops_est = 1e12
    rsc_fpops_bound = 1e14


class ResultFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Result

    workunit = factory.SubFactory(WorkunitFactory)
    app = factory.LazyAttribute(lambda o: o.workunit.app)
    project = factory.LazyAttribute(lambda o: o.workunit.project)
    name = factory.LazyAttributeSequence(lambda o, n: f"{o.workunit.name}_{n}")
    server_state = ServerState.UNSENT


class OutputFileFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = OutputFile

    result = factory.SubFactory(ResultFactory)
    name = factory.LazyAttribute(lambda o: f"{o.result.name}_r0")
    open_name = "out"
    max_nbytes = 100_000


class InputFileFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = InputFile

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"in{n}.dat")
    md5_cksum = "d41d8cd98f00b204e9800998ecf8427e"
    nbytes = 0


class WorkSequenceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = WorkSequence

    app = factory.SubFactory(AppFactory)
    project = factory.LazyAttribute(lambda o: o.app.project)
    name = factory.Sequence(lambda n: f"seq{n}")
    max_result_time = 86400


class NewsItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = NewsItem

    project = factory.SubFactory(ProjectFactory)
    title = factory.Sequence(lambda n: f"News {n}")
    body = "Something happened."
