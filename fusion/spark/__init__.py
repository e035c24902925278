"""Spark: the session, stages and tasks, checkpoints, the query watch.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.spark import daemon as daemon
    from fusion.spark import logs as logs
    from fusion.spark import memory_limits as memory_limits
    from fusion.spark import resume as resume
    from fusion.spark.checkpoint import CheckpointFiles as CheckpointFiles
    from fusion.spark.checkpoint import batch_offsets as batch_offsets
    from fusion.spark.checkpoint import committed_batches as committed_batches
    from fusion.spark.checkpoint import planned_batches as planned_batches
    from fusion.spark.jvm_writer import fault_settings as fault_settings
    from fusion.spark.jvm_writer import task_counts as task_counts
    from fusion.spark.jvm_writer import writer_spec as writer_spec
    from fusion.spark.listener import ProgressListener as ProgressListener
    from fusion.spark.queries import CHECKPOINT_MANAGER as CHECKPOINT_MANAGER
    from fusion.spark.queries import LOCAL_CHECKPOINT_MANAGER as LOCAL_CHECKPOINT_MANAGER
    from fusion.spark.queries import read_kafka as read_kafka
    from fusion.spark.queries import read_with_clock as read_with_clock
    from fusion.spark.queries import start_foreach_batch as start_foreach_batch
    from fusion.spark.session import spark_jars as spark_jars
    from fusion.spark.session import spark_session as spark_session
    from fusion.spark.shipping import package_zip as package_zip
    from fusion.spark.stage import BatchStage as BatchStage
    from fusion.spark.tasks import KAFKA_SELECT as KAFKA_SELECT
    from fusion.spark.tasks import OUTPUT_COLUMNS as OUTPUT_COLUMNS
    from fusion.spark.tasks import OUTPUT_SCHEMA as OUTPUT_SCHEMA
    from fusion.spark.tasks import Job as Job
    from fusion.spark.tasks import TaskCount as TaskCount
    from fusion.spark.tasks import TaskOutput as TaskOutput
    from fusion.spark.tasks import Work as Work
    from fusion.spark.tasks import attributed as attributed
    from fusion.spark.tasks import column as column
    from fusion.spark.tasks import elasticsearch as elasticsearch
    from fusion.spark.tasks import output_columns as output_columns
    from fusion.spark.tasks import partition_function as partition_function
    from fusion.spark.watch import ctrl_c_stops_at_next_poll as ctrl_c_stops_at_next_poll
    from fusion.spark.watch import driver_memory as driver_memory
    from fusion.spark.watch import run_until as run_until

__getattr__, __dir__, __all__ = attach(__name__, __file__)
