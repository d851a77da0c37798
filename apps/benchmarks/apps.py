from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    name = "apps.benchmarks"
    verbose_name = "Benchmarks"
