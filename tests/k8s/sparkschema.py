"""spark-operator's v1beta2 CRD schemas (tests/fixtures/spark-operator), as strict validators.

Strict: besides types, enums, bounds and required fields, a field the schema does not know is
an error (the API server would silently prune it, and the job would run without it). Used by
the chart/manifest tests here and by the operator's tests for what it renders per cluster.
"""

from __future__ import annotations

import copy
import json
import pathlib
from typing import Any, Final

import jsonschema

FIXTURES: Final = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "spark-operator"
API_VERSION: Final = "sparkoperator.k8s.io/v1beta2"
SPARK_KINDS: Final = ("SparkApplication", "ScheduledSparkApplication")


def _closed(schema: Any) -> Any:
    """Every object schema with known properties refuses unknown ones (kubectl --validate=strict)."""
    if isinstance(schema, dict):
        out = {k: _closed(v) for k, v in schema.items()}
        if ("properties" in out and "additionalProperties" not in out
                and not out.get("x-kubernetes-preserve-unknown-fields")):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_closed(v) for v in schema]
    return schema


def _schemas() -> dict[str, Any]:
    app = json.loads((FIXTURES / "sparkapplication.v1beta2.schema.json").read_text())
    scheduled = json.loads((FIXTURES / "scheduledsparkapplication.v1beta2.schema.json").read_text())
    scheduled["properties"]["spec"]["properties"]["template"] = copy.deepcopy(app["properties"]["spec"])
    return {"SparkApplication": _closed(app), "ScheduledSparkApplication": _closed(scheduled)}


SCHEMAS: Final = _schemas()


def problems(obj: dict[str, Any]) -> list[str]:
    """Every way ``obj`` (a SparkApplication or ScheduledSparkApplication) breaks its schema."""
    assert obj["apiVersion"] == API_VERSION
    validator = jsonschema.Draft7Validator(SCHEMAS[obj["kind"]])
    return sorted(f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj))
