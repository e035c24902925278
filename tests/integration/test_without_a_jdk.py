"""A machine with a Java runtime and no JDK: the pipeline runs, its JVM classes compiled by ECJ.

`fusion run` starts in an environment where ``javac`` is nowhere (no
``JAVA_HOME``, a PATH whose directories hold everything but it) and a runtime
home whose cache has no Fusion jar yet. It fetches the Eclipse compiler from
Maven, compiles the writers with it, says in one line that the counter runs
on its Python engine (the pipeline file chose none), and joins every key.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

from fusion.bench.generator import GenOptions, build_dataset, produce
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.counter.engine import ENGINE_FILE, NO_JAVAC
from fusion.infra import jvm_code as jvm
from fusion.infra.artifacts import ECJ, ArtifactCache
from fusion.topology import topology_of
from tests.integration.pipelines import assert_exact_join, drop, write_config_file

BIN = Path(sys.executable).parent


def path_without_javac(shims: Path) -> str:
    """PATH with each directory that holds a ``javac`` replaced by links to all else in it."""
    shims.mkdir()
    dirs = []
    for entry in os.environ["PATH"].split(os.pathsep):
        directory = Path(entry)
        if not (directory / "javac").exists():
            dirs.append(entry)
            continue
        for tool in directory.iterdir():
            if tool.name != "javac" and not (shims / tool.name).exists():
                (shims / tool.name).symlink_to(tool)
        if str(shims) not in dirs:
            dirs.append(str(shims))
    return os.pathsep.join([str(BIN), *dirs])


def test_a_java_runtime_without_javac_runs_the_pipeline(settings: Settings, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "artifacts").mkdir(parents=True)
    shared = ArtifactCache(settings.runtime.home).spark_kafka_dir  # no second Maven fetch of it
    (home / "artifacts" / shared.name).symlink_to(shared)
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env |= {"PATH": path_without_javac(tmp_path / "bin"), "FUSION_HOME": str(home)}
    probe = "from fusion.infra import jvm_code as jvm; print(jvm.find_javac())"
    found = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == "None"  # the environment really has no javac

    config_file = write_config_file(settings, tmp_path / "p.toml", ["a", "b", "c"])
    config = PipelineConfig.load(config_file, env={})
    data = build_dataset(config, GenOptions(keys=20, seed=5, missing_rate=0, duplicate_rate=0))
    try:
        produce(config, data.records)
        result = subprocess.run(
            [BIN / "fusion", "run", "--config", str(config_file), "--stop-when-idle", "8"],
            env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        assert_exact_join(settings, config, data.expected)
        assert NO_JAVAC in " ".join(result.stderr.split()), result.stderr[-3000:]
        written = (
            Path(urlparse(config.checkpoint(topology_of(config).counter_query)).path) / ENGINE_FILE
        )
        assert written.read_text().strip() == "python"
        assert jvm.jar_path(home).is_file()
        assert list((home / "artifacts" / f"ecj-{ECJ.version}").glob("ecj-*.jar"))
    finally:
        drop(config)
