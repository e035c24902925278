"""The benchmarks (`fusion bench`): the runs, their floors and their reports.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.bench import naive as naive
    from fusion.bench import report as report
    from fusion.bench.baselines import median_counter_run as median_counter_run
    from fusion.bench.baselines import run_counter_only as run_counter_only
    from fusion.bench.baselines import run_floor as run_floor
    from fusion.bench.enriched_index import drained as drained
    from fusion.bench.enriched_index import enriched_of as enriched_of
    from fusion.bench.enriched_index import enriched_times as enriched_times
    from fusion.bench.enriched_index import last_enriched as last_enriched
    from fusion.bench.errors import IdleError as IdleError
    from fusion.bench.errors import PipelineProcessError as PipelineProcessError
    from fusion.bench.errors import SustainError as SustainError
    from fusion.bench.generator import Dataset as Dataset
    from fusion.bench.generator import GenOptions as GenOptions
    from fusion.bench.generator import bench_publisher as bench_publisher
    from fusion.bench.generator import build_dataset as build_dataset
    from fusion.bench.generator import produce as produce
    from fusion.bench.generator import write_expected as write_expected
    from fusion.bench.jvm_memory import DIRECT as DIRECT
    from fusion.bench.jvm_memory import DRIVER_OPTIONS as DRIVER_OPTIONS
    from fusion.bench.jvm_memory import HEAP as HEAP
    from fusion.bench.jvm_memory import NMT_OPTION as NMT_OPTION
    from fusion.bench.jvm_memory import jvm_limits_mb as jvm_limits_mb
    from fusion.bench.jvm_memory import live_heap_peak_mb as live_heap_peak_mb
    from fusion.bench.jvm_memory import native_peaks as native_peaks
    from fusion.bench.meter import SAMPLE_SECONDS as SAMPLE_SECONDS
    from fusion.bench.meter import Objective as Objective
    from fusion.bench.meter import Seen as Seen
    from fusion.bench.meter import Sent as Sent
    from fusion.bench.meter import Step as Step
    from fusion.bench.meter import judge as judge
    from fusion.bench.meter import summary as summary
    from fusion.bench.process import STARTED as STARTED
    from fusion.bench.process import PipelineProcess as PipelineProcess
    from fusion.bench.process import started_on_fresh_topics as started_on_fresh_topics
    from fusion.bench.process import timed_command as timed_command
    from fusion.bench.process import until as until
    from fusion.bench.proctree import PART_NAMES as PART_NAMES
    from fusion.bench.proctree import cores_between as cores_between
    from fusion.bench.proctree import cpu_by_part as cpu_by_part
    from fusion.bench.proctree import cpu_snapshot as cpu_snapshot
    from fusion.bench.proctree import tree_cpu_seconds as tree_cpu_seconds
    from fusion.bench.proctree import watch_peaks as watch_peaks
    from fusion.bench.report import git_commit as git_commit
    from fusion.bench.report import lower_median as lower_median
    from fusion.bench.report import machine as machine
    from fusion.bench.report import mode_result as mode_result
    from fusion.bench.report import rounded as rounded
    from fusion.bench.report import set_lines as set_lines
    from fusion.bench.report import write_files as write_files
    from fusion.bench.report import write_text_files as write_text_files
    from fusion.bench.servers import Outputs as Outputs
    from fusion.bench.servers import restart_elasticsearch as restart_elasticsearch
    from fusion.bench.servers import server_pids as server_pids
    from fusion.bench.servers import servers_rss_mb as servers_rss_mb
    from fusion.bench.setup import MODES as MODES
    from fusion.bench.setup import BenchOptions as BenchOptions
    from fusion.bench.setup import Mode as Mode
    from fusion.bench.setup import bench_config as bench_config
    from fusion.bench.setup import generating as generating
    from fusion.bench.setup import produce_timed as produce_timed

__getattr__, __dir__, __all__ = attach(__name__, __file__)
