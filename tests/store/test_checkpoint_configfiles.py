"""Checkpoint file and atomic JSON metadata files."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from rocketq.store import checkpoint, configfiles
from rocketq.store.checkpoint import CheckpointValues


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint"
    assert checkpoint.read(path) == CheckpointValues()
    values = CheckpointValues(1, 2, 3)
    checkpoint.write(path, values)
    assert os.path.getsize(path) == checkpoint.FILE_SIZE
    assert path.read_bytes()[:24] == (1).to_bytes(8, "big") + (2).to_bytes(8, "big") + (3).to_bytes(8, "big")
    assert checkpoint.read(path) == values
    assert values.min_timestamp(with_index=True) == 1
    assert CheckpointValues(5, 9, 2).min_timestamp(with_index=False) == 5
    path.write_bytes(b"short")
    assert checkpoint.read(path) == CheckpointValues()


def test_json_atomic_and_backup(tmp_path: Path) -> None:
    path = tmp_path / "config" / "topics.json"
    assert configfiles.read_json(path) is None
    configfiles.write_json_atomic(path, {"topicConfigTable": {"T": {"perm": 6}}, "n": 1})
    assert configfiles.read_json(path) == {"topicConfigTable": {"T": {"perm": 6}}, "n": 1}
    configfiles.write_json_atomic(path, {"n": 2})
    assert configfiles.read_json(path.with_name("topics.json.bak")) == {"topicConfigTable": {"T": {"perm": 6}},
                                                                         "n": 1}
    assert not path.with_name("topics.json.tmp").exists()
    path.write_text("{ torn")
    assert configfiles.read_json(path) == {"topicConfigTable": {"T": {"perm": 6}}, "n": 1}
    path.unlink()
    assert configfiles.read_json(path) == {"topicConfigTable": {"T": {"perm": 6}}, "n": 1}
    path.with_name("topics.json.bak").write_text("")
    with pytest.raises(configfiles.ConfigFileError, match="empty"):
        configfiles.read_json(path)


def test_json_int_keys(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    configfiles.write_json_atomic(path, {"offsetTable": {"T@g": {0: 5, 1: 7}}})
    assert configfiles.read_json(path) == {"offsetTable": {"T@g": {"0": 5, "1": 7}}}


def test_json_write_on_a_full_disk_leaves_the_old_file_and_no_temp(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "topics.json"
    configfiles.write_json_atomic(path, {"n": 1})

    def no_space(fd: int, data: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(configfiles.os, "write", no_space)
    with pytest.raises(OSError, match="No space"):
        configfiles.write_json_atomic(path, {"n": 2})
    assert configfiles.read_json(path) == {"n": 1}
    assert not path.with_name("topics.json.tmp").exists()  # its blocks are given back
