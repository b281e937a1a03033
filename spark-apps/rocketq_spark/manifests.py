"""Kubernetes manifests of the two jobs, rendered by pure functions (spark-operator v1beta2).

    python -m rocketq_spark.manifests --namesrv rocketq-namesrv.rocketq.svc:9876 > analytics.yaml
    python -m rocketq_spark.manifests --write-dir spark-apps/manifests     # refresh the checked-in files

renders, for one namespace: the driver's ServiceAccount with the Role and RoleBinding Spark needs
to run executors (pods, services, configmaps, PVCs), a PersistentVolumeClaim for the lag history
and the results, and for each job a ``ScheduledSparkApplication`` (consumer lag every 5 minutes,
traces hourly) plus a one-shot ``SparkApplication`` of the same spec for a run by hand. The
files under ``spark-apps/manifests/`` are this module's output for the defaults (a test keeps
them in sync), and the Helm chart renders the same shapes from its values.

Both driver and executors mount the history volume, since executors write the Parquet files: it
must be ReadWriteMany when executors can land on other nodes; or point ``--history`` and
``--output`` at an object store (``s3a://...``) and drop the volume.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

API_VERSION: Final = "sparkoperator.k8s.io/v1beta2"
SPARK_VERSION: Final = "4.0.4"
IMAGE: Final = "ghcr.io/rocketq/rocketq-spark:0.1.0"
APP_ROOT: Final = "/opt/rocketq/spark-apps/rocketq_spark/jobs"
DATA_MOUNT: Final = "/data"
VOLUME: Final = "rocketq-analytics"
LAG_JOB: Final = "consumer-lag"
TRACE_JOB: Final = "trace-analysis"
POD_RULES: Final = [{
    "apiGroups": [""],
    "resources": ["pods", "services", "configmaps", "persistentvolumeclaims"],
    "verbs": ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"],
}]


@dataclass(frozen=True)
class Resources:
    cores: int = 1
    memory: str = "512m"


@dataclass(frozen=True)
class AnalyticsSpec:
    """What a deployment chooses; every field has a working default."""

    namesrv: str = "rocketq-namesrv.rocketq.svc:9876"
    """The name servers' Service of a RocketMQCluster named rocketq in namespace rocketq."""
    namespace: str = "rocketq"
    name_prefix: str = "rocketq"
    image: str = IMAGE
    service_account: str = "rocketq-spark"
    lag_schedule: str = "*/5 * * * *"
    trace_schedule: str = "0 * * * *"
    history_size: str = "5Gi"
    storage_class: str | None = None
    pushgateway: str | None = None
    cluster: str | None = None
    """The RocketMQCluster the jobs serve (set by the operator): labels the pushed gauges."""
    driver: Resources = field(default_factory=Resources)
    executor: Resources = field(default_factory=Resources)
    executors: int = 1


def _name(spec: AnalyticsSpec, suffix: str) -> str:
    return f"{spec.name_prefix}-{suffix}"


def _meta(spec: AnalyticsSpec, suffix: str) -> dict[str, Any]:
    return {"name": _name(spec, suffix), "namespace": spec.namespace,
            "labels": {"app.kubernetes.io/name": "rocketq-analytics", "app.kubernetes.io/component": suffix}}


def lag_arguments(spec: AnalyticsSpec) -> list[str]:
    args = ["--namesrv", spec.namesrv, "--history", f"{DATA_MOUNT}/lag-history", "--output", f"{DATA_MOUNT}/lag"]
    if not spec.pushgateway:
        return args
    args += ["--pushgateway", spec.pushgateway]
    return [*args, "--cluster", spec.cluster, "--cluster-namespace", spec.namespace] if spec.cluster else args


def trace_arguments(spec: AnalyticsSpec) -> list[str]:
    return ["--namesrv", spec.namesrv, "--output", f"{DATA_MOUNT}/traces", "--start=-1h", "--end=now",
            "--orphan-minutes", "10"]


def application_spec(spec: AnalyticsSpec, job: str, arguments: list[str]) -> dict[str, Any]:
    """A SparkApplicationSpec: the job's Python file in the image, its arguments, pods and volume."""
    def mount() -> list[dict[str, str]]:  # a fresh copy per pod spec: no YAML anchors in the output
        return [{"name": VOLUME, "mountPath": DATA_MOUNT}]

    def labels() -> dict[str, str]:
        return {"app.kubernetes.io/name": "rocketq-analytics", "app.kubernetes.io/component": job}

    return {
        "type": "Python",
        "pythonVersion": "3",
        "mode": "cluster",
        "image": spec.image,
        "imagePullPolicy": "IfNotPresent",
        "mainApplicationFile": f"local://{APP_ROOT}/{job.replace('-', '_')}.py",
        "arguments": arguments,
        "sparkVersion": SPARK_VERSION,
        "restartPolicy": {"type": "Never"},
        "sparkConf": {"spark.sql.session.timeZone": "UTC", "spark.ui.showConsoleProgress": "false"},
        "volumes": [{"name": VOLUME, "persistentVolumeClaim": {"claimName": _name(spec, "analytics")}}],
        "driver": {"cores": spec.driver.cores, "memory": spec.driver.memory, "serviceAccount": spec.service_account,
                   "labels": labels(), "volumeMounts": mount()},
        "executor": {"instances": spec.executors, "cores": spec.executor.cores, "memory": spec.executor.memory,
                     "labels": labels(), "volumeMounts": mount()},
    }


def spark_application(spec: AnalyticsSpec, job: str, arguments: list[str]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "SparkApplication", "metadata": _meta(spec, job),
            "spec": application_spec(spec, job, arguments)}


def scheduled(spec: AnalyticsSpec, job: str, schedule: str, arguments: list[str]) -> dict[str, Any]:
    # concurrencyPolicy must be set: left empty, no run starts once an earlier run exists
    return {"apiVersion": API_VERSION, "kind": "ScheduledSparkApplication", "metadata": _meta(spec, job),
            "spec": {"schedule": schedule, "concurrencyPolicy": "Forbid", "successfulRunHistoryLimit": 3,
                     "failedRunHistoryLimit": 3, "template": application_spec(spec, job, arguments)}}


def scheduled_jobs(spec: AnalyticsSpec) -> dict[str, dict[str, Any]]:
    """Job name -> its ScheduledSparkApplication (what the operator applies per cluster, too)."""
    return {LAG_JOB: scheduled(spec, LAG_JOB, spec.lag_schedule, lag_arguments(spec)),
            TRACE_JOB: scheduled(spec, TRACE_JOB, spec.trace_schedule, trace_arguments(spec))}


def rbac(spec: AnalyticsSpec) -> list[dict[str, Any]]:
    meta = {"name": spec.service_account, "namespace": spec.namespace}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta, "rules": POD_RULES},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta,
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": spec.service_account},
         "subjects": [{"kind": "ServiceAccount", "name": spec.service_account, "namespace": spec.namespace}]},
    ]


def volume_claim(spec: AnalyticsSpec) -> dict[str, Any]:
    claim: dict[str, Any] = {"accessModes": ["ReadWriteMany"],
                             "resources": {"requests": {"storage": spec.history_size}}}
    if spec.storage_class:
        claim["storageClassName"] = spec.storage_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": _meta(spec, "analytics"), "spec": claim}


def render(spec: AnalyticsSpec) -> dict[str, list[dict[str, Any]]]:
    """File name -> objects, the layout of ``spark-apps/manifests/``."""
    jobs = scheduled_jobs(spec)
    return {
        "rbac.yaml": rbac(spec),
        "volume.yaml": [volume_claim(spec)],
        "consumer-lag-scheduled.yaml": [jobs[LAG_JOB]],
        "trace-analysis-scheduled.yaml": [jobs[TRACE_JOB]],
        "consumer-lag-once.yaml": [spark_application(spec, LAG_JOB, lag_arguments(spec))],
        "trace-analysis-once.yaml": [spark_application(spec, TRACE_JOB, trace_arguments(spec))],
    }


GENERATED_HEADER: Final = "# Generated by `python -m rocketq_spark.manifests --write-dir spark-apps/manifests`; edit " \
                          "rocketq_spark/manifests.py, not this file.\n"


def to_yaml(objects: Sequence[dict[str, Any]]) -> str:
    return "---\n".join(yaml.safe_dump(o, sort_keys=False) for o in objects)


def files(spec: AnalyticsSpec) -> dict[str, str]:
    """File name -> text, as checked in under spark-apps/manifests for the default spec."""
    return {name: GENERATED_HEADER + to_yaml(objects) for name, objects in render(spec).items()}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Render the analytics manifests as one YAML stream.")
    p.add_argument("--namesrv", default=AnalyticsSpec.namesrv)
    p.add_argument("--namespace", default=AnalyticsSpec.namespace)
    p.add_argument("--image", default=AnalyticsSpec.image)
    p.add_argument("--pushgateway", default=None)
    p.add_argument("--write-dir", type=Path, default=None, help="write one file per part here instead of stdout")
    args = p.parse_args(argv)
    spec = AnalyticsSpec(namesrv=args.namesrv, namespace=args.namespace, image=args.image,
                         pushgateway=args.pushgateway)
    if args.write_dir is not None:
        for name, text in files(spec).items():
            (args.write_dir / name).write_text(text)
        return 0
    sys.stdout.write(to_yaml([o for objects in render(spec).values() for o in objects]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
