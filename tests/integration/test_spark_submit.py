"""`spark-submit $(fusion spark-submit-args) --config F --only <component>` runs one component."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

from fusion import clients
from fusion.config import PipelineConfig
from fusion.generator import GenOptions, build_dataset, produce
from fusion.settings import Settings
from tests.integration.pipelines import drop, read_topic

BIN = Path(sys.executable).parent


def test_indexer_runs_under_spark_submit(settings: Settings, tmp_path: Path) -> None:
    name = f"p{uuid.uuid4().hex[:10]}"
    config_file = tmp_path / "pipeline.toml"
    config_file.write_text(
        f'[pipeline]\nname = "{name}"\nkey_field = "id"\n'
        f'checkpoint_dir = "{tmp_path / "ckpt"}"\n'
        f'[[sources]]\nname = "left"\ntopic = "{name}.left"\n'
        f'[[sources]]\nname = "right"\ntopic = "{name}.right"\n'
        f'[kafka]\nbootstrap = "{settings.kafka.bootstrap}"\n'
        f'[elasticsearch]\nurl = "{settings.elasticsearch.url}"\n'
    )
    config = PipelineConfig.load(config_file, env={})
    try:
        data = build_dataset(config, GenOptions(keys=20, seed=1, missing_rate=0))
        produce(config, [r for r in data.records if r[0] == f"{name}.left"])
        # As after `source .venv/bin/activate`: spark-submit finds pyspark through PATH.
        path = f"{BIN}:{os.environ.get('PATH', '')}"
        env = dict(os.environ, FUSION_HOME=str(settings.runtime.home), PATH=path)
        args = subprocess.run(
            [BIN / "fusion", "spark-submit-args"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout.split()
        assert args[0] == "--jars" and args[2].endswith("submit.py")

        result = subprocess.run(
            [BIN / "spark-submit", "--master", "local[1]", *args,
             "--config", str(config_file), "--only", "indexer:left", "--stop-when-idle", "4"],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip

        assert result.returncode == 0, result.stderr[-3000:]
        summary = json.loads(result.stdout[result.stdout.index("{") :])
        assert summary["counters"]["indexer.left.indexed"] == 20
        es = clients.elasticsearch(config.elasticsearch)
        assert es.count(index=f"{name}-left")["count"] == 20
        assert len(read_topic(settings, config.acks_topic)) == 20
        assert shlex.split(" ".join(args))  # printable as one shell line
    finally:
        drop(config)
