"""Spark from the pyspark install: a standalone cluster for `fusion infra up --spark-workers`,
and the archive of Spark's classes its JVMs start from."""
