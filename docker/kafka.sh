#!/bin/sh
# Kafka in the offline project image (Dockerfile.offline): the broker jars that
# `fusion infra fetch` took from Maven Central, one KRaft node configured like
# docker-compose.yml's official apache/kafka service.
#   FUSION_KAFKA_ADVERTISED  the client listeners' advertised addresses
#                            (default: INTERNAL://kafka:29092,HOST://127.0.0.1:9092)
#   KAFKA_HEAP               the broker's heap (default 512m)
#   FUSION_RUNTIME_JVM_OPTIONS  more options for its JVM, as `fusion infra up` takes them
set -eu
libs=$(ls -d "$FUSION_HOME"/artifacts/kafka-*/libs | head -n 1)
data=/var/lib/kafka/data
conf=/tmp/kafka-server.properties
mkdir -p "$data"
cat > "$conf" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
controller.listener.names=CONTROLLER
listeners=INTERNAL://:29092,CONTROLLER://:9093,HOST://:9092
advertised.listeners=${FUSION_KAFKA_ADVERTISED:-INTERNAL://kafka:29092,HOST://127.0.0.1:9092}
listener.security.protocol.map=INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT,HOST:PLAINTEXT
inter.broker.listener.name=INTERNAL
log.dirs=$data
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS
# shellcheck disable=SC2086 # the options are words
java_cmd() { java -Xms"${KAFKA_HEAP:-512m}" -Xmx"${KAFKA_HEAP:-512m}" ${FUSION_RUNTIME_JVM_OPTIONS:-} -cp "$libs/*" "$@"; }
if [ ! -f "$data/meta.properties" ]; then
    # The storage tool reads an id that starts with "-" as an option: draw another.
    id=$(java_cmd kafka.tools.StorageTool random-uuid)
    while [ "${id#-}" != "$id" ]; do id=$(java_cmd kafka.tools.StorageTool random-uuid); done
    java_cmd kafka.tools.StorageTool format -t "$id" -c "$conf"
fi
exec java -Xms"${KAFKA_HEAP:-512m}" -Xmx"${KAFKA_HEAP:-512m}" -cp "$libs/*" kafka.Kafka "$conf"
