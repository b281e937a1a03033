"""Users file, sessions and the ``rocketq console`` command's account handling (no cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from consolekit import ADMIN_NAME, ADMIN_PASSWORD, users
from hypothesis import given
from hypothesis import strategies as st

from rocketq.cli.main import cli
from rocketq.console.sessions import SessionStore
from rocketq.console.users import Directory, Role, UsersFileError, load_users, parse_users, user_line


@given(st.text(max_size=400))
def test_parsing_any_text_gives_users_or_a_users_file_error(text: str) -> None:
    try:
        parsed = parse_users(text)
    except UsersFileError as exc:
        assert "line" in str(exc)
    else:
        assert all(u.password_hash.startswith("$argon2") for u in parsed.values())


@pytest.mark.parametrize(("line", "words"), [
    ("alice:admin", "name:role:hash"),
    ("alice:root:$argon2id$x", "not admin or read-only"),
    ("al ice:admin:$argon2id$x", "bad user name"),
    ("alice:admin:plaintext", "argon2 hash"),
    ("alice:admin:$argon2id$x\nalice:read-only:$argon2id$y", "appears twice"),
])
def test_malformed_lines_are_named(line: str, words: str) -> None:
    with pytest.raises(UsersFileError, match=words):
        parse_users(f"# accounts\n\n{line}")


def test_authenticate() -> None:
    directory = Directory(users())
    user = directory.authenticate(ADMIN_NAME, ADMIN_PASSWORD)
    assert user is not None and user.role is Role.ADMIN and user.may_change
    assert directory.authenticate(ADMIN_NAME, "wrong-password") is None
    assert directory.authenticate("nobody", ADMIN_PASSWORD) is None
    with pytest.raises(ValueError, match="at least"):
        user_line("carol", Role.ADMIN, "short")


def test_sessions_expire_and_are_bounded() -> None:
    now = [0.0]
    store = SessionStore(idle_timeout=10, max_sessions=2, clock=lambda: now[0])
    first, second = store.new(), store.new()
    store.new()  # the oldest goes
    assert store.get(first.sid) is None and store.get(second.sid) is second
    now[0] = 11
    assert store.get(second.sid) is None
    assert store.get(None) is None and store.get("made-up") is None


def test_add_user_appends_a_hashed_line(tmp_path: Path) -> None:
    path = tmp_path / "users"
    result = CliRunner().invoke(cli, ["console", "--users", str(path), "--add-user", "carol:read-only"],
                                input="carol-password\ncarol-password\n")
    assert result.exit_code == 0, result.output
    assert "carol-password" not in path.read_text()
    carol = load_users(path)["carol"]
    assert carol.role is Role.READ_ONLY
    assert Directory({"carol": carol}).authenticate("carol", "carol-password") == carol
    again = CliRunner().invoke(cli, ["console", "--users", str(path), "--add-user", "carol:admin"],
                               input="carol-password\ncarol-password\n")
    assert again.exit_code == 2 and "already has a user" in again.output


def test_console_needs_name_servers_and_a_readable_users_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["console"], env={"NAMESRV_ADDR": ""})
    assert result.exit_code == 2 and "name servers" in result.output
    result = CliRunner().invoke(cli, ["console", "-n", "127.0.0.1:9876", "--users", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "cannot read" in result.output
