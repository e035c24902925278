"""Spark from the pyspark install: a standalone cluster, and the archive of Spark's classes.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.infra.spark import class_archive as class_archive
    from fusion.infra.spark.standalone import LocalSparkCluster as LocalSparkCluster
    from fusion.infra.spark.standalone import spark_status as spark_status
    from fusion.infra.spark.standalone import start_cluster as start_cluster
    from fusion.infra.spark.standalone import wait_until_alive as wait_until_alive

__getattr__, __dir__, __all__ = attach(__name__, __file__)
