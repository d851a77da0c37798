from apps.work.models.assignments import Assignment
from apps.work.models.files import InputFile, OutputFile, WorkunitFileRef
from apps.work.models.jobs import Result, Workunit

__all__ = ["Assignment", "InputFile", "OutputFile", "Result", "Workunit", "WorkunitFileRef"]
