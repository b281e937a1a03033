"""ASYNC_MASTER vs SYNC_MASTER: `rocketq bench producer` against a master with one slave.

For each role it starts, with free ports and a temporary directory, one name server, the master
(Apache's 2m-2s-async or 2m-2s-sync broker-a.properties) and its slave (broker-a-s.properties),
runs the producer modes below and stops everything. Rounds alternate the roles, so a change in
the shared machine's speed hits both alike. Prints one line per run and the medians.

    .venv/bin/python bench/run_ha.py [--rounds 3] [--count 20000]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "tests" / "fixtures" / "rocketmq-conf"
MASTERS = {"ASYNC_MASTER": CONF / "2m-2s-async" / "broker-a.properties",
           "SYNC_MASTER": CONF / "2m-2s-sync" / "broker-a.properties"}
SLAVE = CONF / "2m-2s-async" / "broker-a-s.properties"
MODES = {"sync -w 32": ["-m", "sync", "-w", "32"], "batch -b 32 -w 8": ["-m", "batch", "-b", "32", "-w", "8"]}
READY = " listening on "
SUMMARY = re.compile(r"sent (\d+) in [\d.]+s = ([\d.]+) msg/s, failed (\d+)")


def free_port() -> int:
    sys.path.insert(0, str(ROOT))
    from rocketq.local.ports import free_port as free

    return free()


def start(args: list[str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    out = open(log, "wb")  # noqa: SIM115 - kept open for the process's life
    proc = subprocess.Popen([sys.executable, "-m", "rocketq", *args], stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if READY in line:
                return proc, line.rsplit(READY, 1)[1].strip()
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(log.read_text(errors="replace")[-2000:])


def broker(conf: Path, ns: str, store: Path, log: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    """A broker from ``conf`` (``extra``: more ``key=value`` settings); the process and its address."""
    args = ["broker", "-c", str(conf), "-n", ns, "-p", str(free_port()), "--store-dir", str(store),
            "--metrics-port", "0", "--set", f"storePathCommitLog={store / 'commitlog'}",
            "--set", "brokerIP1=127.0.0.1", "--set", f"haListenPort={free_port()}",
            "--set", "registerNameServerPeriod=1000"]
    for item in extra:
        args += ["--set", item]
    return start(args, log)


def run(role: str, count: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        procs: list[subprocess.Popen[bytes]] = []
        try:
            ns_proc, ns = start(["namesrv", "-p", str(free_port()), "--metrics-port", "0"], base / "ns.log")
            procs.append(ns_proc)
            procs.append(broker(MASTERS[role], ns, base / "m", base / "m.log")[0])
            procs.append(broker(SLAVE, ns, base / "s", base / "s.log")[0])
            time.sleep(2)  # the slave connects to the master's HA port
            results = {}
            for name, args in MODES.items():
                out = subprocess.run([sys.executable, "-m", "rocketq", "bench", "producer", "-n", ns, "-t",
                                      f"Ha{role[:1]}{len(results)}", "-c", str(count), *args],
                                     capture_output=True, text=True, check=True, env=os.environ).stdout
                found = SUMMARY.findall(out)
                if not found or found[-1][2] != "0":
                    raise RuntimeError(f"{role} {name}: no summary or failed sends:\n{out[-2000:]}")
                results[name] = float(found[-1][1])
            return results
        finally:
            stop(procs, base)


def stop(procs: list[subprocess.Popen[bytes]], base: Path) -> None:
    """SIGTERM each process, newest first; one that does not stop is killed and its log shown."""
    for proc in reversed(procs):
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
            logs = "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}"
                             for log in sorted(base.glob("*.log")))
            print(f"process {proc.args} did not stop on SIGTERM; logs:\n{logs}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, default=20000)
    args = parser.parse_args()
    runs: dict[tuple[str, str], list[float]] = {}
    for round_ in range(args.rounds):
        for role in (MASTERS if round_ % 2 == 0 else reversed(MASTERS)):
            for mode, tps in run(role, args.count).items():
                print(f"round {round_ + 1} {role:12} {mode:18} {tps:10.0f} msg/s", flush=True)
                runs.setdefault((role, mode), []).append(tps)
    for (role, mode), values in sorted(runs.items()):
        print(f"median {role:12} {mode:18} {statistics.median(values):10.0f} msg/s "
              f"(range {min(values):.0f}-{max(values):.0f})")


if __name__ == "__main__":
    main()
