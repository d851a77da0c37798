"""Who may submit (BOINC's check_remote_submit_permissions, has_submit_access)."""

from __future__ import annotations

import hashlib

from apps.applications.models import App
from apps.projects.models import Project
from apps.submit.models import Batch, UserSubmit, UserSubmitApp
from apps.volunteers.models import Account
from apps.volunteers.services import account_with_key

BAD_AUTHENTICATOR = "bad authenticator"
NO_SUCH_BATCH = "no such batch"
NOT_OWNER = "not owner of batch"


class SubmitError(Exception):
    """A refusal worded for the submitter; BOINC's error number -1 unless told otherwise."""

    def __init__(self, message: str, error_num: int = -1) -> None:
        super().__init__(message)
        self.message = message
        self.error_num = error_num


def submitter_check(
    *, project: Project, authenticator: str, app: App | None = None
) -> tuple[Account, UserSubmit]:
    """The account behind ``authenticator`` and its submitter row; with ``app``, it must
    also be allowed to submit to that app (all apps, or a row for this one)."""
    if not authenticator:
        raise SubmitError("no authenticator")
    account = account_with_key(project=project, authenticator=authenticator)
    if account is None:
        raise SubmitError(BAD_AUTHENTICATOR)
    submitter = UserSubmit.objects.filter(account=account).first()
    if submitter is None:
        raise SubmitError("no submit access" if app is not None else "no file access")
    if (
        app is not None
        and not submitter.submit_all
        and not UserSubmitApp.objects.filter(account=account, app=app).exists()
    ):
        raise SubmitError("no submit access")
    return account, submitter


def app_named(*, project: Project, name: str) -> App:
    app = App.objects.filter(project=project, name=name).first() if name else None
    if app is None:
        raise SubmitError(f"app not found: {name}")
    return app


def batch_owned(*, project: Project, account: Account, batch_id: int = 0, batch_name: str = "") -> Batch:
    """The batch named by id (or else by name); only its owner may use it."""
    if batch_id:
        batch = Batch.objects.filter(project=project, id=batch_id).select_related("app").first()
    elif batch_name:
        batch = Batch.objects.filter(project=project, name=batch_name).select_related("app").first()
    else:
        raise SubmitError("batch not specified")
    if batch is None:
        raise SubmitError(NO_SUCH_BATCH)
    if batch.owner_id != account.pk:
        raise SubmitError(NOT_OWNER)
    return batch


def batch_manageable(*, account: Account, batch: Batch) -> bool:
    """BOINC's web rule: the owner, a submitter who manages every app, or one who manages
    the batch's app may follow, abort and retire a batch and fetch its outputs."""
    if batch.owner_id == account.pk:
        return True
    submitter = UserSubmit.objects.filter(account=account).first()
    if submitter is None:
        return False
    return (
        submitter.manage_all
        or UserSubmitApp.objects.filter(account=account, app_id=batch.app_id, manage=True).exists()
    )


def batch_managed(*, project: Project, account: Account, batch_id: int) -> Batch:
    """The batch ``batch_id`` if ``account`` may manage it (see batch_manageable)."""
    batch = Batch.objects.filter(project=project, id=batch_id).select_related("app", "owner").first()
    if batch is None:
        raise SubmitError(NO_SUCH_BATCH)
    if not batch_manageable(account=account, batch=batch):
        raise SubmitError(NOT_OWNER)
    return batch


def authenticator_identity(authenticator: str) -> str:
    """The log-in limits' identity for an authenticator tried: a hash, never the key itself."""
    return "key:" + hashlib.sha256(authenticator.encode()).hexdigest()[:32]
