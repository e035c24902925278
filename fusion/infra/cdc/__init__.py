"""Change-data-capture servers of the local runtime: PostgreSQL, Kafka Connect, Debezium."""
