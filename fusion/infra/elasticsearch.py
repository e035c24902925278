"""A single Elasticsearch node run from the cached integ-test-zip distribution.

Elasticsearch refuses to run as root. When Fusion runs as root it starts the
node as the unprivileged system user ``fusion-es``, which owns the node's
state directory and needs search (``x``) permission on the directories above
it and above the distribution.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from fusion.errors import InfraError
from fusion.infra.java import java_home
from fusion.infra.process import ManagedProcess

ES_USER = "fusion-es"


@dataclass(frozen=True)
class ElasticsearchPorts:
    http: int
    transport: int


class LocalElasticsearch:
    """One node, security off, data under ``<state_dir>/elasticsearch``."""

    name = "elasticsearch"

    def __init__(self, dist: Path, state_dir: Path, heap: str) -> None:
        self.dist = dist
        self.dir = state_dir / "elasticsearch"
        self.heap = heap
        self.process = ManagedProcess(
            "elasticsearch",
            self.dir / "elasticsearch.pid",
            self.dir / "elasticsearch.log",
            marker="elasticsearch",
        )

    def start(self, ports: ElasticsearchPorts) -> None:
        """Write the node's config and launch it (as ``fusion-es`` when we are root)."""
        config = self.dir / "config"
        for sub in ("data", "logs", "tmp", "config"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        if not (config / "log4j2.properties").exists():
            shutil.copy(self.dist / "config" / "log4j2.properties", config)
        (config / "elasticsearch.yml").write_text(_node_config(ports, self.dir))
        (config / "jvm.options").write_text(_jvm_options(self.heap, self.dir))
        user = None
        if os.geteuid() == 0:
            user = _ensure_user(ES_USER)
            _chown_tree(self.dir, user)
            _grant_search(self.dir, self.dist)
        env = {
            "ES_JAVA_HOME": str(java_home()),
            "ES_PATH_CONF": str(config),
            "ES_TMPDIR": str(self.dir / "tmp"),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.dir),
            "LANG": "C.UTF-8",
        }
        self.process.start([str(self.dist / "bin" / "elasticsearch")], env, cwd=self.dir, user=user)

    def healthy(self, url: str) -> bool:
        """True once cluster health is yellow or green."""
        try:
            health = get_json(f"{url}/_cluster/health?timeout=1s")
        except (OSError, ValueError):
            return False
        return health.get("status") in ("yellow", "green")


def get_json(url: str, timeout: float = 3.0) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        body = json.loads(response.read())
    if not isinstance(body, dict):
        raise ValueError(f"{url} answered {body!r}")
    return body


def _node_config(ports: ElasticsearchPorts, node_dir: Path) -> str:
    return f"""\
cluster.name: fusion
node.name: fusion-local
network.host: 127.0.0.1
http.port: {ports.http}
transport.port: {ports.transport}
discovery.type: single-node
xpack.security.enabled: false
path.data: {node_dir / "data"}
path.logs: {node_dir / "logs"}
# A laptop or CI disk is often fuller than production watermarks allow.
cluster.routing.allocation.disk.threshold_enabled: false
action.destructive_requires_name: false
"""


def _jvm_options(heap: str, node_dir: Path) -> str:
    # The distribution's jvm.options writes GC logs and heap dumps relative to
    # ES_HOME, which the unprivileged user cannot write: point them at our dirs.
    return f"""\
-Xms{heap}
-Xmx{heap}
-XX:+UseG1GC
-Djava.io.tmpdir=${{ES_TMPDIR}}
-XX:+HeapDumpOnOutOfMemoryError
-XX:+ExitOnOutOfMemoryError
-XX:HeapDumpPath={node_dir / "data"}
-XX:ErrorFile={node_dir / "logs"}/hs_err_pid%p.log
-Xlog:gc*:file={node_dir / "logs"}/gc.log:utctime,level,pid,tags:filecount=4,filesize=16m
"""


def _ensure_user(name: str) -> str:
    try:
        pwd.getpwnam(name)
    except KeyError:
        useradd = shutil.which("useradd")
        if useradd is None:
            raise InfraError(
                f"Elasticsearch refuses to run as root and `useradd` is missing to create "
                f"the user {name}; create it yourself or run fusion as a normal user"
            ) from None
        subprocess.run(
            [
                useradd,
                "--system",
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                "/usr/sbin/nologin",
                name,
            ],
            check=True,
            capture_output=True,
        )
    return name


def _chown_tree(root: Path, user: str) -> None:
    account = pwd.getpwnam(user)
    for path in [root, *root.rglob("*")]:
        os.lchown(path, account.pw_uid, account.pw_gid)


def _grant_search(*paths: Path) -> None:
    """Let other users traverse (not list) every directory above ``paths``."""
    for path in paths:
        for parent in path.resolve().parents:
            mode = parent.stat().st_mode
            if not mode & stat.S_IXOTH:
                os.chmod(parent, mode | stat.S_IXOTH)
