"""innerClientAuthenticationCredentials: the account a broker signs its own calls with."""

from __future__ import annotations

import pytest

from rocketq.acl import innerclient, plainacl, signing, validator
from rocketq.acl.settings import AclSettings
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.settings import SettingsError, build

GOOD = '{"accessKey": "brokerInner", "secretKey": "innerSecret1"}'
ACL = plainacl.parse("""
accounts:
- accessKey: brokerInner
  secretKey: innerSecret1
  admin: true
- accessKey: plainUser
  secretKey: plainSecret1
""")


def test_the_setting_names_both_keys_or_nothing() -> None:
    assert innerclient.parse("") is None
    assert innerclient.parse(GOOD) == ("brokerInner", "innerSecret1")
    for bad in ("not json", "[1]", '{"accessKey": "a"}', '{"accessKey": " ", "secretKey": "x1234567"}',
                '{"accessKey": "a", "secretKey": 7}'):
        with pytest.raises(innerclient.CredentialsError) as caught:
            innerclient.parse(bad)
        assert "x1234567" not in str(caught.value)


def test_a_broker_with_a_bad_value_does_not_start_and_the_secret_stays_out_of_logs() -> None:
    with pytest.raises(SettingsError, match="secretKey"):
        build(AclSettings, {innerclient.KEY: '{"accessKey": "a"}'}, environ={})
    settings = build(AclSettings, {}, environ={innerclient.ENV: GOOD})
    assert settings.inner_client_credentials == GOOD
    assert "innerSecret1" not in repr(settings)


def test_the_signer_signs_what_the_master_checks() -> None:
    hook = innerclient.signer(GOOD)
    assert hook is not None and innerclient.signer("") is None
    request = RemotingCommand(code=RequestCode.GET_ALL_TOPIC_CONFIG, ext_fields={"topicSeq": "0"})
    hook(request)
    assert request.ext_fields[signing.ACCESS_KEY] == "brokerInner"
    assert validator.check(ACL, request, "10.0.0.9") is None
    assert validator.check(ACL, RemotingCommand(code=RequestCode.GET_ALL_TOPIC_CONFIG), "10.0.0.9") is not None


def test_start_up_says_why_a_master_would_refuse() -> None:
    assert innerclient.unusable_reason(ACL, GOOD) is None
    assert "not set" in (innerclient.unusable_reason(ACL, "") or "")
    assert "does not hold" in (innerclient.unusable_reason(ACL, '{"accessKey": "x", "secretKey": "y"}') or "")
    assert "differs" in (innerclient.unusable_reason(ACL, '{"accessKey": "brokerInner", "secretKey": "z"}') or "")
    assert "not admin" in (innerclient.unusable_reason(
        ACL, '{"accessKey": "plainUser", "secretKey": "plainSecret1"}') or "")
