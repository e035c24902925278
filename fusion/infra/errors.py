"""The errors of the local runtime (`fusion infra`) and of building Fusion's JVM code.

Every class roots in :class:`fusion.core.errors.FusionError` and says its exit code.
"""

from __future__ import annotations

from fusion.core import ExitCode, FusionError


class InfraError(FusionError):
    """The local Kafka/Elasticsearch runtime could not be provisioned or run."""

    exit_code = ExitCode.INFRA


class ToolMissingError(InfraError):
    """A program the local runtime needs (java, mvn) is not installed."""

    def __init__(self, tool: str, hint: str) -> None:
        self.tool = tool
        super().__init__(f"{tool} not found on PATH: {hint}")


class PortInUseError(InfraError):
    """A port the local runtime wants is already bound by another process."""

    def __init__(self, service: str, port: int, option: str) -> None:
        self.service = service
        self.port = port
        super().__init__(
            f"port {port} for {service} is already in use: stop what listens there "
            f"or choose another port with {option}"
        )


class DownloadError(InfraError):
    """Maven could not fetch an artifact."""

    def __init__(self, what: str, detail: str) -> None:
        self.what = what
        self.detail = detail
        super().__init__(
            f"could not download {what} with Maven: {detail} "
            "(check network access to the Maven repository or your ~/.m2/settings.xml)"
        )


class ServerStartError(InfraError):
    """A local server did not become healthy."""

    def __init__(self, service: str, reason: str, log_tail: str) -> None:
        self.service = service
        self.reason = reason
        self.log_tail = log_tail
        message = f"{service} did not come up: {reason}"
        if log_tail:
            message += f"; last log lines:\n{log_tail}"
        super().__init__(message)


class CompileError(InfraError):
    """Fusion's own Java sources did not compile against the installed Spark."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"Fusion's JVM classes did not compile against pyspark's jars ({detail}): "
            "reinstall Fusion with the pyspark version it pins"
        )


class ClassArchiveError(InfraError):
    """Spark's JVM did not write its class archive (its starts are only slower without)."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"Spark's JVM did not write its class archive ({detail}): an OpenJDK (HotSpot) "
            "17 or newer writes one; check `java -XX:ArchiveClassesAtExit=/tmp/a.jsa -version`"
        )


class EngineError(InfraError):
    """No Docker engine answers, and none could be started here."""


class BuildStepError(InfraError):
    """A step of building the images failed; its log says why."""

    def __init__(self, step: str, log: str) -> None:
        self.step = step
        self.log = log
        super().__init__(f"building the images failed at {step!r}: its log is {log}")


class ComposeError(InfraError):
    """docker compose failed."""


class ServiceNotHealthyError(InfraError):
    """A compose service did not become healthy (or a one-shot failed); the project is down."""

    def __init__(self, service: str, state: str, log_tail: str) -> None:
        self.service = service
        self.state = state
        self.log_tail = log_tail
        super().__init__(
            f"compose service {service!r} did not become healthy ({state}); the project was "
            f"taken down; its last log lines:\n{log_tail}"
        )
