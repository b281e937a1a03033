"""Shared bodies: DataVersion, TopicConfig, SubscriptionGroupConfig and the fastjson-lenient field readers."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import namerules, sharedbodies
from rocketq.protocol.sharedbodies import BodyError, DataVersion, SubscriptionGroupConfig, TopicConfig

JAVA_TOPIC = {"order": False, "perm": 6, "readQueueNums": 4, "topicFilterType": "SINGLE_TAG",
              "topicName": "TopicTest", "topicSysFlag": 0, "writeQueueNums": 4}


class Refused(ValueError):
    """A caller's own error type, to see that validate raises what it is given."""


# --- readers ----------------------------------------------------------------------------------


def test_readers_return_typed_values_and_defaults() -> None:
    raw = {"s": "x", "i": -5, "u": 7, "l": 1 << 40, "f": 1.5, "b": True, "n": None}
    assert sharedbodies.text(raw, "s", "w") == "x"
    assert sharedbodies.text(raw, "absent", "w", "d") == "d"
    assert sharedbodies.integer(raw, "i", "w") == -5
    assert sharedbodies.non_negative_int32(raw, "u", "w") == 7
    assert sharedbodies.int64(raw, "l", "w") == 1 << 40
    assert sharedbodies.number(raw, "f", "w") == 1.5 and sharedbodies.number(raw, "i", "w") == -5.0
    assert sharedbodies.flag(raw, "b", "w") is True
    assert sharedbodies.flag(raw, "absent", "w", False) is False
    assert sharedbodies.strings(["a", "b"], "w") == ("a", "b")


@pytest.mark.parametrize("call, message", [
    (lambda: sharedbodies.obj([], "top"), "top must be a JSON object, not list"),
    (lambda: sharedbodies.text({}, "k", "top"), "top.k is missing"),
    (lambda: sharedbodies.text({"k": None}, "k", "top"), r"top.k is missing"),
    (lambda: sharedbodies.text({"k": 1.5}, "k", "top", "d"), "top.k=1.5: expected a string"),
    (lambda: sharedbodies.integer({"k": True}, "k", "top"), "top.k=True: expected an integer"),
    (lambda: sharedbodies.integer({"k": "4x"}, "k", "top"), "top.k='4x': expected an integer"),
    (lambda: sharedbodies.integer({"k": " 4"}, "k", "top"), "top.k=' 4': expected an integer"),
    (lambda: sharedbodies.integer({"k": "4.5"}, "k", "top"), "top.k='4.5': expected an integer"),
    (lambda: sharedbodies.integer({"k": "9" * 100}, "k", "top"), "expected an integer"),
    (lambda: sharedbodies.non_negative_int32({"k": "2147483648"}, "k", "top"), "non-negative 32-bit"),
    (lambda: sharedbodies.int64({"k": "9223372036854775808"}, "k", "top"), "64-bit"),
    (lambda: sharedbodies.enum({"k": 2}, "k", "top", ("A", "B"), "A"), "one of A, B or its ordinal"),
    (lambda: sharedbodies.enum({"k": "-1"}, "k", "top", ("A", "B"), "A"), "one of A, B or its ordinal"),
    (lambda: sharedbodies.enum({"k": "no such"}, "k", "top", ("A", "B"), "A"), "one of A, B or its ordinal"),
    (lambda: sharedbodies.enum({"k": True}, "k", "top", ("A", "B"), "A"), "one of A, B or its ordinal"),
    (lambda: sharedbodies.non_negative_int32({"k": -1}, "k", "top"), "non-negative 32-bit"),
    (lambda: sharedbodies.non_negative_int32({"k": 1 << 31}, "k", "top"), "non-negative 32-bit"),
    (lambda: sharedbodies.int64({"k": 1 << 63}, "k", "top"), "64-bit"),
    (lambda: sharedbodies.number({"k": "one"}, "k", "top"), "a number"),
    (lambda: sharedbodies.flag({"k": "yes"}, "k", "top"), "true or false"),
    (lambda: sharedbodies.flag({"k": 1.0}, "k", "top"), "true or false"),
    (lambda: sharedbodies.flag({"k": ""}, "k", "top"), "true or false"),
    (lambda: sharedbodies.strings(["a", 1], "top"), "top must be a list of strings"),
    (lambda: sharedbodies.strings("ab", "top"), "top must be a list of strings"),
    (lambda: sharedbodies.load_json(b"{", "thing"), "thing is not valid JSON"),
])
def test_readers_name_the_place_and_the_problem(call: object, message: str) -> None:
    with pytest.raises(BodyError, match=message):
        call()  # type: ignore[operator]


# --- each encoding fastjson reads gives the value the Java form gives ----------------------------


def _number_spellings(n: int) -> st.SearchStrategy[object]:
    """``n`` as Java writes it (a JSON number), and the forms other clients send."""
    return st.sampled_from([n, str(n), f"+{n}" if n >= 0 else str(n), float(n), f"{n}.0", f"{n}.00"])


@given(st.data(), st.integers(0, sharedbodies.INT32_MAX), st.integers(sharedbodies.INT64_MIN, sharedbodies.INT64_MAX))
def test_numbers_as_strings_or_integral_floats_read_as_the_number(data: st.DataObject, small: int, big: int) -> None:
    raw = {"s": data.draw(_number_spellings(small)), "b": data.draw(_number_spellings(big))}
    if isinstance(raw["b"], float) and int(raw["b"]) != big:
        return  # a float cannot carry every long exactly; no client writes a long as a float
    assert sharedbodies.non_negative_int32(raw, "s", "w") == small and sharedbodies.integer(raw, "s", "w") == small
    assert sharedbodies.int64(raw, "b", "w") == big


@given(st.sampled_from([(True, True), (False, False), ("true", True), ("TRUE", True), ("False", False),
                        ("1", True), ("0", False), (1, True), (0, False), (2, False), ("Y", True), ("n", False),
                        ("t", True), ("F", False)]))
def test_booleans_in_every_form_fastjson_reads(case: tuple[object, bool]) -> None:
    raw, expected = case
    assert sharedbodies.flag({"k": raw}, "k", "w") is expected


@pytest.mark.parametrize("raw", [None, "", "null", "NULL"])
def test_null_and_empty_text_are_the_default(raw: object) -> None:
    given_ = {"k": raw}
    assert sharedbodies.integer(given_, "k", "w", 7) == 7 and sharedbodies.flag(given_, "k", "w", True) is True
    assert sharedbodies.enum(given_, "k", "w", ("A", "B"), "B") == "B"
    assert sharedbodies.number(given_, "k", "w", 1.5) == 1.5


@given(st.data(), st.sampled_from([("A", "B", "C"), ("CONSUME_FROM_LAST_OFFSET", "X_Y")]))
def test_enums_by_name_in_any_case_or_by_ordinal(data: st.DataObject, constants: tuple[str, ...]) -> None:
    ordinal = data.draw(st.integers(0, len(constants) - 1))
    name = constants[ordinal]
    form = data.draw(st.sampled_from([name, name.lower(), ordinal, str(ordinal)]))
    assert sharedbodies.enum({"k": form}, "k", "w", constants, constants[0]) == name


def test_an_enum_name_the_table_does_not_know_is_kept() -> None:
    assert sharedbodies.enum({"k": "CONSUME_POP"}, "k", "w", ("A",), "A") == "CONSUME_POP"


@given(st.one_of(st.text(max_size=8), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
                 st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
                 st.booleans(), st.none()))
def test_any_json_value_is_a_typed_value_or_a_body_error(value: object) -> None:
    readers = [
        lambda r: sharedbodies.text(r, "k", "w"), lambda r: sharedbodies.integer(r, "k", "w"),
        lambda r: sharedbodies.non_negative_int32(r, "k", "w"), lambda r: sharedbodies.int64(r, "k", "w"),
        lambda r: sharedbodies.permission(r, "k", "w"), lambda r: sharedbodies.number(r, "k", "w"),
        lambda r: sharedbodies.flag(r, "k", "w"), lambda r: sharedbodies.enum(r, "k", "w", ("A", "B"), "A"),
    ]
    for read in readers:
        try:
            read({"k": value})
        except BodyError as exc:
            assert "w" in str(exc)


def test_a_huge_refused_value_is_not_copied_into_the_message() -> None:
    with pytest.raises(BodyError) as info:
        sharedbodies.text({"k": ["x" * 10_000]}, "k", "top")
    assert len(str(info.value)) < 200


# --- DataVersion ------------------------------------------------------------------------------


def test_data_version_json_both_ways() -> None:
    version = DataVersion(1700000000000, 3, 1)
    assert version.to_json() == {"stateVersion": 1, "timestamp": 1700000000000, "counter": 3}
    assert DataVersion.from_json(version.to_json()) == version
    assert DataVersion.from_json({}) == DataVersion()
    assert DataVersion.from_json({"timestamp": 5, "counter": {"value": 9}}) == DataVersion(5, 9)


def test_data_version_stamps_take_the_time_from_the_caller() -> None:
    first = DataVersion.new(100)
    assert first == DataVersion(100, 0)
    assert first.next(250) == DataVersion(250, 1)
    assert DataVersion(1, 4, 2).next(7) == DataVersion(7, 5, 2)


@pytest.mark.parametrize("raw, message", [
    ([], "dataVersion must be a JSON object"),
    ({"counter": "x"}, "counter"),
    ({"timestamp": 1.5}, "timestamp"),
    ({"counter": {"value": "one"}}, r"dataVersion.counter.value"),
    ({"stateVersion": True}, "stateVersion"),
])
def test_bad_data_versions_are_body_errors(raw: object, message: str) -> None:
    with pytest.raises(BodyError, match=message):
        DataVersion.from_json(raw)


# --- TopicConfig ------------------------------------------------------------------------------


def test_topic_config_reads_what_java_writes_and_writes_it_back() -> None:
    config = TopicConfig.from_json(JAVA_TOPIC)
    assert config == TopicConfig("TopicTest", 4, 4, 6)
    assert config.to_json() == JAVA_TOPIC
    assert config.queue_count == 4


def test_missing_topic_fields_take_java_defaults_and_a_table_key_names_the_topic() -> None:
    assert TopicConfig.from_json({}, name="T") == TopicConfig("T", 16, 16, 6, "SINGLE_TAG", 0, False)
    with pytest.raises(BodyError, match="topicName is missing"):
        TopicConfig.from_json({})


@pytest.mark.parametrize("change, message", [
    ({"readQueueNums": -1}, "readQueueNums"),
    ({"writeQueueNums": True}, "writeQueueNums"),
    ({"perm": "rw"}, "perm"),
    ({"perm": 8}, "perm 8"),
    ({"topicFilterType": "X"}, "topicFilterType"),
    ({"topicSysFlag": 4.5}, "topicSysFlag"),
    ({"order": "maybe"}, "order"),
    ({"topicName": [5]}, "topicName"),
])
def test_bad_topic_configs_are_body_errors(change: dict[str, object], message: str) -> None:
    with pytest.raises(BodyError, match=message):
        TopicConfig.from_json({**JAVA_TOPIC, **change}, "topicConfigTable['T']")


def test_topic_config_validation_raises_the_callers_error() -> None:
    assert TopicConfig("%RETRY%g", 0, 0).validate() == TopicConfig("%RETRY%g", 0, 0)
    bad = [TopicConfig("bad topic"), TopicConfig("T", 4, 2000), TopicConfig("T", perm=9), TopicConfig("T", -1),
           TopicConfig("T", topic_filter_type="X"), TopicConfig("T", topic_sys_flag=-1)]
    for config in bad:
        with pytest.raises(Refused):
            config.validate(Refused)
    with pytest.raises(namerules.RuleError, match=r"readQueueNums 0 outside \[1, 1024\]"):
        TopicConfig("T", 0, 4).validate(min_queue_nums=1)


@given(st.dictionaries(
    st.sampled_from(["topicName", "readQueueNums", "writeQueueNums", "perm", "topicFilterType", "topicSysFlag",
                     "order", "other"]),
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=6)
    | st.sampled_from(["SINGLE_TAG", "MULTI_TAG"]),
))
def test_any_topic_config_shape_parses_into_java_ranges_or_raises_body_error(raw: dict[str, object]) -> None:
    try:
        config = TopicConfig.from_json(json.loads(json.dumps(raw)), name="T")
    except BodyError:
        return
    assert 0 <= config.perm <= namerules.PERM_MASK
    assert 0 <= config.read_queue_nums <= sharedbodies.INT32_MAX
    assert 0 <= config.write_queue_nums <= sharedbodies.INT32_MAX
    assert config.topic_filter_type in sharedbodies.TOPIC_FILTER_TYPES
    assert TopicConfig.from_json(config.to_json()) == config


@given(st.builds(TopicConfig, st.sampled_from(["T", "%RETRY%g", "bad topic", ""]), st.integers(-2, 1100),
                 st.integers(-2, 1100), st.integers(-1, 9), st.sampled_from(["SINGLE_TAG", "MULTI_TAG", "X"]),
                 st.integers(-1, 2**32), st.booleans()))
def test_a_topic_config_that_validates_reads_back_from_its_json(config: TopicConfig) -> None:
    try:
        config.validate()
    except namerules.RuleError:
        return
    assert TopicConfig.from_json(json.loads(json.dumps(config.to_json()))) == config


# --- SubscriptionGroupConfig ------------------------------------------------------------------


def test_group_config_round_trip_and_defaults() -> None:
    config = SubscriptionGroupConfig("g", consume_broadcast_enable=False, retry_max_times=3, broker_id=1)
    assert SubscriptionGroupConfig.from_json(config.to_json()) == config
    assert SubscriptionGroupConfig.from_json({"groupName": "g"}) == SubscriptionGroupConfig("g")
    assert SubscriptionGroupConfig("g").to_json() == {
        "groupName": "g", "consumeEnable": True, "consumeFromMinEnable": True, "consumeBroadcastEnable": True,
        "retryQueueNums": 1, "retryMaxTimes": 16, "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1,
        "notifyConsumerIdsChangedEnable": True, "consumeMessageOrderly": False}


@pytest.mark.parametrize("raw, message", [
    ([], "must be a JSON object"),
    ({}, "groupName is missing"),
    ({"groupName": {}}, "groupName"),
    ({"groupName": "g", "consumeEnable": "yes"}, "consumeEnable"),
    ({"groupName": "g", "retryMaxTimes": 1.5}, "retryMaxTimes"),
    ({"groupName": "g", "brokerId": False}, "brokerId"),
])
def test_bad_group_configs_are_body_errors(raw: object, message: str) -> None:
    with pytest.raises(BodyError, match=message):
        SubscriptionGroupConfig.from_json(raw)


def test_group_config_validation_raises_the_callers_error() -> None:
    assert SubscriptionGroupConfig("g", retry_max_times=-1).validate().retry_max_times == -1
    bad = [SubscriptionGroupConfig(""), SubscriptionGroupConfig("g", retry_queue_nums=65),
           SubscriptionGroupConfig("g", retry_max_times=-2), SubscriptionGroupConfig("g", broker_id=-1),
           SubscriptionGroupConfig("g!")]
    for config in bad:
        with pytest.raises(Refused):
            config.validate(Refused)
