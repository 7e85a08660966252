package main

import (
	"math"
	"time"
)

// Figures the docs quote that this model produces; figures_test.go holds the docs to them.

var (
	schedulerInvocation = price{1.00 / 1e6, "scheduled invocation (EventBridge Scheduler)", "https://aws.amazon.com/eventbridge/pricing/",
		"us-east-1, after 14 million free a month; $1.00 per million"}
	alarmMonth = price{0.10, "standard-resolution alarm metric-month", "https://aws.amazon.com/cloudwatch/pricing/",
		"us-east-1; $0.10 per alarm metric a month"}
)

// heartbeatCost is what a pipeline's heartbeat costs a month at one probe every every, at
// 256 MB and about 10 ms an invocation: the Scheduler invocation; SQS's send (by Scheduler),
// receive and delete; the consumer's invocation; the record's two writes; the custom metric
// ProbeCompleted and its alarm; and, on a pipeline with no other traffic, the consumer's
// counters that each probe's invocation publishes as 0 (counters), which traffic publishes
// anyway.
func heartbeatCost(every time.Duration, counters int) float64 {
	probes := float64(secondsPerMonth) / every.Seconds()
	lambda := lambdaRequest.USD + 0.010*0.25*lambdaArmGBs.USD
	perProbe := schedulerInvocation.USD + 3*sqsStandard.USD + lambda + 2*ddbWRU.USD
	return probes*perProbe + float64(1+counters)*metricMonth.USD + alarmMonth.USD
}

// storagePerMillionRecords is a month of storage for a million idempotency records of
// recordBytes each, with DynamoDB's per-item overhead.
func storagePerMillionRecords(recordBytes float64) float64 {
	return 1e6 * (recordBytes + itemOverheadBytes) / (1 << 30) * ddbStorage.USD
}

// nearest rounds v to the nearest step (a quoted figure's precision).
func nearest(v, step float64) float64 { return math.Round(v/step) * step }
