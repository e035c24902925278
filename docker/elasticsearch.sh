#!/bin/sh
# Elasticsearch in the offline project image (Dockerfile.offline): the distribution
# that `fusion infra fetch` took from Maven Central, one node configured like
# docker-compose.yml's official elasticsearch service (single node, no security).
# It refuses to run as root: this starts as root, hands the data directory to
# the image's elasticsearch user, and runs the node as that user.
#   ES_HEAP  the node's heap (default 512m)
#   FUSION_RUNTIME_JVM_OPTIONS  more options for its JVM, as `fusion infra up` takes them
set -eu
home=$(ls -d "$FUSION_HOME"/artifacts/elasticsearch-*/dist/elasticsearch-* | head -n 1)
data=/usr/share/elasticsearch/data
conf=/tmp/es-config
mkdir -p "$data" /tmp/es-tmp /tmp/es-logs
rm -rf "$conf" && cp -r "$home/config" "$conf"
cat > "$conf/elasticsearch.yml" <<YML
cluster.name: fusion
node.name: elasticsearch
network.host: 0.0.0.0
discovery.type: single-node
xpack.security.enabled: false
path.data: $data
path.logs: /tmp/es-logs
cluster.routing.allocation.disk.threshold_enabled: false
action.destructive_requires_name: false
YML
# The distribution's jvm.options writes GC logs under its home, which the node's
# user cannot write: these options replace it.
cat > "$conf/jvm.options" <<OPTS
-Xms${ES_HEAP:-512m}
-Xmx${ES_HEAP:-512m}
-XX:+UseG1GC
-Djava.io.tmpdir=/tmp/es-tmp
-XX:+ExitOnOutOfMemoryError
-XX:ErrorFile=/tmp/es-logs/hs_err_pid%p.log
OPTS
for option in ${FUSION_RUNTIME_JVM_OPTIONS:-}; do echo "$option" >> "$conf/jvm.options"; done
chown -R elasticsearch:elasticsearch "$data" "$conf" /tmp/es-tmp /tmp/es-logs
export ES_JAVA_HOME="$JAVA_HOME" ES_PATH_CONF="$conf" ES_TMPDIR=/tmp/es-tmp
exec setpriv --reuid=elasticsearch --regid=elasticsearch --init-groups "$home/bin/elasticsearch"
