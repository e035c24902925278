"""A Docker engine and Fusion's offline images, for docker-compose on machines without a registry.

The engine: the one ``docker`` reaches already (``DOCKER_HOST`` or the default
socket), else a private ``dockerd`` whose data, socket and pid file sit under
``<FUSION_HOME>/docker``, started here (and Debian's ``docker.io`` installed
with apt when ``dockerd`` is missing and we are root). Its bridge is made by
compose per project; the engine itself changes no firewall rules.

The images (``fusion infra images``): a Debian base made by ``debootstrap``
from the host's own apt mirror and imported as :data:`BASE_IMAGE`, then the
project image (``Dockerfile.offline``) built from it as ``fusion:latest``.
Each step logs to a file of its own; a failed step names itself and its log.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fusion.infra import BuildStepError, EngineError

BASE_IMAGE = "fusion-base:bookworm"
PROJECT_IMAGE = "fusion:latest"
DEBIAN_SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
START_TIMEOUT = 60.0


@dataclass(frozen=True)
class Engine:
    """A Docker engine that answers: its ``DOCKER_HOST``, and its directory when it is ours."""

    host: str | None  # None: the docker CLI's default
    root: Path | None = None  # our private engine's directory, or None

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        if self.host is not None:
            env["DOCKER_HOST"] = self.host
        return env

    def docker(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker", *args], env=self.env(), capture_output=True, text=True, check=check
        )


def answers(host: str | None) -> bool:
    """True when the engine at ``host`` (None: the CLI's default) answers ``docker version``."""
    if shutil.which("docker") is None:
        return False
    env = dict(os.environ)
    if host is not None:
        env["DOCKER_HOST"] = host
    found = subprocess.run(
        ["docker", "version", "--format", "{{.Server.Version}}"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    return found.returncode == 0


def private_host(home: Path) -> tuple[Path, str]:
    root = home / "docker"
    return root, f"unix://{root / 'docker.sock'}"


def find_or_start(home: Path, install: bool = True) -> Engine:
    """The engine ``docker`` reaches, else our private one (started, installed if need be)."""
    if answers(os.environ.get("DOCKER_HOST")):
        return Engine(os.environ.get("DOCKER_HOST"))
    root, host = private_host(home)
    if answers(host):
        return Engine(host, root)
    dockerd = shutil.which("dockerd") or (_install_docker() if install else None)
    if dockerd is None or shutil.which("docker") is None:
        raise EngineError(
            "no Docker engine answers and dockerd is not installed: install Debian's docker.io "
            "(apt-get install docker.io) or set DOCKER_HOST to an engine that answers"
        )
    _start_dockerd(dockerd, root, host)
    return Engine(host, root)


def _install_docker() -> str | None:
    if not _apt_install(["docker.io"]):
        return None
    return shutil.which("dockerd")


def _apt_install(packages: list[str]) -> bool:
    """Install Debian ``packages`` with apt, when we are root on a Debian machine."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return False
    log = Path(tempfile.gettempdir()) / "fusion-apt.log"
    with log.open("a") as out:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in (
            ["apt-get", "update", "-q"],
            ["apt-get", "install", "-y", "-q", *packages],
        ):
            if subprocess.run(command, stdout=out, stderr=out, env=env, check=False).returncode:
                raise EngineError(
                    f"apt-get could not install {' '.join(packages)}: its log is {log}"
                )
    return True


def _start_dockerd(dockerd: str, root: Path, host: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    log = root / "dockerd.log"
    # No default bridge and no iptables rules: compose makes each project's own
    # bridge, and published ports bind to 127.0.0.1 (docker-proxy), so the
    # engine leaves this machine's firewall as it found it.
    command = [
        dockerd,
        "--data-root", str(root / "data"),
        "--exec-root", str(root / "exec"),
        "--host", host,
        "--pidfile", str(root / "docker.pid"),
        "--bridge=none",
        "--iptables=false",
    ]  # fmt: skip
    with log.open("ab") as out:
        subprocess.Popen(command, stdout=out, stderr=out, start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if answers(host):
            return
        time.sleep(0.5)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-10:])
    raise EngineError(
        f"dockerd did not answer within {START_TIMEOUT:.0f} s; last log lines:\n{tail}"
    )


def stop(engine: Engine, timeout: float = 30.0) -> None:
    """Stop our private engine (an engine we did not start is left alone)."""
    if engine.root is None:
        return
    pidfile = engine.root / "docker.pid"
    try:
        pid = int(pidfile.read_text().strip())
        os.kill(pid, 15)
    except (OSError, ValueError):
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.2)


def image_exists(engine: Engine, image: str) -> bool:
    return engine.docker("image", "inspect", image, check=False).returncode == 0


def apt_mirror(sources: Path = Path("/etc/apt")) -> str:
    """The host's Debian mirror (what its apt reaches), else deb.debian.org."""
    for path in sorted(sources.glob("sources.list.d/*.sources")):
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    listing = sources / "sources.list"
    if listing.is_file():
        for line in listing.read_text(errors="replace").splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "deb" and "security" not in parts[1]:
                return parts[2] if parts[1].startswith("[") else parts[1]
    return DEFAULT_MIRROR


Step = Callable[[str], None]


def build_images(engine: Engine, repo: Path, logs: Path, on_step: Step = lambda _: None) -> None:
    """The base image (once) and the project image (Docker's cache makes a rebuild quick)."""
    logs.mkdir(parents=True, exist_ok=True)
    if not image_exists(engine, BASE_IMAGE):
        on_step(f"base image {BASE_IMAGE} (debootstrap {DEBIAN_SUITE})")
        _base_image(engine, logs)
    on_step(f"project image {PROJECT_IMAGE} (Dockerfile.offline)")
    _trust_files(repo / "docker")
    command = [
        "docker", "build", "--network", "host", "-f", str(repo / "Dockerfile.offline"),
        "--build-arg", f"BASE={BASE_IMAGE}", "-t", PROJECT_IMAGE, str(repo),
    ]  # fmt: skip
    _run_step("docker build", command, engine, logs / "build.log")


def _base_image(engine: Engine, logs: Path) -> None:
    if shutil.which("debootstrap") is None and not _apt_install(["debootstrap"]):
        raise EngineError(
            "debootstrap is not installed: apt-get install debootstrap (it makes the base image)"
        )
    with _scratch() as root:
        target = root / "rootfs"
        command = ["debootstrap", "--variant=minbase", DEBIAN_SUITE, str(target), apt_mirror()]
        _run_step("debootstrap", command, engine, logs / "debootstrap.log")
        # The image's apt reads the same mirror; its lists are fetched again at build.
        shutil.rmtree(target / "var/lib/apt/lists", ignore_errors=True)
        (target / "var/lib/apt/lists/partial").mkdir(parents=True, exist_ok=True)
        tar = f"tar -C {target} -c . | docker import - {BASE_IMAGE}"
        _run_step("docker import", ["sh", "-c", tar], engine, logs / "import.log")


@contextmanager
def _scratch() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="fusion-base-"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _trust_files(target: Path) -> None:
    """The host's CA bundle and JDK trust store, where Dockerfile.offline copies them from."""
    from fusion.infra import java_home

    if not HOST_CA_BUNDLE.is_file():
        raise EngineError(f"{HOST_CA_BUNDLE} is missing: install ca-certificates on this machine")
    shutil.copy(HOST_CA_BUNDLE, target / "host-ca.crt")
    cacerts = java_home() / "lib" / "security" / "cacerts"
    if not cacerts.is_file():
        raise EngineError(f"{cacerts} is missing: Maven in the image trusts what this JDK trusts")
    shutil.copy(cacerts, target / "host-cacerts")


def _run_step(step: str, command: list[str], engine: Engine, log: Path) -> None:
    with log.open("w") as out:
        out.write("$ " + " ".join(command) + "\n")
        out.flush()
        done = subprocess.run(command, stdout=out, stderr=out, env=engine.env(), check=False)
    if done.returncode != 0:
        raise BuildStepError(step, str(log))
