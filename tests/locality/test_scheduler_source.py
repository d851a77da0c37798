"""The locality job source in the real scheduler RPC (docs/locality.md's rules, one per test)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.locality.models import HostFile, LocalityFile
from apps.locality.selectors import file_holder_counts
from apps.protocol import parse_reply, render_request
from apps.scheduler.services import scheduler_request_handle
from apps.work.domain.states import Outcome, ServerState
from apps.work.models import Result
from tests.locality.conftest import MB, file_work, large_file, volunteer, wu_file
from tests.scheduler.conftest import rpc

pytestmark = pytest.mark.django_db


def names(reply) -> list[str]:
    return [r.name for r in reply.results]


def finish(file_name: str, *, state: ServerState = ServerState.OVER) -> None:
    """Every result of the file sent elsewhere and (by default) reported."""
    Result.objects.filter(workunit__locality_file_name=file_name).update(
        server_state=state, outcome=Outcome.SUCCESS if state == ServerState.OVER else Outcome.INIT
    )


def test_results_for_a_file_the_host_holds_are_sent_first(loc_project, loc_app, hosts):
    file_work(loc_project, loc_app, "a.dat", 5)
    file_work(loc_project, loc_app, "b.dat", 5)
    host = hosts.new(files={"b.dat": 10 * MB})
    reply = hosts.rpc(host, jobs=3)
    assert len(reply.results) == 3
    assert {wu_file(n) for n in names(reply)} == {"b.dat"}


def test_reported_files_are_recorded_and_a_locality_file_row_made_on_first_sight(loc_project, loc_app, hosts):
    file_work(loc_project, loc_app, "a.dat", 2)
    assert not LocalityFile.objects.exists()
    host = hosts.new(files={"a.dat": 10 * MB})
    hosts.rpc(host)
    row = HostFile.objects.get(file__name="a.dat")
    assert (row.sent_by_scheduler, row.downloads, row.delete_requested) == (False, 0, False)
    assert LocalityFile.objects.get().nbytes == 10 * MB


def test_unknown_sticky_files_make_no_rows_and_are_not_deleted(loc_project, loc_app, hosts):
    file_work(loc_project, loc_app, "a.dat", 2)
    host = hosts.new(files={"invented.bin": 5.0, "also__bad": 1.0})
    reply = hosts.rpc(host)
    assert not LocalityFile.objects.filter(name__in=["invented.bin", "also__bad"]).exists()
    assert reply.delete_file_infos == ()


def test_sorted_order_drains_the_lowest_file_name_first(loc_project, loc_app, hosts):
    loc_project.locality_scheduling_sorted_order = True
    loc_project.save()
    for name in ("c.dat", "a.dat", "b.dat"):
        file_work(loc_project, loc_app, name, 3)
    host = hosts.new(files={"c.dat": 1.0, "b.dat": 1.0, "a.dat": 1.0})
    firsts = [wu_file(names(hosts.rpc(host))[0]) for _ in range(4)]
    assert firsts == ["a.dat", "a.dat", "a.dat", "b.dat"]


def test_random_order_varies_between_requests(loc_project, loc_app, hosts):
    for name in ("a.dat", "b.dat", "c.dat"):
        file_work(loc_project, loc_app, name, 20)
    host = hosts.new(files={"a.dat": 1.0, "b.dat": 1.0, "c.dat": 1.0})
    # 40 requests: the chance that one of three files never comes first is 3 x (2/3)^40, about 3e-7.
    firsts = {wu_file(names(hosts.rpc(host))[0]) for _ in range(40)}
    assert firsts == {"a.dat", "b.dat", "c.dat"}


def test_results_go_to_a_user_in_increasing_id_order_per_file(loc_project, loc_app, hosts):
    # Results go to a user in increasing id order per file. The user's first host takes one result of each of the first two
    # workunits; the user's second host may not go back below the largest id already sent
    # to the user, although the other replicas of those workunits are still unsent.
    file_work(loc_project, loc_app, "a.dat", 4)
    user = volunteer(loc_project, "u")
    first = hosts.new(user, files={"a.dat": 1.0})
    sent_first = names(hosts.rpc(first, jobs=2))
    second = hosts.new(user, files={"a.dat": 1.0})
    sent_second = names(hosts.rpc(second, jobs=4))

    ids = dict(Result.objects.values_list("name", "id"))
    assert [ids[n] for n in sent_first] == sorted(ids[n] for n in sent_first)
    assert [ids[n] for n in sent_second] == sorted(ids[n] for n in sent_second)
    assert min(ids[n] for n in sent_second) > max(ids[n] for n in sent_first)
    skipped = Result.objects.filter(server_state=ServerState.UNSENT, id__lt=max(ids[n] for n in sent_first))
    assert skipped.count() == 1  # passed over for this user, still there for others
    other = hosts.new(files={"a.dat": 1.0})
    assert skipped.get().name in names(hosts.rpc(other, jobs=8))


def test_one_result_per_user_per_wu_sends_the_user_other_workunits(loc_project, loc_app, hosts):
    loc_project.one_result_per_user_per_wu = True
    loc_project.save()
    file_work(loc_project, loc_app, "a.dat", 3)
    user = volunteer(loc_project, "u")
    hosts.rpc(hosts.new(user, files={"a.dat": 1.0}), jobs=2)  # workunits 0 and 1
    reply = hosts.rpc(hosts.new(user, files={"a.dat": 1.0}), jobs=4)
    assert [n.rsplit("_", 1)[0] for n in names(reply)] == ["a.dat__002"]


def test_a_working_set_file_excluded_for_the_user_falls_back_outside_the_set(loc_project, loc_app, hosts):
    # a.dat is the whole working set, but the user already has a result of each of its
    # workunits: the user's new host gets the deterministic choice, b.dat, instead.
    loc_project.one_result_per_user_per_wu = True
    loc_project.save()
    file_work(loc_project, loc_app, "a.dat", 2)
    file_work(loc_project, loc_app, "b.dat", 2)
    user = volunteer(loc_project, "u")
    hosts.rpc(hosts.new(user, files={"a.dat": 1.0}), jobs=2)
    LocalityFile.objects.filter(name="a.dat").update(in_working_set=True)
    fresh = hosts.new(user)
    reply = hosts.rpc(fresh, jobs=2)
    assert {wu_file(n) for n in names(reply)} == {"b.dat"}
    assert set(fresh.sticky) == {"b.dat"}


def test_a_host_without_files_is_started_on_a_working_set_file(loc_project, loc_app, hosts):
    for name in ("a.dat", "b.dat", "c.dat"):
        file_work(loc_project, loc_app, name, 3)
    LocalityFile.objects.bulk_create(
        [
            LocalityFile(project=loc_project, name=n, in_working_set=(n == "b.dat"))
            for n in ("a.dat", "b.dat", "c.dat")
        ]
    )
    host = hosts.new()
    reply = hosts.rpc(host, jobs=2)
    assert {wu_file(n) for n in names(reply)} == {"b.dat"}


def test_files_sent_with_jobs_are_recorded_as_downloads_once(loc_project, loc_app, hosts):
    file_work(loc_project, loc_app, "a.dat", 6)
    host = hosts.new()
    hosts.rpc(host, jobs=1)
    assert set(host.sticky) == {"a.dat"}  # the client got it as a sticky file
    hosts.rpc(host, jobs=2)  # now reported as held: no new download
    row = HostFile.objects.get()
    assert (row.sent_by_scheduler, row.downloads) == (True, 1)
    assert host.downloads["a.dat"] == 1


def test_a_file_with_no_work_left_is_deleted_from_the_host_on_the_wire(client, loc_project, loc_app, hosts):
    file_work(loc_project, loc_app, "a.dat", 1)
    file_work(loc_project, loc_app, "b.dat", 1)
    finish("a.dat")
    host = hosts.new(files={"a.dat": 1.0})
    reply = rpc(client, loc_project, host.request(jobs=1))  # through HTTP and the XML codec
    assert reply.delete_file_infos == ("a.dat",)
    assert HostFile.objects.get(file__name="a.dat").delete_requested is True
    assert LocalityFile.objects.get(name="a.dat").files_no_work is True
    assert {wu_file(r.name) for r in reply.results} == {"b.dat"}  # and it starts on another file


def test_a_file_whose_results_are_in_progress_elsewhere_is_kept_and_marked(loc_project, loc_app, hosts):
    # BOINC may still make results for it (a replica can fail or time out).
    file_work(loc_project, loc_app, "a.dat", 1)
    finish("a.dat", state=ServerState.IN_PROGRESS)
    host = hosts.new(files={"a.dat": 1.0})
    reply = hosts.rpc(host)
    assert reply.delete_file_infos == ()
    assert LocalityFile.objects.get(name="a.dat").files_no_work is True
    assert "a.dat" in host.sticky


def test_a_file_with_unsent_results_excluded_for_the_user_is_kept_unmarked(loc_project, loc_app, hosts):
    file_work(loc_project, loc_app, "a.dat", 1)
    host = hosts.new(files={"a.dat": 1.0})
    hosts.rpc(host, jobs=1)  # one replica; the other cannot go to the same host
    reply = hosts.rpc(host, jobs=1)
    assert reply.results == ()
    assert reply.delete_file_infos == ()
    assert LocalityFile.objects.get(name="a.dat").files_no_work is False


def test_the_general_source_still_sends_work_without_a_large_file(loc_project, loc_app, hosts):
    from apps.work.services import JobSpec, workunits_create

    workunits_create(project=loc_project, app=loc_app, jobs=[JobSpec(name="plain1", rsc_fpops_est=1e11)])
    reply = hosts.rpc(hosts.new(), jobs=1)
    assert names(reply) == ["plain1_0"]


def test_with_locality_off_the_general_source_sends_filename_work_and_no_rows_are_kept(
    loc_project, loc_app, hosts
):
    file_work(loc_project, loc_app, "a.dat", 2)
    loc_project.locality_scheduling = False
    loc_project.save()
    host = hosts.new(files={"a.dat": 1.0})
    assert len(hosts.rpc(host, jobs=2).results) == 2
    assert not HostFile.objects.exists()


def test_large_file_is_sent_sticky_in_the_reply(client, loc_project, loc_app, hosts):
    large_file(loc_project, "a.dat", nbytes=7 * MB)
    file_work(loc_project, loc_app, "a.dat", 1)
    reply = rpc(client, loc_project, hosts.new().request(jobs=1))
    info = next(f for f in reply.file_infos if f.name == "a.dat")
    assert (info.sticky, info.nbytes) == (True, 7 * MB)


def test_rpc_query_count_is_bounded(loc_project, loc_app, hosts, django_assert_max_num_queries):
    for name in ("a.dat", "b.dat", "c.dat"):
        file_work(loc_project, loc_app, name, 4)
    host = hosts.new(files={"a.dat": 1.0, "b.dat": 1.0})
    hosts.rpc(host, jobs=2)
    hosts.now += timedelta(seconds=5)
    with django_assert_max_num_queries(45):
        scheduler_request_handle(project=loc_project, req=host.request(jobs=6), now=hosts.now)


def test_filename_workunits_make_their_large_file_sticky_and_report_on_rpc(loc_project, loc_app):
    from apps.work.models import InputFile

    InputFile.objects.create(project=loc_project, name="h1.dat", md5_cksum="0" * 32, nbytes=5)
    (wu,) = file_work(loc_project, loc_app, "h1.dat", 1)
    staged = InputFile.objects.get(name="h1.dat")
    assert (staged.sticky, staged.report_on_rpc) == (True, True)
    assert wu.locality_file_name == "h1.dat"


def test_a_file_the_host_no_longer_lists_stops_counting_it_as_a_holder(loc_project, loc_app, hosts):
    file_work(loc_project, loc_app, "a.dat", 4)
    file_work(loc_project, loc_app, "b.dat", 4)
    host = hosts.new(files={"a.dat": 10 * MB, "b.dat": 10 * MB})
    hosts.rpc(host)
    assert file_holder_counts(project=loc_project, now=hosts.now) == {"a.dat": 1, "b.dat": 1}
    del host.sticky["a.dat"]  # the client dropped it
    reply = hosts.rpc(host)
    assert {wu_file(n) for n in names(reply)} == {"b.dat"}
    assert file_holder_counts(project=loc_project, now=hosts.now) == {"b.dat": 1}


def test_a_file_listed_again_counts_the_host_as_a_holder_again(loc_project, loc_app, hosts):
    file_work(loc_project, loc_app, "a.dat", 4)
    file_work(loc_project, loc_app, "b.dat", 4)
    host = hosts.new(files={"a.dat": 10 * MB, "b.dat": 10 * MB})
    hosts.rpc(host)
    del host.sticky["a.dat"]
    hosts.rpc(host)
    host.sticky["a.dat"] = 10 * MB  # its download was retried and finished
    hosts.rpc(host)
    assert file_holder_counts(project=loc_project, now=hosts.now) == {"a.dat": 1, "b.dat": 1}


def test_the_large_file_is_sent_sticky_and_report_on_rpc(client, loc_project, loc_app, hosts):
    """The <file_info> of each large input file carries <sticky/> and <report_on_rpc/>;
    clients before 7.0 list in each request only the files marked so."""
    file_work(loc_project, loc_app, "a.dat", 1)
    host = hosts.new()
    response = client.post(
        f"/{loc_project.slug}/cgi", data=render_request(host.request(jobs=1)), content_type="text/xml"
    )
    reply = parse_reply(response.content)
    info = next(f for f in reply.file_infos if f.name == "a.dat")
    assert (info.sticky, info.report_on_rpc) == (True, True)
    app_file = next(f for f in reply.file_infos if f.name != "a.dat")
    assert app_file.report_on_rpc is False
    assert response.content.count(b"<report_on_rpc/>") == 1


def test_a_non_cpu_intensive_apps_jobs_go_one_per_host_even_for_a_file_it_holds(loc_project, loc_app, hosts):
    loc_app.non_cpu_intensive = True
    loc_app.save()
    file_work(loc_project, loc_app, "a.dat", 5)
    host = hosts.new(files={"a.dat": 10 * MB})
    first = hosts.rpc(host, jobs=4)
    host.running = []  # still running it: not reported with the next request
    second = hosts.rpc(host, jobs=4)
    assert (len(first.results), second.results) == (1, ())
