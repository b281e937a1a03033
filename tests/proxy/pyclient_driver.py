"""Drives the official RocketMQ 5 Python client (rocketmq-python-client) from JSON lines on stdin.

Run as its own process by ``tests/proxy/pyclient.py``: the client's generated protobuf modules
register ``apache.rocketmq.v2`` in the process-wide descriptor pool under other file names than
rocketq's stubs, so the two cannot be imported into one interpreter. One command per line, one
JSON answer per line (``{"error": ...}`` when the client raised):

- ``{"op": "producer", "topics": [...], "transactions": "commit"|"rollback"|null}``
- ``{"op": "send", "topic", "body", "tag"?, "keys"?, "group"?, "delivery_s"?, "props"?}`` → ``{"id"}``
- ``{"op": "tx_send", "topic", "body", "resolution": "commit"|"rollback"|"none"}`` → ``{"id"}``
- ``{"op": "consumer", "group", "topic", "await_s"}``
- ``{"op": "receive", "n", "invisible_s"}`` → ``{"messages": [...]}`` (body, id, attempt, tag, group, ...)
- ``{"op": "push", "group", "topic", "fail_first"?, "hold_s"?}``, ``{"op": "pushed"}`` →
  ``{"messages": [[body, attempt]]}`` (``hold_s``: the listener sleeps that long before it answers)
- ``{"op": "client_ids"}`` → ``{"producer", "consumer", "pusher"}``: the client ids the proxy sees
- ``{"op": "ack", "id"}``, ``{"op": "change", "id", "invisible_s"}``
- ``{"op": "close"}``

The fifth argument ``answer-stacks`` makes the client answer ``print_thread_stack_trace_command``
and ``verify_message_command`` as RocketMQ's Java client does (5.1.2 reads and ignores both):
``thread_stack_trace`` with the command's nonce, this process's thread stacks and status OK;
``verify_message_result`` with the nonce and status OK (the Java client's push consumer runs its
listener first; this one only checks the message came with a body).
"""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
from typing import Any

import grpc
from rocketmq import (
    ClientConfiguration,
    ConsumeResult,
    Credentials,
    FilterExpression,
    Message,
    MessageListener,
    Producer,
    PushConsumer,
    SimpleConsumer,
    TransactionChecker,
    TransactionResolution,
)


def thread_stacks() -> str:
    frames = sys._current_frames()
    return "\n".join(f"Thread {t.name}:\n{''.join(traceback.format_stack(frames[t.ident]))}"
                     for t in threading.enumerate() if t.ident in frames)


class AnsweringCall:
    """A Telemetry call whose reads answer server commands before the client sees (and drops) them."""

    def __init__(self, call: Any) -> None:
        self._call = call

    async def read(self) -> Any:
        from rocketmq.grpc_protocol import Code, Status, TelemetryCommand
        from rocketmq.grpc_protocol.service_pb2 import ThreadStackTrace, VerifyMessageResult

        res = await self._call.read()
        if res is not grpc.aio.EOF and res.HasField("print_thread_stack_trace_command"):
            await self._call.write(TelemetryCommand(
                status=Status(code=Code.OK, message="OK"),
                thread_stack_trace=ThreadStackTrace(nonce=res.print_thread_stack_trace_command.nonce,
                                                    thread_stack_trace=thread_stacks())))
        if res is not grpc.aio.EOF and res.HasField("verify_message_command"):
            command = res.verify_message_command
            await self._call.write(TelemetryCommand(
                status=Status(code=Code.OK if command.message.body else Code.MESSAGE_CORRUPTED, message="OK"),
                verify_message_result=VerifyMessageResult(nonce=command.nonce)))
        return res

    def __getattr__(self, name: str) -> Any:
        return getattr(self._call, name)


def answer_thread_stack_commands() -> None:
    from rocketmq.v5.client.connection import rpc_channel

    original = rpc_channel.RpcStreamStreamCall.__init__

    def wrapped(self: Any, endpoints: Any, call: Any, handler: Any) -> None:
        original(self, endpoints, AnsweringCall(call), handler)

    rpc_channel.RpcStreamStreamCall.__init__ = wrapped  # type: ignore[method-assign]


class Checker(TransactionChecker):
    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.checked: list[str] = []

    def check(self, message: Any) -> Any:
        self.checked.append(message.message_id)
        return TransactionResolution.COMMIT if self.answer == "commit" else TransactionResolution.ROLLBACK


class Collector(MessageListener):
    """A push consumer's listener: fails each message's first delivery when told to, then keeps it."""

    def __init__(self, fail_first: bool, hold_s: float = 0.0) -> None:
        self.fail_first = fail_first
        self.hold_s = hold_s
        self.bodies: list[tuple[str, int]] = []
        self.started: list[tuple[str, int]] = []

    def consume(self, message: Any) -> Any:
        self.started.append((message.body.decode(), message.delivery_attempt))
        if self.fail_first and message.delivery_attempt == 1:
            return ConsumeResult.FAILURE
        time.sleep(self.hold_s)
        self.bodies.append((message.body.decode(), message.delivery_attempt))
        return ConsumeResult.SUCCESS


class Driver:
    def __init__(self, endpoint: str, access_key: str = "", secret_key: str = "", transport: str = "plaintext") -> None:
        self.config = ClientConfiguration(endpoint, Credentials(access_key, secret_key), request_timeout=10)
        self.tls = transport == "tls"
        self.producer: Producer | None = None
        self.checker: Checker | None = None
        self.consumer: SimpleConsumer | None = None
        self.received: dict[str, Any] = {}
        self.pusher: PushConsumer | None = None
        self.collector: Collector | None = None

    def op_producer(self, cmd: dict[str, Any]) -> dict[str, Any]:
        self.checker = Checker(cmd["transactions"]) if cmd.get("transactions") else None
        self.producer = Producer(self.config, tuple(cmd["topics"]), self.checker, tls_enable=self.tls)
        self.producer.startup()
        return {}

    def _message(self, cmd: dict[str, Any]) -> Message:
        msg = Message()
        msg.topic = cmd["topic"]
        msg.body = cmd["body"].encode()
        if cmd.get("tag"):
            msg.tag = cmd["tag"]
        if cmd.get("keys"):
            msg.keys = cmd["keys"]
        if cmd.get("group"):
            msg.message_group = cmd["group"]
        if cmd.get("delivery_s"):
            msg.delivery_timestamp = cmd["delivery_s"]
        for key, value in (cmd.get("props") or {}).items():
            msg.add_property(key, value)
        return msg

    def op_send(self, cmd: dict[str, Any]) -> dict[str, Any]:
        assert self.producer is not None
        receipt = self.producer.send(self._message(cmd))
        return {"id": receipt.message_id}

    def op_tx_send(self, cmd: dict[str, Any]) -> dict[str, Any]:
        assert self.producer is not None
        tx = self.producer.begin_transaction()
        receipt = self.producer.send(self._message(cmd), tx)
        if cmd["resolution"] == "commit":
            tx.commit()
        elif cmd["resolution"] == "rollback":
            tx.rollback()
        return {"id": receipt.message_id}

    def op_checked(self, _cmd: dict[str, Any]) -> dict[str, Any]:
        return {"checked": list(self.checker.checked) if self.checker else []}

    def op_consumer(self, cmd: dict[str, Any]) -> dict[str, Any]:
        self.consumer = SimpleConsumer(self.config, cmd["group"], {cmd["topic"]: FilterExpression(cmd.get("tag", "*"))},
                                       await_duration=cmd.get("await_s", 5), tls_enable=self.tls)
        self.consumer.startup()
        return {}

    def op_push(self, cmd: dict[str, Any]) -> dict[str, Any]:
        self.collector = Collector(bool(cmd.get("fail_first")), float(cmd.get("hold_s", 0)))
        self.pusher = PushConsumer(self.config, cmd["group"], self.collector, {cmd["topic"]: FilterExpression("*")})
        self.pusher.startup()
        return {}

    def op_pushed(self, _cmd: dict[str, Any]) -> dict[str, Any]:
        """What listeners finished with (``messages``) and every delivery they started (``started``)."""
        return {"messages": list(self.collector.bodies) if self.collector else [],
                "started": list(self.collector.started) if self.collector else []}

    def op_client_ids(self, _cmd: dict[str, Any]) -> dict[str, Any]:
        return {name: client.client_id if client is not None else None
                for name, client in (("producer", self.producer), ("consumer", self.consumer),
                                     ("pusher", self.pusher))}

    def op_receive(self, cmd: dict[str, Any]) -> dict[str, Any]:
        assert self.consumer is not None
        out = []
        for m in self.consumer.receive(cmd["n"], cmd["invisible_s"]) or []:
            self.received[m.message_id] = m
            out.append({"id": m.message_id, "body": m.body.decode(), "attempt": m.delivery_attempt, "tag": m.tag,
                        "group": m.message_group, "props": dict(m.properties or {}), "keys": sorted(m.keys or []),
                        "corrupted": m.corrupted})
        return {"messages": out}

    def op_ack(self, cmd: dict[str, Any]) -> dict[str, Any]:
        assert self.consumer is not None
        self.consumer.ack(self.received[cmd["id"]])
        return {}

    def op_change(self, cmd: dict[str, Any]) -> dict[str, Any]:
        assert self.consumer is not None
        self.consumer.change_invisible_duration(self.received[cmd["id"]], cmd["invisible_s"])
        return {}

    def op_close(self, _cmd: dict[str, Any]) -> dict[str, Any]:
        for client in (self.producer, self.consumer, self.pusher):
            if client is not None:
                client.shutdown()
        return {}


def main() -> None:
    if sys.argv[5:6] == ["answer-stacks"]:
        answer_thread_stack_commands()
    driver = Driver(*sys.argv[1:5])  # endpoint, access key, secret key, "tls" | "plaintext"
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            answer = getattr(driver, f"op_{cmd['op']}")(cmd)
        except Exception as exc:
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), flush=True)
        if cmd["op"] == "close":
            return


if __name__ == "__main__":
    main()
