"""The broker's decision, request by request, against a table parsed from YAML."""

from __future__ import annotations

import orjson
import pytest

from rocketq.acl import plainacl, signing, validator
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import RemotingCommand

CONFIG = plainacl.parse("""
globalWhiteRemoteAddresses: [10.9.*]
accounts:
- accessKey: userAK1
  secretKey: userSK1
  defaultTopicPerm: DENY
  defaultGroupPerm: SUB
  topicPerms: [topicA=DENY, topicB=PUB|SUB, topicC=SUB]
  groupPerms: [groupA=DENY]
- accessKey: trustedAK
  secretKey: trustedSK
  whiteRemoteAddress: 192.168.1.*
- accessKey: adminAK1
  secretKey: adminSK1
  admin: true
- accessKey: adminAK2
  secretKey: adminSK2
  admin: true
  topicPerms: [topicA=SUB]
""")
IP = "127.0.0.1"


def signed(code: int, ext: dict[str, str], body: bytes = b"", ak: str = "userAK1", sk: str = "userSK1"
           ) -> RemotingCommand:
    cmd = RemotingCommand(code=code, ext_fields=dict(ext), body=body)
    signing.Signer(ak, sk)(cmd)
    return cmd


def send_v2(topic: str, group: str = "pg") -> dict[str, str]:
    return {"a": group, "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0"}


def test_unsigned_unknown_and_wrongly_signed_requests_are_refused() -> None:
    plain = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields=send_v2("topicB"))
    assert validator.check(CONFIG, plain, IP) == "No accessKey is configured"
    stranger = signed(RequestCode.SEND_MESSAGE_V2, send_v2("topicB"), ak="nobody12", sk="whatever")
    assert validator.check(CONFIG, stranger, IP) == "No acl config for nobody12"
    wrong = signed(RequestCode.SEND_MESSAGE_V2, send_v2("topicB"), sk="guessed")
    assert validator.check(CONFIG, wrong, IP) == "Check signature failed for accessKey=userAK1"


def test_a_changed_body_breaks_the_signature() -> None:
    cmd = signed(RequestCode.SEND_MESSAGE_V2, send_v2("topicB"), b"body")
    cmd.body = b"evil"
    assert validator.check(CONFIG, cmd, IP) == "Check signature failed for accessKey=userAK1"


def test_white_addresses_skip_what_they_should() -> None:
    unsigned = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields=send_v2("topicA"))
    assert validator.check(CONFIG, unsigned, "10.9.1.1") is None  # global: no key, no perms
    trusted = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields={**send_v2("topicB"),
                                                                           "AccessKey": "trustedAK"})
    assert validator.check(CONFIG, trusted, "192.168.1.4") is None
    assert validator.check(CONFIG, trusted, "192.168.2.4") == "Check signature failed for accessKey=trustedAK"


@pytest.mark.parametrize(("code", "ext", "body", "refusal"), [
    (RequestCode.SEND_MESSAGE_V2, send_v2("topicB"), b"", None),
    (RequestCode.SEND_MESSAGE_V2, send_v2("topicA"), b"", "No default permission for topic:topicA"),
    (RequestCode.SEND_MESSAGE_V2, send_v2("topicC"), b"", "No default permission for topic:topicC"),
    (RequestCode.SEND_MESSAGE_V2, send_v2("other"), b"", "No default permission for topic:other"),
    (RequestCode.SEND_BATCH_MESSAGE, send_v2("topicA"), b"", "No default permission for topic:topicA"),
    (RequestCode.SEND_MESSAGE, {"producerGroup": "pg", "topic": "topicA"}, b"",
     "No default permission for topic:topicA"),
    (RequestCode.SEND_MESSAGE_V2, send_v2("%RETRY%groupA", "groupA"), b"", "No default permission for group:groupA"),
    (RequestCode.PULL_MESSAGE, {"consumerGroup": "g1", "topic": "topicC"}, b"", None),
    (RequestCode.PULL_MESSAGE, {"consumerGroup": "groupA", "topic": "topicC"}, b"",
     "No default permission for group:groupA"),
    (RequestCode.PULL_MESSAGE, {"consumerGroup": "g1", "topic": "topicA"}, b"",
     "No default permission for topic:topicA"),
    (RequestCode.QUERY_MESSAGE, {"topic": "topicA", "key": "k"}, b"", "No default permission for topic:topicA"),
    (RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "g1", "topic": "topicC"}, b"", None),
    (RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "groupA", "topic": "topicC"}, b"",
     "No default permission for group:groupA"),
    (RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "groupA", "offset": "0"}, b"",
     "No default permission for group:groupA"),
    (RequestCode.UNREGISTER_CLIENT, {"clientID": "c", "consumerGroup": "groupA"}, b"",
     "No default permission for group:groupA"),
    (RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "groupA"}, b"",
     "No default permission for group:groupA"),
    (RequestCode.HEART_BEAT, {}, orjson.dumps({"clientID": "c", "consumerDataSet": [
        {"groupName": "g1", "subscriptionDataSet": [{"topic": "topicA", "subString": "*"}]}]}),
     "No default permission for topic:topicA"),
    (RequestCode.HEART_BEAT, {}, orjson.dumps({"clientID": "c", "consumerDataSet": [
        {"groupName": "g1", "subscriptionDataSet": [{"topic": "topicC", "subString": "*"}]}]}), None),
    (RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "groupA", "topic": "topicA", "queueId": "0"}, b"", None),
    (RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "topicB"}, b"",
     "Need admin permission for request code=17, but accessKey=userAK1 is not"),
    (RequestCode.NOTIFY_BROKER_ROLE_CHANGED, {"brokerRole": "ASYNC_MASTER", "brokerId": "0"}, b"",
     "Need admin permission for request code=1008, but accessKey=userAK1 is not"),
    (RequestCode.SEND_MESSAGE_V2, send_v2("RMQ_SYS_TRACE_TOPIC"), b"", None),
    (RequestCode.POP_MESSAGE, {"consumerGroup": "g1", "topic": "topicC"}, b"", None),
    (RequestCode.POP_MESSAGE, {"consumerGroup": "g1", "topic": "topicA"}, b"",
     "No default permission for topic:topicA"),
    (RequestCode.ACK_MESSAGE, {"consumerGroup": "groupA", "topic": "topicC"}, b"",
     "No default permission for group:groupA"),
    (RequestCode.CHANGE_MESSAGE_INVISIBLETIME, {"consumerGroup": "g1", "topic": "topicA"}, b"",
     "No default permission for topic:topicA"),
    (RequestCode.BATCH_ACK_MESSAGE, {}, orjson.dumps({"brokerName": "b", "acks": [
        {"c": "g1", "t": "topicC", "r": "0", "so": 0, "q": 0, "rq": 0, "pt": 1, "it": 1, "b": "AQ=="},
        {"c": "g1", "t": "topicA", "r": "0", "so": 0, "q": 0, "rq": 0, "pt": 1, "it": 1, "b": "AQ=="}]}),
     "No default permission for topic:topicA"),
    (RequestCode.QUERY_ASSIGNMENT, {}, orjson.dumps({"topic": "topicC", "consumerGroup": "groupA", "clientId": "c"}),
     "No default permission for group:groupA"),
    (RequestCode.QUERY_ASSIGNMENT, {}, orjson.dumps({"topic": "topicC", "consumerGroup": "g1", "clientId": "c"}),
     None),
])
def test_permissions_by_request_code(code: int, ext: dict[str, str], body: bytes, refusal: str | None) -> None:
    assert validator.check(CONFIG, signed(code, ext, body), IP) == refusal


def test_an_admin_without_resources_may_do_anything_one_with_resources_is_checked() -> None:
    create = {"topic": "topicZ"}
    assert validator.check(CONFIG, signed(RequestCode.UPDATE_AND_CREATE_TOPIC, create, ak="adminAK1", sk="adminSK1"),
                           IP) is None
    assert validator.check(CONFIG, signed(RequestCode.SEND_MESSAGE_V2, send_v2("topicA"), ak="adminAK1",
                                          sk="adminSK1"), IP) is None
    assert validator.check(CONFIG, signed(RequestCode.SEND_MESSAGE_V2, send_v2("topicA"), ak="adminAK2",
                                          sk="adminSK2"), IP) == "No default permission for topic:topicA"


def test_query_by_unique_key_verifies_signed_either_way() -> None:
    ext = {"topic": "topicC", "key": "K", "maxNum": "32", "beginTimestamp": "0", "endTimestamp": "1",
           "_UNIQUE_KEY_QUERY": "true"}
    java_client = signed(RequestCode.QUERY_MESSAGE, ext)  # signs every field
    assert validator.check(CONFIG, java_client, IP) is None
    broker_way = RemotingCommand(code=RequestCode.QUERY_MESSAGE,
                                 ext_fields={k: v for k, v in ext.items() if k != "_UNIQUE_KEY_QUERY"})
    signing.Signer("userAK1", "userSK1")(broker_way)
    broker_way.ext_fields["_UNIQUE_KEY_QUERY"] = "true"
    assert validator.check(CONFIG, broker_way, IP) is None
