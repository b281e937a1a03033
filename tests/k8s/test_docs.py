"""docs/kubernetes.md stays true to the files it points at."""

from __future__ import annotations

import pathlib
import re

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "kubernetes.md").read_text()
VALUES = yaml.safe_load((REPO / "charts" / "rocketq" / "values.yaml").read_text())


def test_linked_files_exist() -> None:
    links = re.findall(r"\]\(([^)#]+)\)", DOC)
    assert links
    for link in links:
        assert (REPO / "docs" / link).exists() or link == "operator.md", link


def test_paths_in_commands_exist() -> None:
    for path in set(re.findall(r"\b((?:docs|charts|crds|broker-image|namesrv-image|operator)/[\w./-]+)", DOC)):
        assert (REPO / path.rstrip(".")).exists(), path


def test_every_example_file_is_described() -> None:
    for example in (REPO / "docs" / "examples").glob("*.yaml"):
        assert example.name in DOC, example.name


def test_values_named_in_the_doc_exist_with_the_documented_defaults() -> None:
    for dotted in set(re.findall(r"`((?:operator|metrics|image|rbac|serviceAccount|exampleCluster)\.[\w.]+)`", DOC)):
        node = VALUES
        for key in dotted.split("."):
            assert isinstance(node, dict) and key in node, dotted
            node = node[key]
    assert VALUES["metrics"]["prometheusRule"]["diskUsedRatio"] == 0.85 and "(0.85)" in DOC
    assert VALUES["metrics"]["prometheusRule"]["consumerLagThreshold"] == 10000 and "(10000)" in DOC
