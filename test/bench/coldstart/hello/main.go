// Command hello is the baseline of the cold-start benchmark: the smallest aws-lambda-go
// function, built with the same flags as the pipeline's binaries.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, map[string]any) (string, error) { return "hello", nil })
}
