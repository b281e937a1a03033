"""One comparison run: the servers up, the workloads interleaved across systems, repeated.

For each repeat, each workload runs once on every system before the next workload starts, in
an order that rotates (so no system is always first after an idle moment), and each
measurement uses a fresh stream that is deleted afterwards. That interleaving is what makes
the ratios meaningful on a shared machine whose speed drifts: the systems of one row were
measured minutes apart, never an hour apart. The servers' memory is sampled all along and its
peaks are taken once per repeat.

A measurement that fails (an agent error or time-out) is recorded with its error and the
run goes on; the system's agents are restarted so that the next measurement starts clean.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from peers import procstats, servers
from peers.agent import Agent, AgentError
from peers.plans import Workload
from peers.workloads import Measurement


@dataclass
class RunRecord:
    repeat: int
    workload: str
    system: str
    measurement: Measurement | None = None
    error: str = ""


@dataclass
class MemoryRecord:
    repeat: int
    system: str
    durable: bool
    rss_kib: int
    anon_kib: int


@dataclass
class Outcome:
    records: list[RunRecord] = field(default_factory=list)
    memory: list[MemoryRecord] = field(default_factory=list)
    servers: list[dict[str, Any]] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    """``system`` or ``system/durable`` -> why it has no figures."""


ServerStarter = Callable[[Path, bool], servers.Server]
"""Starts one system's server in a directory; ``True``: the durable variant."""


class Comparison:
    """Owns the servers, the agents and the memory sampler of one run; ``close`` stops them all."""

    def __init__(self, starters: dict[str, ServerStarter], workloads: list[Workload], repeats: int,
                 directory: Path, say: Callable[[str], None]) -> None:
        self.systems = list(starters)
        self.workloads, self.repeats, self.directory, self.say = workloads, repeats, directory, say
        self.outcome = Outcome()
        self._servers: dict[tuple[str, bool], servers.Server] = {}
        self._agents: dict[tuple[str, str], Agent] = {}
        self._sampler: procstats.RssSampler | None = None
        try:
            self._start_servers(starters)
        except BaseException:
            self.close()
            raise

    def _start_servers(self, starters: dict[str, ServerStarter]) -> None:
        variants = sorted({w.durable for w in self.workloads})
        for system, start in starters.items():
            for durable in variants:
                where = self.directory / f"{system}-{'durable' if durable else 'default'}"
                where.mkdir(parents=True)
                try:
                    server = start(where, durable)
                except servers.ServerUnavailable as exc:
                    if system == "rocketq":
                        raise  # the system under test must run
                    self.outcome.unavailable[_variant(system, durable)] = str(exc)
                    self.say(f"{_variant(system, durable)}: not measured: {exc}")
                    continue
                self._servers[(system, durable)] = server
                self.say(f"{system} {server.version} ({server.settings}) on {server.address}")
        self._sampler = procstats.RssSampler([s.main_pid for s in self._servers.values()])

    def _agent(self, system: str, role: str) -> Agent:
        agent = self._agents.get((system, role))
        if agent is None:
            agent = self._agents[(system, role)] = Agent(system, role, self.directory / f"agent-{system}-{role}.log")
        return agent

    def _restart_agents(self, system: str) -> None:
        for role in ("producer", "consumer"):
            agent = self._agents.pop((system, role), None)
            if agent is not None:
                agent.close()

    def run(self) -> Outcome:
        for repeat in range(self.repeats):
            for index, workload in enumerate(self.workloads):
                shift = (repeat + index) % len(self.systems)
                for system in self.systems[shift:] + self.systems[:shift]:
                    server = self._servers.get((system, workload.durable))
                    if server is not None:
                        self._measure(repeat, workload, system, server)
            self._take_memory(repeat)
        self.outcome.servers = [self._describe(s) for s in self._servers.values()]
        return self.outcome

    def _measure(self, repeat: int, workload: Workload, system: str, server: servers.Server) -> None:
        stream = f"cmp{repeat}{workload.key.replace('-', '')}"
        base = {"address": server.address, "stream": stream, "pids": server.pids, "timeout": workload.timeout_s}
        record = RunRecord(repeat, workload.key, system)
        try:
            if workload.op == "e2e":
                record.measurement = self._end_to_end(system, workload, base)
            else:
                record.measurement = self._agent(system, "producer").request(
                    {**base, **workload.params, "op": workload.op, "group": f"{stream}_g"})
        except AgentError as exc:
            record.error = str(exc)
            self._restart_agents(system)
        try:
            self._agent(system, "producer").request({**base, "op": "delete"})
        except AgentError as exc:  # a stream left behind costs memory, not correctness
            self.say(f"warning: {system} stream {stream} not deleted: {exc}")
        self.outcome.records.append(record)
        self.say(_progress(self.repeats, record))

    def _end_to_end(self, system: str, workload: Workload, base: dict[str, Any]) -> Measurement:
        """A consumer set up first, then a producer at the offered rate; latency from the consumer."""
        consumer, producer = self._agent(system, "consumer"), self._agent(system, "producer")
        count, rate = workload.params["count"], workload.params["rate"]
        consumer.send({**base, "op": "e2e-consume", "group": f"{base['stream']}_g", "count": count})
        if consumer.next_event(workload.timeout_s)["event"] != "ready":
            raise AgentError(f"{system} consumer: no ready event")
        sent = producer.request({**base, "op": "paced", "count": count, "rate": rate})
        got = consumer.result(workload.timeout_s)
        assert sent is not None and got is not None
        return Measurement(messages=got.messages, seconds=sent.seconds,
                           client_cpu_s=sent.client_cpu_s + got.client_cpu_s, server_cpu_s=got.server_cpu_s,
                           failures=sent.failures + got.failures, latency_ms=got.latency_ms, offered_rate=rate,
                           kept_up=bool(sent.kept_up and got.kept_up))

    def _take_memory(self, repeat: int) -> None:
        assert self._sampler is not None
        peaks = self._sampler.take()
        for (system, durable), server in self._servers.items():
            peak = peaks.get(server.main_pid, procstats.PeakMemory())
            self.outcome.memory.append(MemoryRecord(repeat, system, durable, peak.rss_kib, peak.anon_kib))

    @staticmethod
    def _describe(server: servers.Server) -> dict[str, Any]:
        hwm = procstats.memory_kib(server.main_pid).get("VmHWM")
        return {"system": server.system, "durable": server.durable, "version": server.version,
                "settings": server.settings, "lifetime_peak_rss_kib": hwm}

    def close(self) -> None:
        """Stop agents, sampler and servers (idempotent)."""
        for agent in self._agents.values():
            agent.close()
        self._agents.clear()
        if self._sampler is not None:
            self._sampler.close()
            self._sampler = None
        for server in self._servers.values():
            server.stop()


def _variant(system: str, durable: bool) -> str:
    return f"{system}/durable" if durable else system


def _progress(repeats: int, record: RunRecord) -> str:
    head = f"[{record.repeat + 1}/{repeats}] {record.workload:<19} {record.system:<8}"
    m = record.measurement
    if m is None:
        return f"{head} ERROR {record.error}"
    text = f"{head} {m.rate:>9,.0f} msg/s  client {_per(m.client_cpu_s, m)} server {_per(m.server_cpu_s, m)} us/msg"
    if m.latency_ms:
        text += f"  p50 {m.latency_ms['p50']:.1f} p99 {m.latency_ms['p99']:.1f} max {m.latency_ms['max']:.1f} ms"
    if m.kept_up is not None:
        text += "  kept up" if m.kept_up else "  FELL BEHIND"
    if m.failures:
        text += f"  failures {m.failures}"
    return text


def _per(seconds: float, m: Measurement) -> str:
    return f"{seconds * 1e6 / m.messages:.0f}" if m.messages else "-"
