"""Kafka: clients, topics, exactly-once output, batch markers, lag, what Spark reads.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.kafka import client as client
    from fusion.kafka import data_loss as data_loss
    from fusion.kafka import lag as lag
    from fusion.kafka import topics as topics
    from fusion.kafka.errors import FencedError as FencedError
    from fusion.kafka.errors import KafkaAccessError as KafkaAccessError
    from fusion.kafka.errors import KafkaRefusedError as KafkaRefusedError
    from fusion.kafka.errors import MarkersGoneError as MarkersGoneError
    from fusion.kafka.errors import MessageTooLargeError as MessageTooLargeError
    from fusion.kafka.exactly_once import OutRecord as OutRecord
    from fusion.kafka.exactly_once import TransactionalOutput as TransactionalOutput
    from fusion.kafka.fanout_backlog import oldest_pending as oldest_pending
    from fusion.kafka.lag import lag_of as lag_of
    from fusion.kafka.lag import source_lag as source_lag
    from fusion.kafka.lag import stage_markers as stage_markers
    from fusion.kafka.markers import Marker as Marker
    from fusion.kafka.markers import replay_unmarked as replay_unmarked
    from fusion.kafka.producer import Publisher as Publisher
    from fusion.kafka.retry import classify as classify
    from fusion.kafka.retry import retry_kafka as retry_kafka
    from fusion.kafka.stream_source import spark_source_options as spark_source_options
    from fusion.kafka.topics import delete_groups as delete_groups
    from fusion.kafka.topics import delete_topics as delete_topics

__getattr__, __dir__, __all__ = attach(__name__, __file__)
