// Powertools for AWS Lambda (TypeScript) contender of the peer benchmark (test/bench/peers).
//
// It processes the SQS events of one events file the way a warm Lambda function would, one
// invocation after another: @aws-lambda-powertools/batch (BatchProcessor, processPartialResponse,
// processInParallel: every record of a batch at once) around a record handler made idempotent by
// @aws-lambda-powertools/idempotency (makeIdempotent, DynamoDBPersistenceLayer) on the table
// given. Configuration mirrors our consumer's: the key is the body's idempotencyKey field, the
// body is validated against the stored hash (payloadValidationJmesPath), and the lock expiry
// comes from the invocation's remaining time (registerLambdaContext). The business effect only
// JSON-parses the body and counts its runs.
//
// Input, from the environment: PEER_ENDPOINT, PEER_TABLE, PEER_EVENTS (a JSON file
// {"warmup": [SQSEvent], "timed": [SQSEvent]}), PEER_TIMEOUT_MS (the simulated function
// timeout), PEER_CONCURRENCY (the batch size: sockets of the HTTP agent), BENCH_TS_MODULES (the node_modules directory of `npm ci`). Output: one JSON line.
//
// Plain JavaScript on purpose: it is the same library code a TypeScript build would call.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};

// The packages live in .cache/bench-ts/node_modules, outside this file's directory tree.
const require = createRequire(join(env('BENCH_TS_MODULES'), 'noop.js'));
const { BatchProcessor, EventType, processPartialResponse } = require('@aws-lambda-powertools/batch');
const { IdempotencyConfig, makeIdempotent } = require('@aws-lambda-powertools/idempotency');
const { DynamoDBPersistenceLayer } = require('@aws-lambda-powertools/idempotency/dynamodb');
const { DynamoDBClient } = require('@aws-sdk/client-dynamodb');

const timeoutMs = Number(env('PEER_TIMEOUT_MS'));
const { warmup, timed } = JSON.parse(readFileSync(env('PEER_EVENTS'), 'utf8'));

const client = new DynamoDBClient({
  endpoint: env('PEER_ENDPOINT'),
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  // The SDK's keep-alive agent allows 50 sockets by default: one per record of the batch
  // instead, so every record of a batch of 100 can be in flight as in the other contenders.
  requestHandler: { httpAgent: { maxSockets: Number(env('PEER_CONCURRENCY')) } },
});
const persistenceStore = new DynamoDBPersistenceLayer({ tableName: env('PEER_TABLE'), awsSdkV3Client: client });
const config = new IdempotencyConfig({
  eventKeyJmesPath: 'powertools_json(body).idempotencyKey',
  payloadValidationJmesPath: 'body',
  throwOnNoIdempotencyKey: true,
});

let effects = 0;
const processor = new BatchProcessor(EventType.SQS);
const recordHandler = makeIdempotent(
  async (record) => {
    JSON.parse(record.body); // the business effect: parse the body, nothing else
    effects++;
  },
  { persistenceStore, config },
);

let invocation = 0;
const handler = async (event) => {
  const deadline = Date.now() + timeoutMs;
  const context = {
    functionName: 'peer-powertools-ts',
    awsRequestId: `req-${++invocation}`,
    getRemainingTimeInMillis: () => deadline - Date.now(),
  };
  config.registerLambdaContext(context);
  return processPartialResponse(event, recordHandler, processor, { context, processInParallel: true });
};

const run = async (events) => {
  let records = 0;
  let failures = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  for (const event of events) {
    const resp = await handler(event);
    records += event.Records.length;
    failures += resp.batchItemFailures.length;
  }
  const seconds = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  return { records, failures, seconds, cpuSeconds: (used.user + used.system) / 1e6 };
};

const w = await run(warmup);
// Lambda-shaped runs: the timed part runs under a CPU quota (the orchestrator's cgroup).
// Joining it by pid moves every thread of this process.
if (process.env.PEER_CGROUP_PROCS) {
  writeFileSync(process.env.PEER_CGROUP_PROCS, `${process.pid}\n`);
}
process.stdout.write('{"phase":"timed"}\n');
const t = await run(timed);
process.stdout.write(
  `${JSON.stringify({
    records: t.records,
    failures: t.failures + w.failures,
    effects,
    seconds: t.seconds,
    cpu_seconds: t.cpuSeconds,
    runtime: `node ${process.version}`,
  })}\n`,
);
