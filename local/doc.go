// Package local runs the pipelines of a cloud assembly on this machine, for your own tests
// and for a person trying a stack before deploying it (`pipelinectl local up`).
//
// Start takes the directory `cdk synth` wrote and brings up every stack's pipelines:
//
//	kit, err := local.Start(ctx, local.Options{Assembly: "cdk.out"})
//	if err != nil { ... }
//	defer kit.Close()
//	kit.Send(ctx, "Orders", `{"idempotencyKey":"o-1"}`, `{"idempotencyKey":"o-1"}`)
//	kit.WaitIdle(ctx)
//	dead, _ := kit.DeadLetters(ctx, "Orders")
//
// What runs, each part from the templates and the cloud assembly, never from a second
// description of the stack:
//   - DynamoDB Local and ElasticMQ (an SQS-compatible server) on free ports (ElasticMQ on
//     loopback; DynamoDB Local takes no address and listens on every interface), from
//     their pinned jars (Install fetches them with Maven into CacheDir; Java 17+).
//   - The kit creates the stacks' queues (attributes, redrive and redrive-allow policies) and
//     tables (keys, TTL) from the templates. A property with no local meaning (encryption,
//     tags, backups; a function's reserved concurrency, VPC or layers; a disabled mapping) is
//     listed (Kit.Ignored); a queue, table or mapping property the kit does not understand
//     is an error. The names the app gives queues and tables are kept, but where two stacks
//     of the run give the same one: those get the stack's name as a suffix (Kit.Ignored).
//     SNS topics are the kit's own: Publish to one delivers to its SQS subscriptions, raw
//     or in SNS's envelope, what its FilterPolicy matches only (on the message attributes,
//     or the body with FilterPolicyScope MessageBody); a subscription of another protocol
//     delivers nothing and is listed. S3 buckets are the kit's own too (gofakes3, in
//     memory); a put, copy or delete sends the bucket's event notifications to the topics
//     and queues they name, as S3 does.
//     An idempotency table or a queue and its DLQ the stack imports get local stand-ins,
//     from what the constructs record of them in the cloud assembly (Kit.StandIns).
//   - Every SQS event source mapping is a pipeline. A consumer or dispatcher of these
//     constructs is built from its source (the Entry the construct bundled, recorded in the
//     cloud assembly) with the bundling flags for this machine; any other function runs
//     from its code asset (a directory or a .zip) when that is an executable for this
//     machine (a GoFunction, a Rust function, a go1.x binary named by its handler), or is
//     built for this machine from the main package a Go executable for the other
//     architecture records, when that is in the module the assembly was synthesized in.
//     The mapping's function may be the function, a version or an alias of it. Each runs behind a local Lambda Runtime API
//     (internal/lambdart) with the template's environment, timeout and memory, one process
//     per execution environment. What cannot run (a mapping onto a function the stack does
//     not create, another runtime or architecture) is listed by NotRun; its queue is created.
//   - Each function's environment is resolved against the local resources (a TableV2's
//     global table, parameters with Options.Parameters or their Default, Fn::Sub,
//     Fn::ImportValue of a running stack's export); Options.Env sets any variable instead.
//     Every variable the kit cannot resolve is reported before anything starts; its
//     function is not run (NotRun) and the rest runs. A queue one stack passes to another
//     is one queue; a nested stack runs as a stack of its own ("Parent/Child").
//   - A poller per consumer is its event source mapping: batch size, a batching window from
//     the first record, Lambda's 6 MB payload, maximum concurrency, partial
//     batch responses, filter criteria (a record no filter matches is deleted undelivered); records not deleted return after the visibility timeout, and SQS's
//     redrive policy moves them to the DLQ.
//   - Fire runs a dispatcher as its schedule would, asynchronously: retries and the
//     on-failure destination from its EventInvokeConfig. With Options.Cron the kit also
//     fires it at each time its schedule's expression gives, in real time (cron, rate and
//     at, in the schedule's time zone).
//   - The heartbeat schedules send their probes; the kit records what runs as the
//     CloudWatch metrics the templates' alarms read, and evaluates every alarm and
//     composite alarm with CloudWatch's rules on a clock AlarmTimeScale times the wall
//     clock (Kit.Alarms, Kit.WaitForAlarm).
//   - One loopback server answers the Lambda (Invoke of a dispatcher,
//     ListEventSourceMappings), CloudWatch (DescribeAlarms) and Scheduler (GetSchedule)
//     calls pipelinectl makes, from what runs (Endpoints.AWS; Environ exports it), and
//     Outputs resolves the stacks' outputs to local names for pipelinectl's --outputs.
//
// Not modelled: IAM (every call is allowed), KMS (nothing is encrypted), quotas and
// throttling beyond what InjectDynamoDB injects, CloudWatch Logs and X-Ray.
//
// The pieces the kit is made of (the template reader, the deploy, the event source mapping's
// poller, the CloudWatch stand-in and alarm evaluation, the ledger of effects) are package
// internal/standin, which this repository's own scenarios (test/e2e) drive by hand.
package local
