"""Batches submitted straight through the service, for the page and admin tests."""

from __future__ import annotations

from apps.protocol.submit_rpc import BatchDesc, InputFileDesc, JobDesc
from apps.submit.models import Batch, UserSubmit
from apps.submit.services.submission import batch_submit


def submitted(project, app, account, name: str, njobs: int = 2) -> Batch:
    jobs = tuple(
        JobDesc(name=f"{name}_{i}", input_files=(InputFileDesc("inline", f"{name} {i}"),))
        for i in range(njobs)
    )
    return batch_submit(
        project=project,
        account=account,
        submitter=UserSubmit.objects.get(account=account),
        app=app,
        desc=BatchDesc(app_name=app.name, batch_name=name, jobs=jobs),
    )
