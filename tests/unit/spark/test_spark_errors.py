"""A Spark error (a Java stack trace with Python inside) becomes one readable line."""

from __future__ import annotations

from fusion.spark.causes import root_cause
from fusion.spark.errors import StageError
from fusion.spark.watch import query_failure

TASK_FAILURE = """An error occurred while calling o365.collectToPython.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed 4 times, most recent failure: Lost task 0.3 in stage 3.0: org.apache.spark.api.python.PythonException: Traceback (most recent call last):
  File "/work/fusion/tasks.py", line 95, in run
    counts = work(job, pa.Table.from_batches(received))
  File "/work/indexers/task.py", line 80, in index_records
    written = write_documents(
fusion.elastic.bulk.IndexingError: 1 document(s) for p-a still failing after all retries (status 503: x)
\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:624)
\tat org.apache.spark.scheduler.Task.run(Task.scala:147)
Caused by: java.io.EOFException
"""  # noqa: E501

WORKER_DIED = """An error occurred while calling o1.collectToPython.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage 0.0 failed 4 times: org.apache.spark.SparkException: Python worker exited unexpectedly (crashed)
\tat org.apache.spark.api.python.BasePythonRunner.x(PythonRunner.scala:1)
Caused by: java.io.EOFException
"""  # noqa: E501


def test_the_innermost_python_error_is_the_cause() -> None:
    assert root_cause(TASK_FAILURE) == (
        "fusion.elastic.bulk.IndexingError: 1 document(s) for p-a still failing after all retries "
        "(status 503: x)"
    )


def test_without_a_python_error_the_first_line_says_what_happened() -> None:
    assert root_cause(WORKER_DIED) == "An error occurred while calling o1.collectToPython."


def test_a_query_failure_is_one_line_and_fencing_is_named_as_such() -> None:
    failed = query_failure("p-indexer-a", "[FOREACH_BATCH] ...\n" + TASK_FAILURE)
    fenced = query_failure("p-enricher", "... fusion.kafka.errors.FencedError: another ...")
    concurrent = query_failure("p-counter", "Multiple streaming queries are concurrently using /x")

    assert "\n" not in str(failed) and "still failing after all retries" in str(failed)
    assert "another process runs the same query" in str(fenced)
    assert "another process runs the same query" in str(concurrent)


WRITER_REFUSED = """An error occurred while calling z:fusion.output.TransactionalWriter.publish.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 9.0 failed 4 times, most recent failure: Lost task 0.3 in stage 9.0 (TID 31) (host executor driver): java.lang.IllegalStateException: KafkaAccessError: the transaction of fusion-p-single@p.a-0 (TopicAuthorizationException: Not authorized to access topics: [p.enriched])
\tat fusion.output.Writer.refused(Writer.java:170)
Caused by: org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access topics: [p.enriched]
"""  # noqa: E501


def test_a_task_error_of_fusion_keeps_its_exit_code() -> None:
    gone = query_failure(
        "p-single",
        TASK_FAILURE.replace(
            "fusion.elastic.bulk.IndexingError: 1 document(s) for p-a "
            "still failing after all retries (status 503: x)",
            "fusion.elastic.errors.IndexGoneError: "
            "index p-a does not exist (index_not_found_exception)",
        ),
    )
    refused = query_failure("p-single", WRITER_REFUSED)
    other = query_failure("p-single", "... ValueError: bad")

    assert gone.code() == 7 and str(gone).startswith("query p-single failed: index p-a does not")
    assert refused.code() == 4 and "Not authorized to access topics" in str(refused)
    assert "KafkaAccessError" not in str(refused)
    assert other.code() == 5 and "ValueError: bad" in str(other)


def test_a_refusal_of_the_executors_writer_is_its_own_line_through_the_stage() -> None:
    text = WRITER_REFUSED.replace("KafkaAccessError", "MessageTooLargeError")
    stage_error = StageError("single", root_cause(text))  # as the stage's handler raises it

    failed = query_failure("p-single", f"fusion.spark.errors.StageError: {stage_error}")

    assert failed.code() == 7 and "max.message.bytes" in str(failed)
    assert "as too large (TopicAuthorizationException: Not authorized" in str(failed)
