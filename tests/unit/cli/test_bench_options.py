"""``fusion bench <benchmark>``'s options, checked before any server is asked."""

from __future__ import annotations

import pytest

from fusion.bench.setup import BenchOptions, bench_config
from fusion.bench.sustain.options import SustainOptions
from fusion.cli import bench_commands, parser
from fusion.core.errors import ConfigError
from fusion.core.settings import Settings


def test_the_fanout_page_defaults_to_the_pipelines_and_takes_a_size() -> None:
    assert parser.build().parse_args(["bench", "fanout"]).page == 25_000
    args = parser.build().parse_args(["bench", "fanout", "--page", "5000"])
    assert args.page == 5_000


@pytest.mark.parametrize("page", ["0", "-5", "1000001", "many"])
def test_a_fanout_page_the_pipeline_file_would_refuse_is_a_usage_error(
    page: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parser.build().parse_args(["bench", "fanout", "--page", page])
    assert stopped.value.code == 2
    assert f"--page: {page!r}: a number of keys from 1 to 1,000,000" in capsys.readouterr().err


def _sustain(*extra: str) -> SustainOptions:
    args = parser.build().parse_args(["bench", "sustain", *extra])
    return bench_commands._sustain_options(args, args.set or ())


def test_set_gives_the_benchmarks_pipeline_an_option_and_its_config_takes_it() -> None:
    options = _sustain("--set", "layout=stages", "--set", "refresh_interval=100ms")
    assert options.pipeline == (("layout", "stages"), ("refresh_interval", "100ms"))
    bench = BenchOptions(1, 4, pipeline=options.pipeline)
    config = bench_config(Settings(), "batched", bench, "t")
    assert (config.pipeline.layout, config.pipeline.refresh_interval) == ("stages", "100ms")
    assert config.pipeline.lookup == "batched"  # the mode's own options stay


def test_without_set_the_pipeline_keeps_its_defaults() -> None:
    assert _sustain().pipeline == ()
    config = bench_config(Settings(), "batched", BenchOptions(1, 4), "t")
    assert config.pipeline.layout == "single"


@pytest.mark.parametrize(
    ("pair", "says"),
    [
        ("layout", "write each option as OPTION=VALUE"),
        ("=stages", "write each option as OPTION=VALUE"),
        ("layuot=stages", "layuot"),
        ("layout=sideways", "layout"),
    ],
)
def test_a_set_option_the_pipeline_refuses_is_one_line_naming_it(pair: str, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        _sustain("--set", pair)
    assert "--set" in str(refused.value) and says in str(refused.value)


def test_a_burst_takes_set_too_and_its_report_names_it() -> None:
    from fusion.bench.runs import burst_report as report_files

    argv = ["bench", "burst", "--modes", "batched", "--set", "topic_partitions=2"]
    args = parser.build().parse_args(argv)
    options = bench_commands._burst_options(args)

    assert options.pipeline == (("topic_partitions", "2"),)
    assert bench_config(Settings(), "batched", options, "t").pipeline.topic_partitions == 2
    machine = {"cores": 2, "pyspark": "4", "kafka": "4", "elasticsearch": "8", "python": "3"}
    report = {"sources": 4, "keys": 10, "floor_seconds": 1.0, "runs": 1, "machine": machine,
              "modes": [], "pipeline_set": dict(options.pipeline)}  # fmt: skip
    assert "Set for this run: `topic_partitions = 2`" in report_files.markdown(report)


def test_the_children_benchmark_takes_pipeline_options_and_a_warm_wave() -> None:
    from fusion.bench.children.records import children_config

    argv = ["bench", "children", "--set", "topic_partitions=4", "--warm", "10000"]
    args = parser.build().parse_args(argv)
    pipeline = bench_commands._pipeline_set(args.set)
    assert children_config(Settings(), "t", pipeline).pipeline.topic_partitions == 4
    assert args.warm == 10_000


@pytest.mark.parametrize("other", ["formats", "fanout", "idle", "soak", "memory", "status"])
def test_a_benchmark_that_builds_its_own_pipeline_has_no_set(
    other: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parser.build().parse_args(["bench", other, "--set", "topic_partitions=2"])
    assert stopped.value.code == 2
    assert "unrecognized arguments: --set topic_partitions=2" in capsys.readouterr().err


def test_each_benchmark_is_a_command_of_its_own_with_its_handler() -> None:
    names = ("burst", "sustain", "formats", "fanout", "children", "soak", "idle", "memory",
             "status", "reconcile", "scale")  # fmt: skip
    for name in names:
        assert parser.build().parse_args(["bench", name]).command == f"bench {name}"
    assert set(bench_commands.BENCH_HANDLERS) == {f"bench {name}" for name in names}
