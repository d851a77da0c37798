"""BOINC's own client emulator (BCE) beside Cobblestone's: build, inputs, daily usage.

BCE is ``client/sim.cpp`` of a BOINC source checkout built with ``-DSIM`` (``client/makefile_sim``).
It runs the real client's scheduling and work-fetch code against simulated projects. Two
things the comparison needs are not in it, so ``patch_sim_source`` adds them to a copy of
``sim.cpp`` at build time (the checkout's own file is left as it is):

- a log of the instance-seconds each project used on each resource type, one line per
  simulated day (``usage.dat``: day, project, resource index, instance-seconds);
- holding an app's jobs back until a given time (``app_hold.txt`` beside the inputs: app
  name and seconds from the start), which models an app the project adds later, a project
  attached later, and a job already on the host whose app the server never sends again.

``write_inputs`` writes BCE's ``client_state.xml``, ``global_prefs.xml`` and
``cc_config.xml`` for an emulator scenario. BCE counts a coprocessor in recent estimated
credit at 20% of its peak FLOPS; the scenario's FLOPS are what jobs actually get, so the
GPU's peak is written as five times them and both emulators weigh a GPU second alike.
"""

from __future__ import annotations

import math
import re
import shutil
import statistics
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from xml.sax.saxutils import escape

from apps.core.domain.resources import ProcType
from apps.emulator.domain import SimulationReport
from apps.emulator.domain.model import DAY, Scenario

GPU_EFFICIENCY = 0.2  # the client's assumed ratio of a GPU's real to peak FLOPS
NEVER = 1e12  # seconds: later than any run
START_TIME = 3600.0  # BCE's clock starts here
BCE_TYPES = {ProcType.CPU: "CPU", ProcType.NVIDIA: "NVIDIA", ProcType.ATI: "ATI"}
COPROC_TAGS = {ProcType.NVIDIA: "coproc_cuda", ProcType.ATI: "coproc_ati"}
GPU_JOB_CPUS = 0.01  # a GPU job's CPU part: small, as the scenarios give it none


class BceError(RuntimeError):
    """BCE could not be built or run."""


# -- the build-time patch ------------------------------------------------------------------

_GLOBALS = r"""
#include <map>
#include <string>
// Comparison support: daily usage per project and resource, and apps held back.
static std::map<std::string, double> cmp_hold;
static std::map<std::pair<std::string, int>, double> cmp_usage;
static int cmp_day = 0;
static FILE* cmp_usage_file = 0;

static void cmp_read_holds(const char* prefix) {
    char path[1024], name[256];
    double t;
    unsigned int seed;
    snprintf(path, sizeof(path), "%sseed.txt", prefix);
    FILE* f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%u", &seed) == 1) srand(seed);
        fclose(f);
    }
    snprintf(path, sizeof(path), "%sapp_hold.txt", prefix);
    f = fopen(path, "r");
    if (!f) return;
    while (fscanf(f, "%255s %lf", name, &t) == 2) cmp_hold[name] = t;
    fclose(f);
}

static bool cmp_held(const char* app_name, double now) {
    std::map<std::string, double>::iterator i = cmp_hold.find(app_name);
    return i != cmp_hold.end() && now - 3600 < i->second;
}

static void cmp_flush_usage() {
    if (!cmp_usage_file) return;
    for (std::map<std::pair<std::string, int>, double>::iterator i = cmp_usage.begin();
        i != cmp_usage.end(); ++i
    ) {
        fprintf(cmp_usage_file, "%d %s %d %f\n", cmp_day, i->first.first.c_str(), i->first.second, i->second);
    }
    cmp_usage.clear();
}

static void cmp_add_usage(double now, const char* project, int rsc, double inst_secs) {
    int day = (int)((now - 3600) / 86400);
    if (day != cmp_day) {
        cmp_flush_usage();
        cmp_day = day;
    }
    cmp_usage[std::make_pair(std::string(project), rsc)] += inst_secs;
}
"""

_USAGE = r"""
        {
            // Comparison support: instance-seconds of this step, by resource.
            int cmp_rt = rp->resource_usage.rsc_type;
            double cmp_now = gstate.now - diff/2;
            if (cmp_rt) {
                cmp_add_usage(cmp_now, rp->project->project_name, cmp_rt, diff*rp->resource_usage.coproc_usage);
            } else {
                cmp_add_usage(cmp_now, rp->project->project_name, 0, diff*rp->resource_usage.avg_ncpus*cpu_scale);
            }
        }
"""


def _replace_once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise BceError(f"sim.cpp has changed: {old.strip()[:60]!r} not found exactly once")
    return text.replace(old, new)


def patch_sim_source(text: str) -> str:
    """``sim.cpp`` with the daily usage log and the app hold added."""
    text = _replace_once(text, "SIM_RESULTS sim_results;\n", "SIM_RESULTS sim_results;\n" + _GLOBALS)
    text = _replace_once(
        text,
        "        if (app->ignore) continue;\n        if (!has_app_version_needing_work(app)) continue;\n",
        "        if (app->ignore) continue;\n        if (cmp_held(app->name, gstate.now)) continue;\n"
        "        if (!has_app_version_needing_work(app)) continue;\n",
    )
    text = _replace_once(
        text, "        rp->project->idle = false;\n", "        rp->project->idle = false;\n" + _USAGE
    )
    text = _replace_once(
        text,
        "    check_app_config(infile_prefix);\n",
        "    check_app_config(infile_prefix);\n    cmp_read_holds(infile_prefix);\n"
        '    snprintf(buf, sizeof(buf), "%susage.dat", outfile_prefix);\n'
        '    cmp_usage_file = fopen(buf, "w");\n',
    )
    return _replace_once(
        text,
        "    html_end();\n}\n",
        "    cmp_flush_usage();\n    fclose(cmp_usage_file);\n    html_end();\n}\n",
    )


def _makefile_objects(makefile: str) -> list[str]:
    match = re.search(r"^OBJS = \\\n(.*?)\n\n", makefile, re.S | re.M)
    if not match:
        raise BceError("client/makefile_sim has no OBJS list")
    return [word for word in match.group(1).split() if word != "\\"]


def _run(cmd: list[str], cwd: Path) -> None:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-2000:]
        raise BceError(f"{' '.join(cmd)} failed in {cwd}:\n{tail}")


def build_bce(boinc_src: Path, out_dir: Path, jobs: int = 2) -> Path:
    """Build the patched BCE from a BOINC checkout; returns the binary's path.

    The checkout gets ``config.h`` (configure, if missing) and the object files of the
    unpatched sources; the patched ``sim.cpp`` is compiled and linked in ``out_dir``.
    """
    client = boinc_src / "client"
    if not (client / "sim.cpp").is_file() or not (client / "makefile_sim").is_file():
        raise BceError(f"{boinc_src} is not a BOINC source checkout (no client/sim.cpp)")
    if not (boinc_src / "config.h").is_file():
        _run(["./_autosetup"], boinc_src)
        _run(["./configure", "--disable-server", "--disable-manager", "--disable-client"], boinc_src)
    objects = [o for o in _makefile_objects((client / "makefile_sim").read_text()) if o != "sim.o"]
    _run(["make", "-f", "makefile_sim", f"-j{jobs}", *objects], client)
    out_dir.mkdir(parents=True, exist_ok=True)
    source = out_dir / "sim_compare.cpp"
    source.write_text(patch_sim_source((client / "sim.cpp").read_text()))
    flags = ["-g", "-O1", "-DSIM", "-I", str(boinc_src / "lib"), "-I", str(boinc_src), "-I", str(client)]
    _run(["g++", *flags, "-c", str(source), "-o", str(out_dir / "sim_compare.o")], out_dir)
    binary = out_dir / "bce"
    _run(
        [
            "g++",
            *[str(client / o) for o in objects],
            str(out_dir / "sim_compare.o"),
            "-o",
            str(binary),
            "-ldl",
            "-lcurl",
            "-lz",
            "-lssl",
            "-lcrypto",
        ],
        client,
    )
    return binary


# -- inputs ----------------------------------------------------------------------------


def _rsc_index(scenario: Scenario) -> dict[ProcType, int]:
    gpus = [r.proc_type for r in scenario.host.resources if r.proc_type is not ProcType.CPU]
    return {ProcType.CPU: 0, **{proc: i + 1 for i, proc in enumerate(gpus)}}


def write_inputs(scenario: Scenario, directory: Path) -> None:
    """BCE's input files for the scenario, and its app holds."""
    directory.mkdir(parents=True, exist_ok=True)
    cpu = scenario.host.cpu
    coprocs = []
    for rsc in scenario.host.resources:
        if rsc.proc_type is ProcType.CPU:
            continue
        tag = COPROC_TAGS.get(rsc.proc_type)
        if tag is None:
            raise BceError(f"BCE input: resource {rsc.proc_type} is not supported")
        coprocs.append(
            f"<{tag}><count>{rsc.ninstances}</count><peak_flops>{rsc.flops / GPU_EFFICIENCY:.6g}</peak_flops>"
            f"<have_cuda>1</have_cuda><name>emulated</name></{tag}>"
        )
    parts = [
        "<client_state>",
        "<host_info>",
        f"<p_ncpus>{cpu.ninstances}</p_ncpus><p_fpops>{cpu.flops:.6g}</p_fpops><p_iops>{cpu.flops:.6g}</p_iops>",
        "<m_nbytes>1e10</m_nbytes><d_total>1e12</d_total><d_free>1e12</d_free>",
        f"<coprocs>{''.join(coprocs)}</coprocs>",
        "</host_info>",
        "<time_stats><on_frac>1</on_frac><connected_frac>1</connected_frac><active_frac>1</active_frac>"
        "<gpu_active_frac>1</gpu_active_frac></time_stats>",
    ]
    holds: list[tuple[str, float]] = []
    for project in scenario.projects:
        parts.append(_project_xml(scenario, project.name, holds))
    parts.append("</client_state>")
    (directory / "client_state.xml").write_text("\n".join(parts) + "\n")
    prefs = scenario.prefs
    (directory / "global_prefs.xml").write_text(
        "<global_preferences>\n"
        f"<work_buf_min_days>{prefs.work_buf_min / DAY:.6g}</work_buf_min_days>\n"
        f"<work_buf_additional_days>{prefs.work_buf_additional / DAY:.6g}</work_buf_additional_days>\n"
        f"<cpu_scheduling_period_minutes>{prefs.cpu_scheduling_period / 60:.6g}</cpu_scheduling_period_minutes>\n"
        "<max_ncpus_pct>100</max_ncpus_pct><cpu_usage_limit>100</cpu_usage_limit>\n"
        "<run_if_user_active>1</run_if_user_active><run_gpu_if_user_active>1</run_gpu_if_user_active>\n"
        "</global_preferences>\n"
    )
    (directory / "cc_config.xml").write_text(
        f"<cc_config><options><rec_half_life_days>{prefs.rec_half_life / DAY:.6g}</rec_half_life_days>"
        "</options></cc_config>\n"
    )
    (directory / "app_hold.txt").write_text("".join(f"{name} {t:.0f}\n" for name, t in holds))


def _project_xml(scenario: Scenario, name: str, holds: list[tuple[str, float]]) -> str:
    project = scenario.project(name)
    if project.queued_jobs and project.attach_at > 0:
        # BCE has every project from the start: its queue would run before the attach time.
        raise BceError(f"BCE input: project {name} is attached later and has queued jobs")
    index = _rsc_index(scenario)
    parts = [
        "<project>",
        f"<master_url>http://{escape(name.lower())}.example/</master_url>",
        f"<project_name>{escape(name)}</project_name>",
        f"<resource_share>{project.resource_share:.6g}</resource_share>",
        "</project>",
    ]
    version = 0
    for app in project.apps:
        parts.append(_app_xml(app.name, app.fpops_est, app.fpops_stdev, app.latency_bound, app.weight))
        for spec in app.versions:
            version += 1
            parts.append(_version_xml(app.name, version, spec.proc_type, spec.usage, scenario, index))
        start = max(app.available_from, project.attach_at)
        if start > 0:
            holds.append((app.name, start))
    # A queued job's app is one the server never sends again.
    queued_versions: dict[str, int] = {}
    for n, job in enumerate(project.queued_jobs):
        app_name = f"{job.app}_queued" if any(a.name == job.app for a in project.apps) else job.app
        if app_name not in queued_versions:
            version += 1
            queued_versions[app_name] = version
            parts.append(_app_xml(app_name, job.fpops, 0.0, job.deadline, 1.0))
            parts.append(_version_xml(app_name, version, job.proc_type, job.usage, scenario, index))
            holds.append((app_name, NEVER))
        job_version = queued_versions[app_name]
        job_name = f"{name}_queued_{n}"
        parts.append(
            f"<workunit><name>{job_name}</name><app_name>{app_name}</app_name>"
            f"<version_num>{job_version}</version_num><rsc_fpops_est>{job.fpops:.6g}</rsc_fpops_est>"
            f"<rsc_fpops_bound>{job.fpops * 10:.6g}</rsc_fpops_bound></workunit>"
        )
        parts.append(
            f"<result><name>{job_name}</name><wu_name>{job_name}</wu_name><version_num>{job_version}</version_num>"
            f"<platform>client simulator</platform><state>2</state>"
            f"<received_time>{START_TIME:.0f}</received_time>"
            f"<report_deadline>{START_TIME + job.deadline:.0f}</report_deadline></result>"
        )
    # BCE reads apps, versions and jobs after their project, in the project's scope.
    return "\n".join(parts)


def _app_xml(name: str, fpops_est: float, stdev: float, latency: float, weight: float) -> str:
    return (
        f"<app><name>{escape(name)}</name><latency_bound>{latency:.6g}</latency_bound>"
        f"<fpops_est>{fpops_est:.6g}</fpops_est><fpops><mean>{fpops_est:.6g}</mean>"
        f"<std_dev>{stdev:.6g}</std_dev></fpops><weight>{weight:.6g}</weight></app>"
    )


def _version_xml(
    app: str,
    version: int,
    proc: ProcType,
    usage: float,
    scenario: Scenario,
    index: dict[ProcType, int],
) -> str:
    rsc = scenario.host.resource(proc)
    if rsc is None or proc not in index:
        raise BceError(f"BCE input: app {app} has a version for {proc}, which the host lacks")
    if proc is ProcType.CPU:
        usage_xml = f"<avg_ncpus>{usage:.6g}</avg_ncpus><max_ncpus>{usage:.6g}</max_ncpus>"
        flops = rsc.flops * usage
    else:
        usage_xml = (
            f"<avg_ncpus>{GPU_JOB_CPUS}</avg_ncpus><max_ncpus>{GPU_JOB_CPUS}</max_ncpus>"
            f"<coproc><type>{BCE_TYPES[proc]}</type><count>{usage:.6g}</count></coproc>"
        )
        flops = rsc.flops * usage
    return (
        f"<app_version><app_name>{escape(app)}</app_name><version_num>{version}</version_num>"
        f"<platform>client simulator</platform><api_version>7.0.0</api_version>{usage_xml}"
        f"<flops>{flops:.6g}</flops></app_version>"
    )


# -- running and reading ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DailyUsage:
    """Instance-seconds per (day, project, resource type), as BCE or the emulator measured them."""

    ninstances: dict[ProcType, int]
    seconds: dict[tuple[int, str, ProcType], float]

    def share(self, project: str, proc: ProcType, first_day: int, last_day: int) -> float:
        """Fraction of the resource's capacity the project used over days [first_day, last_day)."""
        used = sum(self.seconds.get((d, project, proc), 0.0) for d in range(first_day, last_day))
        return used / (self.ninstances[proc] * DAY * (last_day - first_day))


def run_bce(
    binary: Path, scenario: Scenario, work_dir: Path, delta: float = 60.0, seed: int = 1
) -> DailyUsage:
    """Run BCE on the scenario in ``work_dir`` with the random seed; its daily usage."""
    if work_dir.exists():
        shutil.rmtree(work_dir)
    inputs = work_dir / "in"
    outputs = work_dir / "out"
    outputs.mkdir(parents=True)
    write_inputs(scenario, inputs)
    (inputs / "seed.txt").write_text(f"{seed}\n")
    cmd = [
        str(binary),
        "--infile_prefix",
        f"{inputs}/",
        "--outfile_prefix",
        f"{outputs}/",
        "--duration",
        f"{scenario.duration:.0f}",
        "--delta",
        f"{delta:.0f}",
    ]
    _run(cmd, work_dir)
    return read_usage(outputs / "usage.dat", scenario)


def report_usage(report: SimulationReport, scenario: Scenario) -> DailyUsage:
    """An emulator run's usage, day by day, in the form BCE's is read."""
    seconds = {
        (day, project.name, rsc.proc_type): report.share(
            project.name, rsc.proc_type, start=day * DAY, end=(day + 1) * DAY
        )
        * rsc.ninstances
        * DAY
        for day in range(days(scenario))
        for project in scenario.projects
        for rsc in scenario.host.resources
    }
    return DailyUsage({r.proc_type: r.ninstances for r in scenario.host.resources}, seconds)


def read_usage(path: Path, scenario: Scenario) -> DailyUsage:
    by_index = {i: proc for proc, i in _rsc_index(scenario).items()}
    seconds: dict[tuple[int, str, ProcType], float] = {}
    for line in path.read_text().splitlines():
        day, project, rsc, secs = line.split()
        key = (int(day), project, by_index[int(rsc)])
        seconds[key] = seconds.get(key, 0.0) + float(secs)
    return DailyUsage({r.proc_type: r.ninstances for r in scenario.host.resources}, seconds)


def days(scenario: Scenario) -> int:
    return math.ceil(scenario.duration / DAY - 1e-9)


def shorten_year(scenario: Scenario, year_days: float) -> Scenario:
    """The scenario with its year-long first phase shortened to ``year_days`` days.

    Every time at or after one year (an app's first availability, a project's attach time,
    the duration) moves back by the difference, and a job queued at the start with a
    deadline of a year or more shrinks with its deadline. Job sizes, buffers and the REC
    half-life stay, so a run of a few weeks shows the same change of phase.
    """
    year = 365 * DAY
    cut = year - year_days * DAY

    def moved(t: float) -> float:
        return t - cut if t >= year else t

    projects = []
    for project in scenario.projects:
        apps = tuple(replace(app, available_from=moved(app.available_from)) for app in project.apps)
        queued = tuple(
            replace(job, fpops=job.fpops * (job.deadline - cut) / job.deadline, deadline=job.deadline - cut)
            if job.deadline >= year
            else job
            for job in project.queued_jobs
        )
        projects.append(replace(project, apps=apps, queued_jobs=queued, attach_at=moved(project.attach_at)))
    return replace(scenario, projects=tuple(projects), duration=moved(scenario.duration))


# -- the comparison ----------------------------------------------------------------------

YEAR_DAYS = 365


@dataclass(frozen=True, slots=True)
class Window:
    """Whole days [first, last) of a run, named for the table."""

    label: str
    first: int
    last: int


def comparison_windows(scenario: Scenario, year_days: int) -> list[Window]:
    """The windows of one day and longer around the scenario's change of phase.

    A scenario whose apps all run from the start is read from day 0; otherwise from the day
    its first phase (``year_days`` long) ends: the first day, the first ten, days 10-15,
    10-30 and, when the run goes on that long, the rest of the run.
    """
    total = days(scenario)
    changes = any(
        p.attach_at > 0 or p.queued_jobs or any(a.available_from > 0 for a in p.apps)
        for p in scenario.projects
    )
    t = year_days if changes else 0
    spans = [("first day", 0, 1), ("days 0-10", 0, 10), ("days 10-15", 10, 15), ("days 10-30", 10, 30)]
    windows = [
        Window(f"{label}" if not t else f"{label} after", t + a, t + b)
        for label, a, b in spans
        if t + b <= total
    ]
    if changes:
        windows.insert(0, Window("first phase", 0, t))
    if total - t > 30:
        windows.append(Window("days 30-end after" if t else "days 30-end", t + 30, total))
    return windows


@dataclass(frozen=True, slots=True)
class ShareRow:
    """One share over one window: the mean over the runs of each side, and its spread (the
    runs' standard deviation, zero for a single run)."""

    window: Window
    project: str
    proc: ProcType
    bce: float
    rec: float
    bce_spread: float = 0.0
    rec_spread: float = 0.0

    @property
    def difference(self) -> float:
        return self.rec - self.bce


def _mean_and_spread(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def compare(
    scenario: Scenario,
    bce_runs: list[DailyUsage],
    rec_runs: list[DailyUsage],
    year_days: int,
) -> list[ShareRow]:
    """Per-window, per-project, per-resource shares of BCE and the ``rec`` policy: the mean
    over each side's runs (one per random seed) and their spread."""
    rows = []
    procs = [r.proc_type for r in scenario.host.resources]
    for window in comparison_windows(scenario, year_days):
        for project in scenario.projects:
            for proc in procs:
                bce, bce_spread = _mean_and_spread(
                    [run.share(project.name, proc, window.first, window.last) for run in bce_runs]
                )
                rec, rec_spread = _mean_and_spread(
                    [run.share(project.name, proc, window.first, window.last) for run in rec_runs]
                )
                rows.append(ShareRow(window, project.name, proc, bce, rec, bce_spread, rec_spread))
    return rows


def format_rows(rows: list[ShareRow]) -> str:
    """The side-by-side table: shares in percent of the resource (with the spread over seeds
    when there are several runs), and rec minus BCE in points."""
    spread = any(r.bce_spread or r.rec_spread for r in rows)
    width = 14 if spread else 7
    header = (
        f"{'window':<22} {'days':>9} {'project':<8} {'resource':<8} {'BCE %':>{width}} {'rec %':>{width}} "
        f"{'diff':>7}"
    )
    lines = [header, "-" * len(header)]

    def pct(mean: float, sd: float) -> str:
        return f"{mean * 100:6.1f} ±{sd * 100:5.1f}" if spread else f"{mean * 100:7.1f}"

    for row in rows:
        w = row.window
        lines.append(
            f"{w.label:<22} {f'{w.first}-{w.last}':>9} {row.project:<8} {row.proc.value:<8} "
            f"{pct(row.bce, row.bce_spread):>{width}} {pct(row.rec, row.rec_spread):>{width}} "
            f"{row.difference * 100:+7.1f}"
        )
    worst = max((abs(r.difference) for r in rows), default=0.0)
    lines.append(f"largest difference: {worst * 100:.1f} points")
    return "\n".join(lines)
