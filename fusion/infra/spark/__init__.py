"""A Spark standalone cluster from the pyspark install, for `fusion infra up --spark-workers`."""
