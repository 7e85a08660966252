// Package telemetry gives the pipeline's Lambda functions their two observability outputs,
// both written to stdout where Lambda forwards them to CloudWatch Logs:
//
//   - structured JSON logs (log/slog) whose "level" and "timestamp" keys Lambda's log-level
//     filtering understands (NewLogger, ParseLevel), with shared attribute keys (AttrMessageID,
//     ...) so every function logs the same field names;
//   - counters published as CloudWatch metrics through the Embedded Metric Format (Metrics):
//     CloudWatch extracts the metrics from the log line, so no PutMetricData client, IAM
//     permission or network call is needed on the hot path.
//
// Typical use in a Lambda main:
//
//	service := telemetry.ServiceFromEnv(os.LookupEnv, "consumer") // the Lambda function name
//	log := telemetry.NewLogger(os.Stdout, level).With("service", service)
//	m := telemetry.NewMetrics("IdempotentSQS", service)
//	m.Register(telemetry.ConsumerMetrics()...) // emitted as 0 when nothing happened
//	// per invocation:
//	m.Add(telemetry.MetricProcessed, 1)
//	defer m.Flush(os.Stdout)
package telemetry
