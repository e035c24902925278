"""Settings, the pipeline file, errors, events and fault points: what every package uses.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.core import codec as codec
    from fusion.core import faults as faults
    from fusion.core.config import RESERVED_FIELD as RESERVED_FIELD
    from fusion.core.config import STORED_KEY as STORED_KEY
    from fusion.core.config import STORED_OWN as STORED_OWN
    from fusion.core.config import STORED_REFS as STORED_REFS
    from fusion.core.config import PipelineConfig as PipelineConfig
    from fusion.core.config_file import write_config as write_config
    from fusion.core.config_tables import PipelineSection as PipelineSection
    from fusion.core.config_tables import ReferenceTable as ReferenceTable
    from fusion.core.config_tables import SourceConfig as SourceConfig
    from fusion.core.config_values import AVRO_FORMATS as AVRO_FORMATS
    from fusion.core.config_values import CounterEngineName as CounterEngineName
    from fusion.core.config_values import FieldType as FieldType
    from fusion.core.config_values import KeySpec as KeySpec
    from fusion.core.config_values import LookupMode as LookupMode
    from fusion.core.config_values import SourceFormat as SourceFormat
    from fusion.core.config_values import key_spec as key_spec
    from fusion.core.connections import RegistrySettings as RegistrySettings
    from fusion.core.errors import ConfigError as ConfigError
    from fusion.core.errors import CredentialsError as CredentialsError
    from fusion.core.errors import ExitCode as ExitCode
    from fusion.core.errors import FusionError as FusionError
    from fusion.core.errors import ServiceUnavailableError as ServiceUnavailableError
    from fusion.core.errors import SparkGoneError as SparkGoneError
    from fusion.core.errors import TlsTrustError as TlsTrustError
    from fusion.core.errors import TopologyError as TopologyError
    from fusion.core.errors import WaitTimeoutError as WaitTimeoutError
    from fusion.core.events import DeadLetter as DeadLetter
    from fusion.core.events import IncompleteEvent as IncompleteEvent
    from fusion.core.events import ReadyEvent as ReadyEvent
    from fusion.core.events import RefPart as RefPart
    from fusion.core.events import Stage as Stage
    from fusion.core.events import dead_letter_records as dead_letter_records
    from fusion.core.events import dumps as dumps
    from fusion.core.events import iso_from_ms as iso_from_ms
    from fusion.core.events import iso_utc as iso_utc
    from fusion.core.events import now_iso as now_iso
    from fusion.core.events import now_utc as now_utc
    from fusion.core.faults import ENV_NAMES as ENV_NAMES
    from fusion.core.faults import crash_point as crash_point
    from fusion.core.relations import MAX_HOPS as MAX_HOPS
    from fusion.core.relations import SLOT_SEPARATOR as SLOT_SEPARATOR
    from fusion.core.relations import Reference as Reference
    from fusion.core.relations import Slot as Slot
    from fusion.core.settings import ElasticsearchSettings as ElasticsearchSettings
    from fusion.core.settings import KafkaSettings as KafkaSettings
    from fusion.core.settings import RuntimeSettings as RuntimeSettings
    from fusion.core.settings import Settings as Settings
    from fusion.core.settings import SparkSettings as SparkSettings
    from fusion.core.settings import config_error as config_error
    from fusion.core.settings import read_toml as read_toml

__getattr__, __dir__, __all__ = attach(__name__, __file__)
