from apps.work.models.files import InputFile, OutputFile, WorkunitFileRef
from apps.work.models.jobs import Result, Workunit
from apps.work.models.sequences import WorkSequence

__all__ = ["InputFile", "OutputFile", "Result", "WorkSequence", "Workunit", "WorkunitFileRef"]
