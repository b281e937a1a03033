"""bench/peers/installing: finding the peers' servers, installing them, and saying why not.

apt-get itself is never run here: a fake ``apt-get`` on PATH stands in for it, so the tests
check what ``ensure`` does with apt's answers, not Debian's package archive.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest
from peers import installing

MISSING = installing.Binary("rocketq-test-no-such-server", "rocketq-test-no-such-package")


def _script(path: Path, body: str) -> str:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_versions_are_read_from_what_each_server_prints(tmp_path: Path) -> None:
    assert installing.version(_script(tmp_path / "nats", "echo 'nats-server: v2.9.10'")) == "2.9.10"
    redis = "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=1"
    assert installing.version(_script(tmp_path / "redis", f"echo '{redis}'")) == "7.0.15"
    assert installing.version_major(_script(tmp_path / "other", "echo 'no version here'")) is None


def test_a_binary_on_path_is_used_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = _script(tmp_path / MISSING.command, "echo 'v=7.2.4'")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert installing.ensure(installing.Binary(MISSING.command, MISSING.package, min_major=7)) == server


def test_a_server_too_old_is_refused_with_its_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _script(tmp_path / MISSING.command, "echo 'v=6.0.16'")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(installing.InstallError, match=re.escape("version 6.x; the comparison needs 7 or newer")):
        installing.ensure(installing.Binary(MISSING.command, MISSING.package, min_major=7))


def test_without_root_the_message_says_which_command_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(installing.os, "geteuid", lambda: 1000)
    with pytest.raises(installing.InstallError, match=f"sudo apt-get install -y {MISSING.package}"):
        installing.ensure(MISSING)


def test_a_failed_install_updates_once_then_reports_apts_own_words(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls"
    # the update works, the package is not in any list: apt-get install -y -q --no-install-recommends PKG
    _script(tmp_path / "apt-get", f'echo "$1" >> {calls}\n[ "$1" = update ] && exit 0\n'
                                  'echo "E: Unable to locate package $5" >&2\nexit 100')
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(installing.os, "geteuid", lambda: 0)
    with pytest.raises(installing.InstallError) as caught:
        installing.ensure(MISSING)
    assert calls.read_text().split() == ["install", "update", "install"]
    assert "apt-get exit 100" in str(caught.value)
    assert f"Unable to locate package {MISSING.package}" in str(caught.value)


def test_an_install_that_works_gives_the_installed_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the fake apt-get "installs" the server by writing it into a directory on PATH
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _script(tmp_path / "apt-get", f"printf '#!/bin/sh\\necho v2.10.0\\n' > {bindir}/{MISSING.command}\n"
                                  f"chmod +x {bindir}/{MISSING.command}")
    monkeypatch.setenv("PATH", f"{tmp_path}:{bindir}:/usr/bin:/bin")  # the fake first
    monkeypatch.setattr(installing.os, "geteuid", lambda: 0)
    assert installing.ensure(MISSING) == str(bindir / MISSING.command)
