"""Check a custom resource against its CustomResourceDefinition, the way the API server does.

The API server treats a create or update of a rocketq.io object in three steps, and this
module repeats them in pure Python so that tests need no cluster:

1. **Defaulting.** Every ``default`` of the CRD's structural schema is filled in where the
   field is absent, from the root down, so defaults inside a defaulted object apply too.
2. **Schema validation.** The structural OpenAPI v3 schema is JSON Schema with Kubernetes
   extensions; ``jsonschema`` checks types, enums, bounds, patterns and required fields, and an
   ``additionalProperties: false`` added to every closed object reports unknown fields (what
   ``kubectl --validate=strict`` rejects). ``pattern`` keeps Go's meaning of ``$`` (end of
   text), where Python's ``$`` would also accept a trailing newline.
3. **CEL rules.** Each ``x-kubernetes-validations`` rule is evaluated with ``cel-python`` on
   its node (``self``) and, for transition rules, on the previous version (``oldSelf``).
   Transition rules run only when an old object is given and holds that node, as on the server.

Messages read like the API server's (``spec.perm: Unsupported value: 5: supported values:
2, 4, 6``) so that tests can assert on the part that matters.

4. **Defaults, when the CRD is created.** ``default_errors`` checks every ``default`` as the API
   server checks a CRD: against its node's schema and the CEL rules of the node and every node
   below, with ``self`` *and* ``oldSelf`` bound to the default value as written, with no nested
   defaults filled in. A rule reading ``self.mode`` under ``default: {}`` fails there ("no such
   key"), and the whole CRD is refused.

What it does not do: pruning (unknown fields are errors here, never dropped), CEL cost
estimation, Kubernetes' CEL extension libraries (``quantity()``, ``url()``; the rocketq CRDs do
not use them), ``messageExpression``, and ``metadata`` checks beyond a required name.

Public API: ``validate(kind, obj, old=None) -> list[str]`` (empty means accepted),
``default_errors(kind) -> list[str]``, ``apply_defaults(kind, obj) -> dict``,
``load_crd(kind) -> dict``, ``KINDS``.
"""

from __future__ import annotations

import copy
import functools
import pathlib
import re
from collections.abc import Iterator
from typing import Any, Final

import celpy
import jsonschema
import yaml

CRD_DIR: Final = pathlib.Path(__file__).resolve().parents[2] / "crds"
GROUP: Final = "rocketq.io"
VERSION: Final = "v1alpha1"
KINDS: Final = ("RocketMQCluster", "RocketMQTopic", "RocketMQConsumerGroup")

Json = Any  # a decoded YAML/JSON value
_OLD_SELF: Final = re.compile(r"\boldSelf\b")


class UnknownKindError(KeyError):
    """The kind has no CRD file in crds/."""


@functools.cache
def _crds_by_kind() -> dict[str, dict[str, Json]]:
    crds: dict[str, dict[str, Json]] = {}
    for path in sorted(CRD_DIR.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        crds[crd["spec"]["names"]["kind"]] = crd
    return crds


def load_crd(kind: str) -> dict[str, Json]:
    """The CRD document for ``kind`` (a fresh copy; callers may change it)."""
    try:
        return copy.deepcopy(_crds_by_kind()[kind])
    except KeyError:
        raise UnknownKindError(f"no CRD for kind {kind!r} in {CRD_DIR}") from None


def _schema(kind: str) -> dict[str, Json]:
    crd = _crds_by_kind().get(kind)
    if crd is None:
        raise UnknownKindError(f"no CRD for kind {kind!r} in {CRD_DIR}")
    version = next(v for v in crd["spec"]["versions"] if v["name"] == VERSION)
    schema: dict[str, Json] = version["schema"]["openAPIV3Schema"]
    return schema


# ---- 1. defaulting -------------------------------------------------------------------------


def apply_defaults(kind: str, obj: dict[str, Json]) -> dict[str, Json]:
    """A copy of ``obj`` with the CRD's defaults filled in; ``obj`` itself is left unchanged."""
    result = copy.deepcopy(obj)
    _default_node(_schema(kind), result)
    return result


def _default_node(schema: dict[str, Json], value: Json) -> None:
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                _default_node(sub, value[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for item in value.values():
                _default_node(extra, item)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default_node(schema["items"], item)


# ---- 2. structural schema as JSON Schema --------------------------------------------------


@functools.cache
def _json_schema(kind: str) -> dict[str, Json]:
    """The CRD schema with every closed object made strict, so unknown fields are errors."""
    return _close_objects(copy.deepcopy(_schema(kind)), at_root=True)


def _close_objects(node: dict[str, Json], *, at_root: bool = False) -> dict[str, Json]:
    for name, sub in node.get("properties", {}).items():
        # The API server owns metadata's shape; the CRD may only say it is an object.
        if not (at_root and name == "metadata"):
            _close_objects(sub)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            _close_objects(node[key])
    if (
        "properties" in node
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        node["additionalProperties"] = False
    return node


def _path(parts: Iterator[Any] | Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "<root>"


def _shown(value: Json) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return f'"{type(value).__name__ if isinstance(value, list) else "object"}"'
    return str(value)


def _message(error: jsonschema.ValidationError) -> str:
    """One schema error in the API server's wording."""
    where = _path(error.absolute_path)
    kind, rule, value = error.validator, error.validator_value, error.instance
    if kind == "required":
        missing = re.search(r"'([^']+)' is a required property", error.message)
        field = missing.group(1) if missing else "?"
        return f"{_path([*error.absolute_path, field])}: Required value"
    if kind == "additionalProperties":
        unknown = sorted(set(value) - set(error.schema.get("properties", {})))
        return "; ".join(f'unknown field "{_path([*error.absolute_path, name])}"' for name in unknown)
    if kind == "enum":
        allowed = ", ".join(_shown(v) for v in rule)
        return f"{where}: Unsupported value: {_shown(value)}: supported values: {allowed}"
    texts = {
        "type": f"must be of type {rule}",
        "anyOf": "must be an integer or a string",
        "minimum": f"should be greater than or equal to {rule}",
        "maximum": f"should be less than or equal to {rule}",
        "pattern": f"should match '{rule}'",
        "minLength": f"should be at least {rule} chars long",
        "maxLength": f"Too long: may not be more than {rule} bytes",
        "maxItems": f"Too many: must have at most {rule} items",
        "maxProperties": f"Too many: must have at most {rule} properties",
    }
    text = texts.get(str(kind), error.message)
    return f"{where}: Invalid value: {_shown(value)}: {text}"


def _pattern_as_on_the_server(
    validator: jsonschema.protocols.Validator, pattern: str, instance: Json, schema: dict[str, Json]
) -> Iterator[jsonschema.ValidationError]:
    """``pattern`` with Go's regexp meaning of ``$`` (end of text, not before a final newline)."""
    if isinstance(instance, str) and not re.search(_end_of_text(pattern), instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


@functools.cache
def _end_of_text(pattern: str) -> str:
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        return pattern[:-1] + r"\Z"
    return pattern


_Validator = jsonschema.validators.extend(jsonschema.Draft7Validator, {"pattern": _pattern_as_on_the_server})


def _schema_errors(kind: str, obj: dict[str, Json]) -> list[str]:
    validator = _Validator(_json_schema(kind))
    errors = sorted(validator.iter_errors(obj), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    return [_message(error) for error in errors]


# ---- 3. CEL rules -------------------------------------------------------------------------


@functools.cache
def _program(rule: str) -> celpy.Runner:
    environment = celpy.Environment()
    return environment.program(environment.compile(rule))


def _rule_holds(rule: str, value: Json, old: Json) -> bool | str:
    """True/False, or the evaluation error's text when the rule cannot be evaluated."""
    activation = {"self": celpy.json_to_cel(value)}
    if old is not _ABSENT:
        activation["oldSelf"] = celpy.json_to_cel(old)
    try:
        result = _program(rule).evaluate(activation)
    except celpy.CELEvalError as error:
        return f"rule evaluation error: {error}"
    if isinstance(result, celpy.CELEvalError):
        return f"rule evaluation error: {result}"
    return bool(result)


_ABSENT: Final = object()


def _cel_errors(schema: dict[str, Json], value: Json, old: Json, path: list[Any]) -> list[str]:
    errors: list[str] = []
    for entry in schema.get("x-kubernetes-validations", []):
        rule = entry["rule"]
        is_transition = bool(_OLD_SELF.search(rule))
        if is_transition and old is _ABSENT:
            continue
        holds = _rule_holds(rule, value, old if is_transition else _ABSENT)
        if holds is not True:
            reason = entry.get("message", f"failed rule: {rule}") if holds is False else holds
            errors.append(f"{_path(path)}: Invalid value: {_shown(value)}: {reason}")
    errors.extend(_cel_errors_below(schema, value, old, path))
    return errors


def _cel_errors_below(schema: dict[str, Json], value: Json, old: Json, path: list[Any]) -> list[str]:
    errors: list[str] = []
    if isinstance(value, dict):
        children = dict.fromkeys(value, schema.get("additionalProperties"))
        children.update({k: s for k, s in schema.get("properties", {}).items() if k in value})
        for name, sub in children.items():
            if isinstance(sub, dict):
                old_child = old.get(name, _ABSENT) if isinstance(old, dict) else _ABSENT
                errors += _cel_errors(sub, value[name], old_child, [*path, name])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        # Old list items are matched by index; the rocketq CRDs have no rules inside lists.
        for index, item in enumerate(value):
            errors += _cel_errors(schema["items"], item, _ABSENT, [*path, index])
    return errors


# ---- the whole admission ------------------------------------------------------------------


def _identity_errors(kind: str, obj: Json) -> list[str]:
    if not isinstance(obj, dict):
        return [f"<root>: Invalid value: {_shown(obj)}: a {kind} must be an object"]
    errors = []
    if obj.get("apiVersion") != f"{GROUP}/{VERSION}":
        errors.append(f'apiVersion: Invalid value: {_shown(obj.get("apiVersion"))}: must be "{GROUP}/{VERSION}"')
    if obj.get("kind") != kind:
        errors.append(f'kind: Invalid value: {_shown(obj.get("kind"))}: must be "{kind}"')
    name = obj.get("metadata", {}).get("name") if isinstance(obj.get("metadata"), dict) else None
    if not isinstance(name, str) or not name:
        errors.append("metadata.name: Required value")
    return errors


def validate(kind: str, obj: Json, old: Json = None) -> list[str]:
    """Errors the API server would give for creating ``obj`` (or updating ``old`` to it).

    Defaults are applied first, as on the server. CEL rules run only on a schema-valid object,
    because the rules are written for the types the schema promises.
    """
    _schema(kind)  # an unknown kind is the caller's mistake, not an invalid object
    errors = _identity_errors(kind, obj)
    if errors:
        return errors
    defaulted = apply_defaults(kind, obj)
    errors = _schema_errors(kind, defaulted)
    if errors:
        return errors
    previous = apply_defaults(kind, old) if isinstance(old, dict) else _ABSENT
    return _cel_errors(_schema(kind), defaulted, previous, [])


# ---- 4. the CRD's own defaults --------------------------------------------------------------


def _schema_nodes(node: dict[str, Json], path: list[Any]) -> Iterator[tuple[list[Any], dict[str, Json]]]:
    yield path, node
    for name, sub in node.get("properties", {}).items():
        yield from _schema_nodes(sub, [*path, name])
    if isinstance(node.get("items"), dict):
        yield from _schema_nodes(node["items"], [*path, "items"])
    # Defaults are forbidden under additionalProperties, so the server does not look there.


def default_errors(kind: str, schema: dict[str, Json] | None = None) -> list[str]:
    """Errors the API server gives for the CRD itself because of a ``default`` value.

    ``schema`` replaces the kind's openAPIV3Schema from crds/ (tests use it to show what a bad
    default looks like).

    Each default is validated as written (nested defaults are *not* filled in first) against
    its node's schema, then every CEL rule of the node and the nodes below it runs over it,
    transition rules included, with ``oldSelf`` bound to the same default value.
    """
    errors: list[str] = []
    source = _schema(kind) if schema is None else schema
    closed = _json_schema(kind) if schema is None else _close_objects(copy.deepcopy(schema), at_root=True)
    for path, node in _schema_nodes(source, []):
        if "default" not in node:
            continue
        where = f"{_path(path)}.default"
        value = node["default"]
        strict = _node_at(closed, path)
        errors += [f"{where}: {error.message}" for error in _Validator(strict).iter_errors(value)]
        errors += [f"{where}: {error}" for error in _cel_errors(node, value, value, [])]
    return errors


def _node_at(root: dict[str, Json], path: list[Any]) -> dict[str, Json]:
    node = root
    for part in path:
        node = node["items"] if part == "items" and "items" in node else node["properties"][part]
    return node
