"""The console pod as the operator renders it (``spec.console``), run as a real process here.

The operator's pure rendering gives the Deployment's container (command, env, probes, mounts)
and the users Secret's volume. This test writes the Secret's key as the volume would mount it,
runs the container's exact command with the pod's environment against a real local cluster (a
name server and a broker), and asks what the kubelet and a browser ask: the readiness probe's
path, the login page, and, logged in with an account of the mounted users file, the cluster
page naming the broker. The only substitutions are what a pod has and this machine has
differently: the name servers' address (127.0.0.1 instead of the cluster's Service), the
mount directory (a temp dir) and the listen address (127.0.0.1 and a free port instead of
0.0.0.0:8080, since pods have a network namespace each).
"""

from __future__ import annotations

import dataclasses
import http.cookiejar
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rocketq_operator.rendering import console as console_rendering
from rocketq_operator.spec import Cluster, ConsoleSpec

from e2e.renderedpods import example_cluster, wait_ready
from rocketq.console.users import Role, user_line
from rocketq.local.cluster import ClusterLayout, ClusterState, LocalCluster
from rocketq.local.ports import free_port

ADMIN, PASSWORD = "ops", "ops-password-1"
TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
HTTP_TIMEOUT = 30.0


def _cluster() -> Cluster:
    """The trial example with the console switched on, as docs/console.md shows it."""
    trial = example_cluster("trial-cluster.yaml")
    console = ConsoleSpec(enabled=True, users_secret="trial-console-users")
    return Cluster(trial.meta, dataclasses.replace(trial.spec, console=console))


@pytest.fixture(scope="module")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterState]:
    local = LocalCluster(ClusterLayout.with_free_ports(tmp_path_factory.mktemp("console-pod"), broker_groups=1))
    state = local.up()
    try:
        yield state
    finally:
        local.down()


def _mount_secret(deployment: dict[str, Any], mount: Path) -> None:
    """The users Secret's key written as its volume's item path, as the kubelet mounts it."""
    (volume,) = [v for v in deployment["spec"]["template"]["spec"]["volumes"] if "secret" in v]
    (item,) = volume["secret"]["items"]
    secret = {item["key"]: user_line(ADMIN, Role.ADMIN, PASSWORD) + "\n"}
    mount.mkdir(parents=True)
    (mount / item["path"]).write_text(secret[item["key"]])


def _pod_env(container: dict[str, Any], mount_dir: str, mount: Path, namesrv: str, port: int) -> dict[str, str]:
    rendered = {e["name"]: e["value"] for e in container["env"]}
    here = {
        console_rendering.ENV_NAMESRV: namesrv,
        console_rendering.ENV_USERS: rendered[console_rendering.ENV_USERS].replace(mount_dir, str(mount)),
        console_rendering.ENV_HOST: "127.0.0.1",
        console_rendering.ENV_PORT: str(port),
    }
    assert set(here) <= set(rendered), "only variables the pod has are substituted"
    return {**os.environ, **rendered, **here}


@pytest.fixture(scope="module")
def console_url(local_cluster: ClusterState, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    deployment = console_rendering.render_deployment(_cluster())
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    (users_mount,) = [m for m in container["volumeMounts"] if m["name"] == "users"]
    workdir = tmp_path_factory.mktemp("console-pod-run")
    mount = workdir / "users-volume"
    _mount_secret(deployment, mount)
    port = free_port()
    env = _pod_env(container, users_mount["mountPath"], mount, local_cluster.namesrv, port)
    command = container["command"]
    assert command[0] == "rocketq"
    log = workdir / "console.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "rocketq", *command[1:]], env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        address = wait_ready(proc, log)
        assert address == f"http://127.0.0.1:{port}"
        yield address
    finally:
        proc.terminate()
        proc.wait(20)


def test_the_readiness_probe_path_answers_without_a_login(console_url: str) -> None:
    container = console_rendering.container(_cluster())
    probe = container["readinessProbe"]["httpGet"]
    with urllib.request.urlopen(console_url + probe["path"], timeout=HTTP_TIMEOUT) as response:
        assert response.status == 200
        assert response.read() == b"ok\n"


def test_the_login_page_is_served_and_the_mounted_users_file_logs_in(console_url: str,
                                                                     local_cluster: ClusterState) -> None:
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with browser.open(console_url + "/login", timeout=HTTP_TIMEOUT) as response:
        page = response.read().decode()
    assert response.status == 200 and 'name="password"' in page
    found = TOKEN.search(page)
    assert found is not None
    form = urllib.parse.urlencode({"username": ADMIN, "password": PASSWORD, "csrf_token": found.group(1),
                                   "next": "/cluster"}).encode()
    with browser.open(console_url + "/login", data=form, timeout=HTTP_TIMEOUT) as response:
        cluster_page = response.read().decode()
    assert response.geturl().endswith("/cluster"), "logged in and sent on to the cluster page"
    assert local_cluster.namesrv in cluster_page
    assert "broker-a" in cluster_page, "the broker registered with that name server is shown"
