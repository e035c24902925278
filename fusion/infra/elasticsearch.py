"""A single Elasticsearch node run from the cached integ-test-zip distribution.

Elasticsearch refuses to run as root. When Fusion runs as root it starts the
node as the unprivileged system user ``fusion-es``, which owns the node's
state directory and needs search (``x``) permission on the directories above
it and above the distribution.
"""

from __future__ import annotations

import base64
import json
import os
import pwd
import shutil
import subprocess
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fusion.infra.accounts import run_as
from fusion.infra.errors import InfraError
from fusion.infra.java import java_home
from fusion.infra.process import ManagedProcess
from fusion.infra.secure import ES_USER as FUSION_USER
from fusion.infra.secure import SecureMaterial

ES_USER = "fusion-es"


@dataclass(frozen=True)
class ElasticsearchPorts:
    http: int
    transport: int


class LocalElasticsearch:
    """One node, security off, data under ``<state_dir>/elasticsearch``."""

    name = "elasticsearch"

    def __init__(
        self,
        dist: Path,
        state_dir: Path,
        heap: str,
        java: Path | None = None,
        secure: SecureMaterial | None = None,
        node_settings: Mapping[str, str] | None = None,
        jvm_options: Sequence[str] = (),
    ) -> None:
        self.dist = dist
        self.jvm_options = tuple(jvm_options)
        # More of elasticsearch.yml (a test's node with a tiny write queue, say).
        self.node_settings = dict(node_settings or {})
        self.java = java
        # Security on: TLS on HTTP and Fusion's user with a password. No API key: creating
        # one writes the security index, whose mapping needs the analysis-common module
        # ("Unknown filter type [pattern_capture]"), which the integ-test-zip leaves out.
        self.secure = secure
        self.dir = state_dir / "elasticsearch"
        self.heap = heap
        self.process = ManagedProcess(
            "elasticsearch",
            self.dir / "elasticsearch.pid",
            self.dir / "elasticsearch.log",
            marker="elasticsearch",
        )

    def start(
        self, ports: ElasticsearchPorts, on_change: Callable[[str], None] = lambda _: None
    ) -> None:
        """Write the node's config and launch it (as ``fusion-es`` when we are root).

        ``on_change`` hears what this did to the machine beyond Fusion's own
        directories (a system user made, a directory's permissions widened),
        once: the next start finds both done and says nothing.
        """
        config = self.dir / "config"
        for sub in ("data", "logs", "tmp", "config"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        if not (config / "log4j2.properties").exists():
            shutil.copy(self.dist / "config" / "log4j2.properties", config)
        node_config = _node_config(ports, self.dir, secured=self.secure is not None)
        node_config += "".join(f"{key}: {value}\n" for key, value in self.node_settings.items())
        if self.secure is not None:
            node_config += _security_config(self.secure, config)
        (config / "elasticsearch.yml").write_text(node_config)
        (config / "jvm.options").write_text(_jvm_options(self.heap, self.dir, self.jvm_options))
        java = self.java or java_home()
        user = run_as(ES_USER, "Elasticsearch", self.dir, (self.dist, java), on_change)
        env = {
            "ES_JAVA_HOME": str(java),
            "ES_PATH_CONF": str(config),
            "ES_TMPDIR": str(self.dir / "tmp"),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.dir),
            "LANG": "C.UTF-8",
        }
        if self.secure is not None:
            self._add_user(env, user)
        self.process.start([str(self.dist / "bin" / "elasticsearch")], env, cwd=self.dir, user=user)

    def _add_user(self, env: dict[str, str], user: str | None) -> None:
        """Fusion's user in the node's file realm (before start: no API call needed)."""
        assert self.secure is not None
        password = self.secure.credentials().es_password
        users = self.dir / "config" / "users"
        if users.exists() and f"{FUSION_USER}:" in users.read_text():
            return
        # The password on standard input (the tool asks for it twice), not on the command
        # line, where any user of the machine reads it in /proc/<pid>/cmdline.
        command = [str(self.dist / "bin" / "elasticsearch-users"), "useradd", FUSION_USER]
        command += ["-r", "superuser"]
        # As the node's user: the files it writes must be the node's. Its own group too:
        # with root's gid the group bits of root's directories would apply.
        account = pwd.getpwnam(user) if user else None
        result = subprocess.run(
            command,
            input=f"{password}\n{password}\n",
            env=env,
            capture_output=True,
            text=True,
            check=False,
            user=account.pw_uid if account else None,
            group=account.pw_gid if account else None,
            extra_groups=[] if account else None,
        )
        if result.returncode != 0:
            detail = (result.stdout + result.stderr).strip().splitlines()
            raise InfraError(f"adding Elasticsearch's user failed: {detail[-1] if detail else ''}")

    def healthy(self, url: str) -> bool:
        """True once cluster health is yellow or green (asked as Fusion's user, when secured)."""
        try:
            health = get_json(f"{url}/_cluster/health?timeout=1s", secure=self.secure)
        except (OSError, ValueError):
            return False
        return health.get("status") in ("yellow", "green")


def get_json(
    url: str,
    timeout: float = 3.0,
    secure: SecureMaterial | None = None,
    body: bytes | None = None,
) -> dict[str, object]:
    """GET (or POST ``body``) and parse the JSON answer; over TLS as Fusion's user if secured."""
    request = urllib.request.Request(url, data=body, method="POST" if body else "GET")
    context = None
    if secure is not None:
        context = secure.client_context()
        token = f"{FUSION_USER}:{secure.credentials().es_password}".encode()
        request.add_header("Authorization", f"Basic {base64.b64encode(token).decode()}")
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
        body = json.loads(response.read())
    if not isinstance(body, dict):
        raise ValueError(f"{url} answered {body!r}")
    return body


def _node_config(ports: ElasticsearchPorts, node_dir: Path, secured: bool = False) -> str:
    return f"""\
cluster.name: fusion
node.name: fusion-local
network.host: 127.0.0.1
http.port: {ports.http}
transport.port: {ports.transport}
discovery.type: single-node
xpack.security.enabled: {"true" if secured else "false"}
path.data: {node_dir / "data"}
path.logs: {node_dir / "logs"}
# A laptop or CI disk is often fuller than production watermarks allow.
cluster.routing.allocation.disk.threshold_enabled: false
action.destructive_requires_name: false
"""


def _security_config(secure: SecureMaterial, config: Path) -> str:
    # The node reads certificates only from inside its config directory.
    certs = config / "certs"
    certs.mkdir(exist_ok=True)
    for source in (secure.ca, secure.server_key, secure.server_cert):
        shutil.copy(source, certs / source.name)
    for realm_file in ("users", "users_roles"):  # the file realm `elasticsearch-users` edits
        (config / realm_file).touch()
    return f"""\
xpack.security.http.ssl.enabled: true
xpack.security.http.ssl.key: certs/{secure.server_key.name}
xpack.security.http.ssl.certificate: certs/{secure.server_cert.name}
xpack.security.http.ssl.certificate_authorities: [certs/{secure.ca.name}]
"""


def _jvm_options(heap: str, node_dir: Path, more: Sequence[str] = ()) -> str:
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
""" + "".join(f"{option}\n" for option in more)
