"""The request signature, checked against answers computed outside Python.

The expected values were made with ``printf CONTENT | openssl dgst -sha1 -hmac 12345678 -binary
| base64`` where CONTENT follows the documented algorithm by hand: extField values sorted by
key (Java order: upper case first), without ``Signature``, then the body.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.acl import signing
from rocketq.client.errors import ClientStateError
from rocketq.client.settings import ProducerSettings, configure
from rocketq.protocol import headers
from rocketq.protocol.frames import RemotingCommand

# "AccessKey" < "a" < "b": RocketMQ + pg + topicB, then the body "hi"
WORKED = "QD4HHRxVTXL9egfZrWPfLTU5fqI="
# "AccessKey" < "SecurityToken" < "a" < "b": RocketMQ + tokenXYZ + pg + _v, no body
WITH_TOKEN = "vK18qvfqeA3eEux3QMr9cpV1sws="


def test_content_is_the_sorted_values_then_the_body() -> None:
    parts = signing.content_parts({"b": "topicB", "Signature": "x", "a": "pg", "AccessKey": "RocketMQ"}, [b"hi"])
    assert b"".join(parts) == b"RocketMQpgtopicBhi"


def test_signer_matches_the_worked_example() -> None:
    cmd = RemotingCommand(code=310, ext_fields={"b": "topicB", "a": "pg"}, body=b"hi")
    signing.Signer("RocketMQ", "12345678")(cmd)
    assert cmd.ext_fields == {"a": "pg", "b": "topicB", "AccessKey": "RocketMQ", "Signature": WORKED}


def test_security_token_is_sent_and_signed() -> None:
    cmd = RemotingCommand(code=310, ext_fields={"a": "pg", "b": "_v"})
    signing.Signer("RocketMQ", "12345678", "tokenXYZ")(cmd)
    assert cmd.ext_fields["SecurityToken"] == "tokenXYZ"
    assert cmd.ext_fields["Signature"] == WITH_TOKEN


def test_signing_twice_gives_the_same_signature_and_leaves_the_callers_dict_alone() -> None:
    shared = {"a": "pg", "b": "topicB"}
    cmd = RemotingCommand(code=310, ext_fields=shared, body=b"hi")
    sign = signing.Signer("RocketMQ", "12345678")
    sign(cmd)
    sign(cmd)  # a retried request is signed again: Signature is not part of the content
    assert cmd.ext_fields["Signature"] == WORKED
    assert shared == {"a": "pg", "b": "topicB"}


def test_body_parts_sign_like_the_joined_body() -> None:
    joined = RemotingCommand(code=11, ext_fields={"x": "1"}, body=b"abcdef")
    split = RemotingCommand(code=11, ext_fields={"x": "1"}, body_parts=[b"abc", memoryview(b"def")])
    for cmd in (joined, split):
        signing.Signer("RocketMQ", "12345678")(cmd)
    assert joined.ext_fields["Signature"] == split.ext_fields["Signature"]


def test_no_access_key_means_no_hook_and_the_secret_is_not_shown() -> None:
    assert signing.signer("", "") is None
    hook = signing.signer("RocketMQ", "12345678")
    assert hook is not None and "12345678" not in repr(hook)


@given(st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=8), max_size=6), st.binary(max_size=32))
def test_content_order_ignores_insertion_order(fields: dict[str, str], body: bytes) -> None:
    reversed_fields = dict(reversed(list(fields.items())))
    assert b"".join(signing.content_parts(fields, [body])) == b"".join(signing.content_parts(reversed_fields, [body]))


def test_java_order_puts_upper_case_and_underscore_before_lower_case() -> None:
    parts = signing.content_parts({"b": "4", "_U": "2", "Z": "1", "a": "3"}, [])
    assert parts[0] == b"1234"


def test_client_settings_take_credentials_together_and_hide_the_secret() -> None:
    settings = configure(ProducerSettings, {"namesrv_addr": "127.0.0.1:9876", "access_key": "RocketMQ",
                                            "secret_key": "12345678"})
    assert "RocketMQ" in repr(settings) and "12345678" not in repr(settings)
    with pytest.raises(ClientStateError, match="access_key and secret_key go together"):
        configure(ProducerSettings, {"namesrv_addr": "127.0.0.1:9876", "access_key": "RocketMQ"})


def test_a_signed_send_v2_header_reads_as_the_unsigned_one() -> None:
    ext = {"a": "pg", "b": "topicB", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "5", "h": "0", "i": "K\x01v\x02"}
    cmd = RemotingCommand(code=310, ext_fields=dict(ext))
    signing.Signer("RocketMQ", "12345678", "token12")(cmd)
    assert headers.send_header_from_v2(cmd.ext_fields) == headers.send_header_from_v2(ext)
