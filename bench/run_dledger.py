"""A 3-member DLedger group vs a single master: `rocketq bench producer` against each.

For each setup it starts, with free ports and a temporary directory, one name server and either
Apache's ``2m-noslave/broker-a.properties`` (ASYNC_MASTER, ASYNC_FLUSH) or the three members of
Apache's ``dledger/broker-n*.conf`` (ASYNC_FLUSH; a send is answered once a majority holds it),
waits until a broker takes writes as the group's master, runs run_ha.py's producer modes and
stops everything. Rounds alternate the setups, so a change in the shared machine's speed hits
both alike.

Besides msg/s (which the machine's other work moves a lot) it reports the servers' CPU time
per message: user + system time of the broker processes (all three members for the group)
over the run, from /proc, divided by the messages sent (and each broker's share: the busiest
member of a group is its leader).

    .venv/bin/python bench/run_dledger.py [--rounds 3] [--count 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from run_ha import CONF, MODES, ROOT, SUMMARY, broker, free_port, start, stop

SINGLE = CONF / "2m-noslave" / "broker-a.properties"
MEMBERS = [CONF / "dledger" / f"broker-n{i}.conf" for i in range(3)]
SETUPS = ("single master", "DLedger group")
LEADER_WAIT_S = 60.0
"""How long a group may take to elect and register its master."""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (/proc/PID/stat, fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


async def has_master(addresses: list[str]) -> bool:
    sys.path.insert(0, str(ROOT))
    from rocketq.admin.client import AdminClient

    async with AdminClient("127.0.0.1:1") as admin:
        for addr in addresses:
            if (await admin.runtime_info(addr)).get("brokerRole") in ("SYNC_MASTER", "ASYNC_MASTER"):
                return True
    return False


def start_setup(setup: str, ns: str, base: Path) -> list[tuple[subprocess.Popen[bytes], str]]:
    if setup == "single master":
        return [broker(SINGLE, ns, base / "m", base / "m.log")]
    peers = ";".join(f"n{i}-127.0.0.1:{free_port()}" for i in range(len(MEMBERS)))
    return [broker(conf, ns, base / conf.stem, base / f"{conf.stem}.log", f"dLegerPeers={peers}")
            for conf in MEMBERS]


def run(setup: str, count: int) -> dict[str, tuple[float, list[float]]]:
    """mode -> (msg/s, each broker's CPU microseconds per message, highest first)."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        procs: list[tuple[subprocess.Popen[bytes], str]] = []
        try:
            procs.append(start(["namesrv", "-p", str(free_port()), "--metrics-port", "0"], base / "ns.log"))
            ns = procs[0][1]
            brokers = start_setup(setup, ns, base)
            procs += brokers
            deadline = time.monotonic() + LEADER_WAIT_S
            while not asyncio.run(has_master([addr for _, addr in brokers])):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{setup}: no master within {LEADER_WAIT_S} s")
                time.sleep(0.2)
            results = {}
            for name, args in MODES.items():
                before = [cpu_seconds(p.pid) for p, _ in brokers]
                out = subprocess.run([sys.executable, "-m", "rocketq", "bench", "producer", "-n", ns, "-t",
                                      f"Dl{setup[:1]}{len(results)}", "-c", str(count), *args],
                                     capture_output=True, text=True, check=True, env=os.environ).stdout
                cpu = [cpu_seconds(p.pid) - was for (p, _), was in zip(brokers, before, strict=True)]
                found = SUMMARY.findall(out)
                if not found or found[-1][2] != "0":
                    raise RuntimeError(f"{setup} {name}: no summary or failed sends:\n{out[-2000:]}")
                results[name] = (float(found[-1][1]), sorted((c / count * 1e6 for c in cpu), reverse=True))
            return results
        finally:
            stop([p for p, _ in procs], base)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, default=20000)
    args = parser.parse_args()
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for round_ in range(args.rounds):
        for setup in (SETUPS if round_ % 2 == 0 else reversed(SETUPS)):
            for mode, (tps, cpu_us) in run(setup, args.count).items():
                print(f"round {round_ + 1} {setup:14} {mode:18} {tps:10.0f} msg/s {sum(cpu_us):8.0f} us CPU/msg "
                      f"(by broker: {' + '.join(f'{c:.0f}' for c in cpu_us)})", flush=True)
                runs.setdefault((setup, mode), []).append((tps, sum(cpu_us)))
    for (setup, mode), values in sorted(runs.items()):
        tps = [v[0] for v in values]
        cpu = [v[1] for v in values]
        print(f"median {setup:14} {mode:18} {statistics.median(tps):10.0f} msg/s (range {min(tps):.0f}-{max(tps):.0f})"
              f" {statistics.median(cpu):8.0f} us CPU/msg (range {min(cpu):.0f}-{max(cpu):.0f})")


if __name__ == "__main__":
    main()
