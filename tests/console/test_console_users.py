"""Users file, sessions and the ``rocketq console`` command's account handling (no cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from consolekit import ADMIN_NAME, ADMIN_PASSWORD, READER_NAME, READER_PASSWORD, users
from hypothesis import given
from hypothesis import strategies as st

from rocketq.cli.main import cli
from rocketq.console.sessions import SessionStore
from rocketq.console.users import (
    RELOAD_CHECK_S,
    Directory,
    Role,
    User,
    UsersFileError,
    load_users,
    parse_users,
    user_line,
)


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


def users_text(accounts: dict[str, User]) -> str:
    return "".join(f"{u.name}:{u.role.value}:{u.password_hash}\n" for u in accounts.values())


def swap_in(path: Path, text: str) -> None:
    """Replace the file as the kubelet updates a mounted Secret: a new file renamed over it."""
    fresh = path.with_suffix(".new")
    fresh.write_text(text)
    fresh.replace(path)


def test_the_directory_follows_its_users_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "users"
    path.write_text(users_text(users()))
    now = [0.0]
    directory = Directory(load_users(path), path, clock=lambda: now[0])
    alice = directory.authenticate(ADMIN_NAME, ADMIN_PASSWORD)
    bob = directory.authenticate(READER_NAME, READER_PASSWORD)
    assert alice is not None and bob is not None
    promoted = User(bob.name, Role.ADMIN, bob.password_hash)
    swap_in(path, users_text({bob.name: promoted}))
    directory.refresh()
    assert directory.current(alice) == alice, "looked at no sooner than RELOAD_CHECK_S"
    now[0] += RELOAD_CHECK_S
    directory.refresh()
    assert directory.current(alice) is None and directory.authenticate(ADMIN_NAME, ADMIN_PASSWORD) is None
    assert directory.current(bob) == promoted
    swap_in(path, users_text({bob.name: User(bob.name, Role.ADMIN, user_line("b", Role.ADMIN, "new-password")
                                             .split(":", 2)[2])}))
    now[0] += RELOAD_CHECK_S
    directory.refresh()
    assert directory.current(bob) is None, "a new password ends the sessions of the old one"
    swap_in(path, "bob:admin:not-a-hash\n")
    now[0] += RELOAD_CHECK_S
    directory.refresh()
    assert len(directory) == 1 and "not usable" in caplog.text, "a broken file leaves the accounts in force"
    path.unlink()
    now[0] += RELOAD_CHECK_S
    directory.refresh()
    assert len(directory) == 1


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
