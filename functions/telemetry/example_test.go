package telemetry_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

func ExampleMetrics() {
	m := telemetry.NewMetrics("IdempotentSQS", "consumer")
	m.Register(telemetry.MetricProcessed, telemetry.MetricFailed)
	m.Add(telemetry.MetricProcessed, 2)

	var out strings.Builder
	if err := m.Flush(&out); err != nil {
		fmt.Println(err)
	}
	// The timestamp varies; the rest of the line is stable.
	fmt.Print(regexp.MustCompile(`"Timestamp":\d+`).ReplaceAllString(out.String(), `"Timestamp":0`))
	// Output:
	// {"Failed":0,"Processed":2,"Service":"consumer","_aws":{"Timestamp":0,"CloudWatchMetrics":[{"Namespace":"IdempotentSQS","Dimensions":[["Service"]],"Metrics":[{"Name":"Processed","Unit":"Count"},{"Name":"Failed","Unit":"Count"}]}]}}
}

func ExampleParseLevel() {
	level, err := telemetry.ParseLevel("warn")
	if err != nil {
		fmt.Println(err)
		return
	}
	log := telemetry.NewLogger(os.Stdout, level)
	log.Info("not shown")
	fmt.Println(level)
	_, err = telemetry.ParseLevel("verbose")
	fmt.Println(err)
	// Output:
	// WARN
	// invalid log level "verbose": want DEBUG, INFO, WARN or ERROR
}
