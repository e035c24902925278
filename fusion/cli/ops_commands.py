"""`fusion check`, `explain`, `status`, `reconcile` and `spark-submit-args`."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from fusion.cli.console import err, out, pipeline_of, print_report
from fusion.cli.terminal import Tracker
from fusion.core import Settings
from fusion.elastic import client as es_client
from fusion.kafka import client as kafka_client
from fusion.kafka import topics as kafka_topics
from fusion.spark import spark_jars, spark_session


def check_command(args: argparse.Namespace, settings: Settings) -> int:
    brokers = kafka_client.check(settings.kafka)
    out.print(f"Kafka at {settings.kafka.bootstrap}: {brokers} broker(s) answering")
    version = es_client.check(settings.elasticsearch)
    out.print(f"Elasticsearch at {settings.elasticsearch.shown_url}: version {version}")
    return 0


def explain_command(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.ops import explain

    config = pipeline_of(settings)
    es_client.check(config.elasticsearch)
    with err.status("reading Elasticsearch and the counter's state"):
        spark = spark_session(config, app_name=f"fusion-explain-{config.name}")
        report = explain.explain(config, explain.gather(spark, config, args.key))
    return print_report(report, explain.render, args.json)


def status_command(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.ops import status

    config = pipeline_of(settings)
    kafka_client.check(config.kafka)
    with err.status("reading metrics, offsets and the counter's state"):
        spark = None
        if not args.no_state:
            spark = spark_session(config, app_name=f"fusion-status-{config.name}")
        report = status.build(config, status.gather(spark, config))
    return print_report(report, status.render, args.json)


def reconcile_command(args: argparse.Namespace, settings: Settings) -> int:
    from fusion.ops import reconcile

    config = pipeline_of(settings)
    kafka_client.check(config.kafka)
    es_client.check(config.elasticsearch)
    kafka_topics.ensure_topics(config)
    with Tracker(err, "scanning and enriching on the executors", "keys") as tracker:

        def progress(report: reconcile.Report) -> None:
            tracker.update(report.enriched, report.planned or None, "enriched")

        # The slices run as Spark tasks; the plan lives in the checkpoint directory.
        spark = spark_session(config, app_name=f"fusion-reconcile-{config.name}")
        report = reconcile.reconcile(spark, config, progress)
    if args.json:
        out.print_json(json.dumps(asdict(report)))
    else:
        resumed = " (resumed an unfinished run)" if report.resumed else ""
        asked = f"asked the running pipeline's counter to enrich {report.planned:,}"
        done = asked if report.asked else f"enriched {report.enriched:,} of {report.planned:,}"
        out.print(
            f"scanned {report.scanned:,} keys: {report.complete:,} complete, "
            f"{report.up_to_date:,} already enriched; {done}{resumed}, "
            f"{report.dead_letters:,} dead letters"
        )
    return 0


def submit_args_command(args: argparse.Namespace, settings: Settings) -> int:
    from importlib.util import find_spec

    from fusion.spark import package_zip

    jars = ",".join(str(j) for j in spark_jars(settings))
    code = package_zip(settings.runtime.home)
    # Found, not imported: the entry script imports this module.
    spec = find_spec("fusion.cli.submit")
    assert spec is not None and spec.origin is not None
    master = settings.spark.submit_master(args.master)
    head = f"--master {master} " if master else ""
    out.print(f"{head}--jars {jars} --py-files {code} {spec.origin}", soft_wrap=True)
    return 0
