"""Powertools for AWS Lambda (Python) contender of the peer benchmark (test/bench/peers).

It processes the SQS events of one events file the way a warm Lambda function would, one
invocation after another: BatchProcessor(EventType.SQS) + process_partial_response around a
record handler made idempotent by idempotent_function with a DynamoDBPersistenceLayer (a boto3
client with endpoint_url) on the table given. BatchProcessor runs the records of a batch one
after another: that is its design (the library's parallel option is AsyncBatchProcessor, which
idempotent_function does not wrap). Configuration mirrors our consumer's: the key is the body's
idempotencyKey field, the body is validated against the stored hash
(payload_validation_jmespath), and the lock expiry comes from the invocation's remaining time
(register_lambda_context). The business effect only JSON-parses the body and counts its runs.

Input, from the environment: PEER_ENDPOINT, PEER_TABLE, PEER_EVENTS (a JSON file
{"warmup": [SQSEvent], "timed": [SQSEvent]}), PEER_TIMEOUT_MS. Output: one JSON line.
"""

import json
import os
import platform
import time

import boto3
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)

TIMEOUT_MS = int(os.environ["PEER_TIMEOUT_MS"])
with open(os.environ["PEER_EVENTS"], encoding="utf-8") as f:
    EVENTS = json.load(f)

client = boto3.client(
    "dynamodb",
    endpoint_url=os.environ["PEER_ENDPOINT"],
    region_name="us-east-1",
    aws_access_key_id="local",
    aws_secret_access_key="local",
)
persistence_layer = DynamoDBPersistenceLayer(table_name=os.environ["PEER_TABLE"], boto3_client=client)
config = IdempotencyConfig(
    event_key_jmespath="powertools_json(body).idempotencyKey",
    payload_validation_jmespath="body",
    raise_on_no_idempotency_key=True,
)
processor = BatchProcessor(event_type=EventType.SQS)

effects = 0


@idempotent_function(data_keyword_argument="record", persistence_store=persistence_layer, config=config)
def record_handler(record: SQSRecord):
    global effects
    json.loads(record.body)  # the business effect: parse the body, nothing else
    effects += 1


class Context:
    """The part of the Lambda context that Powertools reads."""

    function_name = "peer-powertools-py"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:peer-powertools-py"

    def __init__(self, request_id: str):
        self.aws_request_id = request_id
        self._deadline = time.monotonic() + TIMEOUT_MS / 1000

    def get_remaining_time_in_millis(self) -> int:
        return int((self._deadline - time.monotonic()) * 1000)


invocation = 0


def handler(event: dict) -> dict:
    global invocation
    invocation += 1
    context = Context(f"req-{invocation}")
    config.register_lambda_context(context)
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)


def run(events: list) -> tuple[int, int, float, float]:
    records = failures = 0
    cpu = time.process_time()
    start = time.perf_counter()
    for event in events:
        resp = handler(event)
        records += len(event["Records"])
        failures += len(resp["batchItemFailures"])
    return records, failures, time.perf_counter() - start, time.process_time() - cpu


_, warm_failures, _, _ = run(EVENTS["warmup"])
# Lambda-shaped runs: the timed part runs under a CPU quota (the orchestrator's cgroup).
# Joining it by pid moves every thread of this process.
if os.environ.get("PEER_CGROUP_PROCS"):
    with open(os.environ["PEER_CGROUP_PROCS"], "w") as f:
        f.write(f"{os.getpid()}\n")
print('{"phase":"timed"}', flush=True)
records, failures, seconds, cpu_seconds = run(EVENTS["timed"])
print(
    json.dumps(
        {
            "records": records,
            "failures": failures + warm_failures,
            "effects": effects,
            "seconds": seconds,
            "cpu_seconds": cpu_seconds,
            "runtime": f"python {platform.python_version()}",
        }
    ),
    flush=True,
)
