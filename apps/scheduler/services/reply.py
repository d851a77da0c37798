"""Turn the handled RPC into a SchedulerReply: identity and credit, work, acks, aborts."""

from __future__ import annotations

import functools
import logging
from typing import TypedDict

from apps.applications.models import AppVersion
from apps.core.db import ModelColumns
from apps.core.domain.signing import sign_upload_certificate
from apps.news.services import reply_news
from apps.protocol import (
    SCHEDULER_VERSION,
    AppDesc,
    AppVersionDesc,
    FileInfoDesc,
    FileRef,
    ResultDesc,
    SchedulerReply,
    WorkunitDesc,
    xml_fragment_problem,
    xml_safe_text,
)
from apps.protocol.request_types import CoprocUsage
from apps.scheduler.queries import file_refs_with_inputs, output_files_of_results
from apps.scheduler.services.catalog import project_catalog
from apps.scheduler.services.context import RpcContext, SentJob
from apps.sequences.services.hosts import state_files_of_assignment
from apps.volunteers.models import Account
from apps.work.models import InputFile, OutputFile, WorkunitFileRef

logger = logging.getLogger(__name__)

# Accounts' stored preferences repeat from RPC to RPC: check each distinct text once.
_fragment_problem = functools.lru_cache(maxsize=4096)(xml_fragment_problem)


def reply_build(ctx: RpcContext, *, no_rsc_apps: tuple = ()) -> SchedulerReply:
    project, account, host = ctx.project, ctx.account, ctx.host
    assert account is not None
    assert host is not None
    work = _work_elements(ctx)
    code_sign_key, code_sign_key_signature = _code_sign_key(ctx)
    catalog = project_catalog(project)
    news = reply_news(  # notices, Manager links, feed
        project=project,
        account=account,
        now=ctx.now,
        has_notices=catalog.has_notices,
        forum_url=catalog.forum_url,
    )
    return SchedulerReply(
        scheduler_version=SCHEDULER_VERSION,
        dont_use_dcf=True,
        master_url=project.master_url,
        project_name=project.name,
        messages=(*ctx.messages, *news.notices),
        request_delay=ctx.request_delay if ctx.request_delay is not None else project.request_delay,
        next_rpc_delay=project.next_rpc_delay or None,
        userid=account.id,
        user_name=xml_safe_text(account.name),
        user_total_credit=account.total_credit,
        user_expavg_credit=account.expavg_credit,
        user_create_time=account.create_time.timestamp(),
        email_hash=account.email_hash,
        cross_project_id=account.cross_project_id,
        teamid=account.team_id,
        team_name=xml_safe_text(account.team.name) if account.team else None,
        project_preferences=_project_prefs(account),
        global_preferences=ctx.global_prefs_out,
        hostid=host.id if ctx.new_host else None,
        host_total_credit=host.total_credit,
        host_expavg_credit=host.expavg_credit,
        host_venue=xml_safe_text(host.venue),
        host_create_time=host.create_time.timestamp(),
        gui_urls=news.gui_urls,
        rss_feeds=news.rss_feeds,
        no_rsc_apps=no_rsc_apps,
        result_acks=tuple(ctx.acks),
        result_aborts=tuple(ctx.aborts),
        result_aborts_if_not_started=tuple(ctx.aborts_if_not_started),
        delete_file_infos=tuple(ctx.delete_file_infos),
        message_ack=ctx.message_ack,
        trickle_downs=ctx.trickle_downs,
        work_sequences_assigned=tuple(ctx.sequences_assigned),
        work_sequences_unassigned=tuple(ctx.sequences_unassigned),
        work_sequences_ended=tuple(ctx.sequences_ended),
        code_sign_key=code_sign_key,
        code_sign_key_signature=code_sign_key_signature,
        **work,
    )


def _project_prefs(account: Account) -> str:
    """The account's project preferences, or none if they are not XML the reply can carry
    (logged): one bad stored value must not cost the host its acknowledgements and work."""
    prefs = account.project_prefs or ""
    problem = _fragment_problem(prefs) if prefs else None
    if problem is not None:
        logger.warning("account %s: project preferences not sent, not valid XML: %s", account.id, problem)
        return ""
    return prefs


def _code_sign_key(ctx: RpcContext) -> tuple[str | None, str | None]:
    """Send the key only when the client has none, or a rotation with its signature."""
    current = ctx.project.code_sign_public_key.strip()
    held = ctx.req.code_sign_key.strip()
    if not current or (ctx.req.is_anonymous_platform and not held):
        return (current or None), None
    if not held:
        return current, None
    if held != current and ctx.project.code_sign_key_signature:
        return current, ctx.project.code_sign_key_signature
    return None, None


_REF = ModelColumns(WorkunitFileRef, "fr")
_INPUT = ModelColumns(InputFile, "f")
_OUTPUT = ModelColumns(OutputFile, "o")


class _WorkElements(TypedDict, total=False):
    apps: tuple[AppDesc, ...]
    file_infos: tuple[FileInfoDesc, ...]
    app_versions: tuple[AppVersionDesc, ...]
    workunits: tuple[WorkunitDesc, ...]
    results: tuple[ResultDesc, ...]


def _work_elements(ctx: RpcContext) -> _WorkElements:
    if not ctx.sent:
        return {}
    project = ctx.project
    apps: dict[int, AppDesc] = {}
    file_infos: dict[str, FileInfoDesc] = {}
    app_versions: dict[int, AppVersionDesc] = {}
    workunits, results = [], []
    wu_ids = {job.result.workunit_id for job in ctx.sent}
    refs_by_wu: dict[int, list[WorkunitFileRef]] = {}
    for ref in file_refs_with_inputs(list(wu_ids), _REF, _INPUT):
        refs_by_wu.setdefault(ref.workunit_id, []).append(ref)
    # A work-sequence step reads the state its predecessor left on this host; such an
    # input is declared as the host's own output file, never as a download.
    assert ctx.host is not None  # work is sent to an authenticated host
    own_states = (
        state_files_of_assignment(
            host=ctx.host, names={r.file.name for refs in refs_by_wu.values() for r in refs}
        )
        if any(job.result.workunit.sequence_id for job in ctx.sent)
        else {}
    )
    outputs_by_result: dict[int, list[OutputFile]] = {}
    for output in output_files_of_results([j.result.id for j in ctx.sent], _OUTPUT):
        outputs_by_result.setdefault(output.result_id, []).append(output)
    for job in ctx.sent:
        result, wu = job.result, job.result.workunit
        if wu.app_id not in apps:
            app = ctx.apps.get(wu.app_id) or result.app
            apps[wu.app_id] = AppDesc(
                name=app.name,
                user_friendly_name=xml_safe_text(app.user_friendly_name or app.name),
                non_cpu_intensive=app.non_cpu_intensive,
            )
        app_name = apps[wu.app_id].name
        if result.app_version_id and result.app_version_id not in app_versions:
            version = result.app_version
            assert version is not None  # its id was just tested
            app_versions[version.id] = _app_version_desc(job, version, app_name)
            for app_file in version.files.all():
                file_infos.setdefault(
                    app_file.file_name,
                    FileInfoDesc(
                        name=app_file.file_name,
                        download_urls=(f"{project.download_url}/{app_file.file_name}",),
                        md5_cksum=app_file.md5_cksum,
                        nbytes=app_file.nbytes,
                        executable=app_file.executable,
                        file_signature=app_file.file_signature or None,
                    ),
                )
        for ref in refs_by_wu.get(wu.id, []):
            f = ref.file
            if f.name in own_states:  # a sequence step's state, see own_states above
                file_infos.setdefault(f.name, _upload_file_info(ctx, own_states[f.name]))
                continue
            file_infos.setdefault(
                f.name,
                FileInfoDesc(
                    name=f.name,
                    download_urls=(f.remote_url or f"{project.download_url}/{f.name}",),
                    md5_cksum=f.md5_cksum,
                    nbytes=f.nbytes,
                    sticky=f.sticky,
                    report_on_rpc=f.report_on_rpc,
                    no_delete=f.no_delete,
                ),
            )
        workunits.append(
            WorkunitDesc(
                name=wu.name,
                app_name=app_name,
                command_line=wu.command_line,
                rsc_fpops_est=wu.rsc_fpops_est * job.option.rsc_fpops_scale,
                rsc_fpops_bound=wu.rsc_fpops_bound * job.option.rsc_fpops_scale,
                rsc_memory_bound=wu.rsc_memory_bound,
                rsc_disk_bound=wu.rsc_disk_bound,
                file_refs=tuple(
                    FileRef(
                        file_name=ref.file.name,
                        open_name=ref.open_name,
                        copy_file=ref.copy_file,
                        optional=ref.optional,
                    )
                    for ref in refs_by_wu.get(wu.id, [])
                ),
            )
        )
        outputs = outputs_by_result.get(result.id, [])
        for output in outputs:
            file_infos[output.name] = _upload_file_info(ctx, output)
        results.append(
            ResultDesc(
                name=result.name,
                wu_name=wu.name,
                report_deadline=result.report_deadline.timestamp(),  # type: ignore[union-attr]  # set when sent
                platform=result.platform,
                version_num=result.version_num,
                plan_class=result.plan_class,
                file_refs=tuple(
                    FileRef(
                        file_name=o.name, open_name=o.open_name, copy_file=o.copy_file, optional=o.optional
                    )
                    for o in outputs
                ),
            )
        )
    return {
        "apps": tuple(apps.values()),
        "file_infos": tuple(file_infos.values()),
        "app_versions": tuple(app_versions.values()),
        "workunits": tuple(workunits),
        "results": tuple(results),
    }


def _app_version_desc(job: SentJob, version: AppVersion, app_name: str) -> AppVersionDesc:
    option = job.option
    coprocs = (CoprocUsage(type=option.proc_type, count=option.gpu_usage),) if option.proc_type.is_gpu else ()
    return AppVersionDesc(
        app_name=app_name,
        version_num=version.version_num,
        platform=version.platform.name,
        plan_class=version.plan_class,
        avg_ncpus=option.avg_ncpus,
        max_ncpus=max(option.avg_ncpus, version.max_ncpus or option.avg_ncpus),
        flops=job.projected_flops,
        api_version=version.api_version,
        cmdline=version.cmdline,
        coprocs=coprocs,
        file_refs=tuple(
            FileRef(
                file_name=f.file_name,
                open_name=f.open_name,
                main_program=f.main_program,
                copy_file=f.copy_file,
            )
            for f in version.files.all()
        ),
    )


def _upload_file_info(ctx: RpcContext, output: OutputFile) -> FileInfoDesc:
    project = ctx.project
    if not output.upload:
        # A work-sequence step's state file stays on the host for the next step.
        return FileInfoDesc(
            name=output.name, max_nbytes=output.max_nbytes, generated_locally=True, sticky=True
        )
    signature = output.xml_signature or (
        sign_upload_certificate(project.upload_private_key, output.name, output.max_nbytes)
        if project.upload_private_key
        else None
    )
    return FileInfoDesc(
        name=output.name,
        upload_urls=(project.upload_url,),
        max_nbytes=output.max_nbytes,
        generated_locally=True,
        upload_when_present=True,
        gzip_when_done=output.gzip_when_done,
        xml_signature=signature,
        sticky=output.sticky,  # a restartable sequence step's state is uploaded and kept
    )
