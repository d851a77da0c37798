"""Live mode: emulated BOINC hosts that talk to a real Cobblestone scheduler over HTTP.

Each host runs one of the emulator's client policies against the server: it sends
7.20.5-shaped scheduler requests (``apps.protocol.render_request``), reads the replies
(``parse_reply``), keeps its host id, RPC sequence number and code-signing key, runs the
jobs it gets in simulated time, uploads their outputs (``file_upload_handler``), reports
them with their elapsed times, and checks that every reported result is acknowledged.
It never imports the scheduler: everything goes over HTTP.

    config = LiveConfig(master_url="http://127.0.0.1:8000/demo/",
                        hardware=tuple(varied_hardware(20)), authenticators=keys)
    summary = run_live(config)
    print(format_summary(summary)); assert summary.ok
"""

from __future__ import annotations

from apps.emulator.live.host import LiveHost
from apps.emulator.live.rpc import HostHardware, varied_hardware
from apps.emulator.live.run import LIVE_PREFS, LiveConfig, LiveSummary, format_summary, run_live
from apps.emulator.live.wire import HttpSession, LiveError, UploadGate, account_key

__all__ = [
    "LIVE_PREFS",
    "HostHardware",
    "HttpSession",
    "LiveConfig",
    "LiveError",
    "LiveHost",
    "LiveSummary",
    "UploadGate",
    "account_key",
    "format_summary",
    "run_live",
    "varied_hardware",
]
