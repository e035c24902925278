# The Fusion project image: Python, a JDK 17, Spark's Kafka connector and Fusion's JVM counter baked in.
FROM python:3.11-slim-bookworm

RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jdk-headless maven \
    && rm -rf /var/lib/apt/lists/*

ENV FUSION_HOME=/opt/fusion \
    JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64 \
    PYTHONUNBUFFERED=1

WORKDIR /app
COPY pyproject.toml README.md ./
COPY fusion ./fusion
COPY indexers ./indexers
COPY acks ./acks
COPY examples ./examples
RUN pip install --no-cache-dir .

# Fetched (and the counter compiled, hence the JDK) at build time so that
# containers never download or build anything at run time.
RUN fusion infra fetch --only spark-kafka && fusion infra fetch --only fusion-jvm \
    && rm -rf /root/.m2

CMD ["fusion", "--help"]
