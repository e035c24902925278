"""The local servers (`fusion infra`): artifacts, processes and their runtime.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.infra import jvm_code as jvm_code
    from fusion.infra.accounts import run_as as run_as
    from fusion.infra.artifacts import ARTIFACT_SETS as ARTIFACT_SETS
    from fusion.infra.artifacts import ArtifactCache as ArtifactCache
    from fusion.infra.artifacts import Coordinate as Coordinate
    from fusion.infra.artifacts import maven_copy as maven_copy
    from fusion.infra.artifacts import maven_file as maven_file
    from fusion.infra.artifacts import preparing as preparing
    from fusion.infra.artifacts import staging as staging
    from fusion.infra.elasticsearch import get_json as get_json
    from fusion.infra.errors import BuildStepError as BuildStepError
    from fusion.infra.errors import ClassArchiveError as ClassArchiveError
    from fusion.infra.errors import ComposeError as ComposeError
    from fusion.infra.errors import EngineError as EngineError
    from fusion.infra.errors import InfraError as InfraError
    from fusion.infra.errors import PortInUseError as PortInUseError
    from fusion.infra.errors import ServerStartError as ServerStartError
    from fusion.infra.errors import ServiceNotHealthyError as ServiceNotHealthyError
    from fusion.infra.errors import ToolMissingError as ToolMissingError
    from fusion.infra.java import java_home as java_home
    from fusion.infra.kafka import log4j2_config as log4j2_config
    from fusion.infra.process import ManagedProcess as ManagedProcess
    from fusion.infra.runtime import LocalRuntime as LocalRuntime
    from fusion.infra.services import SERVICES as SERVICES
    from fusion.infra.services import Endpoints as Endpoints
    from fusion.infra.services import ServiceStatus as ServiceStatus
    from fusion.infra.services import companion_port as companion_port
    from fusion.infra.services import local_broker_version as local_broker_version
    from fusion.infra.services import reuse as reuse
    from fusion.infra.services import spark_version as spark_version
    from fusion.infra.services import wait_healthy as wait_healthy

__getattr__, __dir__, __all__ = attach(__name__, __file__)
