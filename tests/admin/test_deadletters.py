"""dlqResend's copy of a dead letter, and the command's argument rules (no server needed)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from rocketq.admin import deadletters
from rocketq.cli import admin as admin_cli
from rocketq.protocol import messagetypes


def dead_letter(**props: str) -> messagetypes.MessageExt:
    record = messagetypes.MessageExt.__new__(messagetypes.MessageExt)
    record.topic, record.body, record.flag = "%DLQ%cg", b"b", 4
    record.offset_msg_id = "7F00000100002A9F0000000000000042"
    record.properties = {"UNIQ_KEY": "U1", "TAGS": "t", "KEYS": "k", "DELAY": "0", "REAL_TOPIC": "%RETRY%cg",
                         "REAL_QID": "0", "WAIT": "false", "CLUSTER": "c", **props}
    return record


def test_the_copy_goes_to_the_retry_topic_with_the_message_s_own_properties() -> None:
    copy = deadletters.retry_copy(dead_letter(RETRY_TOPIC="Orders", ORIGIN_MESSAGE_ID="O1"), "cg")
    assert (copy.topic, copy.body, copy.flag) == ("%RETRY%cg", b"b", 4)
    assert copy.properties == {"UNIQ_KEY": "U1", "TAGS": "t", "KEYS": "k", "RETRY_TOPIC": "Orders",
                               "ORIGIN_MESSAGE_ID": "O1"}


def test_a_copy_without_history_names_the_dlq_and_the_dead_letter() -> None:
    copy = deadletters.retry_copy(dead_letter(), "cg")
    assert copy.properties["RETRY_TOPIC"] == "%DLQ%cg"
    assert copy.properties["ORIGIN_MESSAGE_ID"] == "7F00000100002A9F0000000000000042"


@pytest.mark.parametrize("args", [[], ["-i", "X", "--all"], ["-i", " , "]])
def test_resend_wants_either_ids_or_all(args: list[str]) -> None:
    result = CliRunner().invoke(admin_cli.command, ["dlqResend", "-n", "127.0.0.1:1", "-g", "cg", *args])
    assert result.exit_code == 2 and "either message ids" in result.output
