"""Interleaved before/after runs of single-message sends: CPU per message of broker and client.

    .venv/bin/python bench/run_ab.py --tree before=/tmp/base --tree after=. [--rounds 3]
        [--sync 8000] [--pipelined 30000]
    .venv/bin/python bench/run_ab.py --tree uvloop=. --tree asyncio=.:ROCKETQ_UVLOOP=0

On a shared machine throughput moves by 2-3x between minutes; CPU time per message moves far
less, and interleaving (before, after, before, after, ...) spreads what drift remains over both
sides. Each ``--tree`` is a source tree of rocketq (with its compiled ``rocketq/_native*.so``)
put first on ``PYTHONPATH`` for every process of its runs (started from a neutral working
directory: ``python -m`` would otherwise import the tree it is started in), with the environment variables
given after it (``path:NAME=VALUE:...``); per round and tree it starts a fresh
``rocketq local up`` (ASYNC_FLUSH, one broker) and runs:

* ``sync``: ``rocketq bench producer -m sync -w 1`` (one send at a time);
* ``pipelined``: ``rocketq bench producer -m async -w 1000`` (up to 1 000 sends in flight);
* ``batched``: ``rocketq bench producer -m batch -b 32 -w 8`` (``send_batch`` of 32, 8 in flight);
* ``sync-flush-batched``: the same against a SYNC_FLUSH broker (its own ``local up``).

``--plans`` picks which of them run (default: sync and pipelined).

It prints msg/s, and the broker's and the bench process's CPU (user + system) per message,
the latter net of a one-message run's start-up cost. It measures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from run_matrix import SUMMARY, Cluster, _run, calibrate

PLANS = ("sync", "pipelined", "batched", "sync-flush-batched")
"""What ``--plans`` can name; the last one needs a SYNC_FLUSH broker of its own."""


def _measure(tree: str, plans: list[str], counts: dict[str, int]) -> dict[str, tuple[float, float, float]]:
    path, *settings = tree.split(":")
    saved = dict(os.environ)
    saved_cwd = os.getcwd()
    os.environ["PYTHONPATH"] = str(Path(path).resolve())
    os.environ.update(setting.split("=", 1) for setting in settings)
    # ``python -m rocketq`` puts the working directory first on sys.path, ahead of PYTHONPATH:
    # run from a source tree, every process would import that tree's rocketq, not ``path``'s
    os.chdir(tempfile.gettempdir())
    try:
        out = {}
        for flush in ("ASYNC_FLUSH", "SYNC_FLUSH"):
            chosen = [p for p in plans if (p == "sync-flush-batched") == (flush == "SYNC_FLUSH")]
            if chosen:
                out.update(_measure_here(flush, chosen, counts))
        return out
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved)


def _plan_args(name: str, stamp: int, count: int) -> list[str]:
    topic = f"Ab{name.replace('-', '')}{stamp}"
    if name == "sync":
        return ["producer", "-t", topic, "-m", "sync", "-w", "1", "-c", str(count)]
    if name == "pipelined":
        return ["producer", "-t", topic, "-m", "async", "-w", "1000", "-c", str(count)]
    return ["producer", "-t", topic, "-m", "batch", "-b", "32", "-w", "8", "-c", str(count)]


def _measure_here(flush: str, plans: list[str], counts: dict[str, int]) -> dict[str, tuple[float, float, float]]:
    stamp = int(time.time() * 1000)
    out: dict[str, tuple[float, float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="rocketq-ab-") as tmp, Cluster(Path(tmp), flush) as cluster:
        _o, _w, _b, startup = _run(cluster, ["producer", "-t", f"AbWarm{stamp}", "-m", "sync", "-c", "1"])
        for name in plans:
            text, _wall, broker, client = _run(cluster, _plan_args(name, stamp, counts[name]))
            found = SUMMARY.findall(text)
            sent, rate = (int(found[-1][1]), float(found[-1][3])) if found else (0, 0.0)
            per = 1e6 / sent if sent else 0.0
            out[name] = (rate, broker * per, max(0.0, client - startup) * per)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True,
                        help="label=path[:NAME=VALUE...] of a rocketq source tree")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sync", type=int, default=8000, help="messages of the sync run")
    parser.add_argument("--pipelined", type=int, default=30000, help="messages of the pipelined run")
    parser.add_argument("--batched", type=int, default=100000, help="messages of each batched run")
    parser.add_argument("--plans", default="sync,pipelined", help=f"comma-separated, of {', '.join(PLANS)}")
    args = parser.parse_args()
    plans = [p for p in args.plans.split(",") if p]
    unknown = set(plans) - set(PLANS)
    if unknown:
        parser.error(f"unknown plans: {', '.join(sorted(unknown))}")
    counts = {"sync": args.sync, "pipelined": args.pipelined, "batched": args.batched,
              "sync-flush-batched": args.batched}
    trees = [(label, tree) for label, tree in (t.split("=", 1) for t in args.tree)]
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    print(f"calibration before: {calibrate():.1f} ns per Python call", flush=True)
    for round_no in range(args.rounds):
        for label, tree in trees:
            for name, figures in _measure(tree, plans, counts).items():
                results.setdefault((name, label), []).append(figures)
                print(f"round {round_no + 1} {label:>10} {name:>9}: {figures[0]:8.0f} msg/s  broker "
                      f"{figures[1]:6.1f} us/msg  client {figures[2]:6.1f} us/msg", flush=True)
    print(f"calibration after: {calibrate():.1f} ns per Python call")
    print("\n| workload | tree | msg/s | broker CPU us/msg | client CPU us/msg | median broker / client |")
    print("|---|---|---|---|---|---|")
    for (name, label), rows in results.items():
        cols = [" / ".join(f"{r[i]:.0f}" for r in rows) for i in range(3)]
        medians = f"{statistics.median(r[1] for r in rows):.1f} / {statistics.median(r[2] for r in rows):.1f}"
        print(f"| {name} | {label} | {cols[0]} | {cols[1]} | {cols[2]} | {medians} |")


if __name__ == "__main__":
    main()
