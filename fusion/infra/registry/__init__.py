"""A schema registry beside Kafka, for Avro sources: Apicurio Registry (:mod:`.apicurio`)."""
