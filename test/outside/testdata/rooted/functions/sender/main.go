// Command sender is the rooted app's function: it logs each record it is given with the
// version the Makefile stamps (-X main.version), the flavor its build tag picks, and the
// architecture it runs on.
package main

import (
	"context"
	"runtime"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"example.com/rooted/functions/flavor"
)

var version = "dev"

func main() {
	lambda.Start(func(ctx context.Context, ev events.SQSEvent) error {
		for _, r := range ev.Records {
			logRecord(map[string]string{"seen": r.Body, "version": version, "flavor": flavor.Name, "arch": runtime.GOARCH})
		}
		return nil
	})
}
