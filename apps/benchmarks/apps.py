import os

from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    name = "apps.benchmarks"
    verbose_name = "Benchmarks"

    def ready(self) -> None:
        # bench_pipeline starts the web and worker processes it measures with this set; in
        # any other process it is unset and the product's stages stay unmetered.
        directory = os.environ.get("COBBLESTONE_STAGE_METER_DIR", "")
        if directory:
            from apps.benchmarks.stage_meter import stage_meter_enable

            stage_meter_enable(directory)
