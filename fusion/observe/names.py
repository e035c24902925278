"""The names the pipeline reports under: one home for each, imported by every writer.

An alert is something wrong right now (a server being retried, a gap in a
topic), shown first on the status line and served by the Prometheus endpoint
until it clears; the same name sets it and clears it, wherever it is raised.
"""

from __future__ import annotations

KAFKA_ALERT = "kafka"  # Kafka unreachable or refusing, being retried
ES_ALERT = "elasticsearch"  # Elasticsearch unreachable or overloaded, being retried
DATA_LOSS_ALERT = "data_loss"  # source records deleted before they were read
REPLAY_ALERT = "replay"  # a batch replayed without its exactly-once markers
