"""The shipped apache.rocketmq.v2 stubs are exactly what `make proto` generates from the shipped protos."""

from __future__ import annotations

from rocketq.proxy import protogen


def test_shipped_stubs_match_a_fresh_generation() -> None:
    fresh = protogen.generate()
    shipped = protogen.shipped()
    assert sorted(shipped) == sorted(fresh), "run `make proto`: the stub files differ"
    stale = [name for name in fresh if fresh[name] != shipped[name]]
    assert not stale, f"run `make proto`: {stale} differ from the protos"


def test_stubs_import_inside_rocketq_not_as_a_top_level_apache_package() -> None:
    from rocketq.proxy.v2 import definition_pb2, service_pb2

    assert service_pb2.SendMessageRequest.DESCRIPTOR.full_name == "apache.rocketmq.v2.SendMessageRequest"
    assert definition_pb2.Code.Value("MESSAGE_NOT_FOUND") == 40401
    for text in protogen.shipped().values():
        assert "from apache." not in text
