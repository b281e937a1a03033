"""KV config: persisted in RocketMQ's layout, durable before visible, damaged files refused."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from rocketq.namesrv import kvconfig
from rocketq.namesrv.kvconfig import KVConfig, KVConfigError


async def test_put_get_delete_persist_and_reload(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "kvConfig.json"
    kv = KVConfig.load(path)
    assert kv.get("ns", "k") is None and kv.namespace("ns") is None
    await kv.put("ns", "k", "v")
    await kv.put("ORDER_TOPIC_CONFIG", "T", "broker-a:4")
    assert kv.get("ns", "k") == "v"
    assert orjson.loads(path.read_bytes()) == {
        "configTable": {"ORDER_TOPIC_CONFIG": {"T": "broker-a:4"}, "ns": {"k": "v"}}}

    again = KVConfig.load(path)
    assert again.namespace("ORDER_TOPIC_CONFIG") == {"T": "broker-a:4"}
    assert await again.delete("ns", "k") is True
    assert await again.delete("ns", "k") is False
    assert again.namespace("ns") == {}
    assert KVConfig.load(path).snapshot() == {"ORDER_TOPIC_CONFIG": {"T": "broker-a:4"}, "ns": {}}


async def test_concurrent_puts_all_land(tmp_path: Path) -> None:
    kv = KVConfig.load(tmp_path / "kv.json")
    await asyncio.gather(*(kv.put("ns", f"k{i}", str(i)) for i in range(20)))
    assert KVConfig.load(tmp_path / "kv.json").namespace("ns") == {f"k{i}": str(i) for i in range(20)}


async def test_failed_write_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kv = KVConfig.load(tmp_path / "kv.json")
    await kv.put("ns", "k", "old")

    def broken(path: Path, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(kvconfig, "_write_atomically", broken)
    with pytest.raises(KVConfigError, match="No space left"):
        await kv.put("ns", "k", "new")
    assert kv.get("ns", "k") == "old"


def test_java_written_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_text('{\n\t"configTable":{\n\t\t"ORDER_TOPIC_CONFIG":{\n\t\t\t"T":"a:4;b:4"\n\t\t}\n\t}\n}')
    assert KVConfig.load(path).get("ORDER_TOPIC_CONFIG", "T") == "a:4;b:4"


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    ("[]", "expected a JSON object"),
    ('{"configTable": []}', "configTable must be an object"),
    ('{"configTable": {"ns": {"k": 1}}}', "must map keys to strings"),
])
def test_damaged_file_is_an_error_not_an_empty_table(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_text(content)
    with pytest.raises(KVConfigError, match=message):
        KVConfig.load(path)


def test_empty_file_is_an_empty_table(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_text("")
    assert KVConfig.load(path).snapshot() == {}
