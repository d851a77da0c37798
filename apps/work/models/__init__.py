from apps.work.models.files import InputFile, OutputFile, WorkunitFileRef
from apps.work.models.jobs import Result, Workunit

__all__ = ["InputFile", "OutputFile", "Result", "Workunit", "WorkunitFileRef"]
