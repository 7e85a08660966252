package standin

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-sqs/pipeline/internal/lambdart"
	"github.com/idempotent-sqs/pipeline/internal/standin/alarm"
)

// InvokeAsync stands in for Lambda's asynchronous invocation (Scheduler's) of function of
// deployment d as its EventInvokeConfig sets it up: on a failure Lambda retries up to
// MaximumRetryAttempts times, about one and then two minutes apart (on clock, the alarm
// clock), and then sends an invocation record to the on-failure destination. invoke runs
// one attempt. It returns the attempts made and the last failure (nil when an attempt
// succeeded). A function without an EventInvokeConfig is an error: the template does not
// say how Lambda retries it.
func InvokeAsync(ctx context.Context, d *Deployment, sq *sqs.Client, function string, payload []byte, clock alarm.Clock,
	invoke func(context.Context, []byte) (lambdart.Result, error), functionARN string) (int, error) {
	cfg, ok := d.Template.InvokeConfigs[function]
	if !ok {
		return 0, fmt.Errorf("function %s has no EventInvokeConfig: the template does not say how Lambda retries it", function)
	}
	var last error
	for i := 0; i <= cfg.maxRetries; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return i, ctx.Err()
			case <-time.After(clock.WallDuration(time.Duration(i) * time.Minute)):
			}
		}
		res, err := invoke(ctx, payload)
		if err == nil && res.FunctionError == nil {
			return i + 1, nil
		}
		last = err
		if res.FunctionError != nil {
			last = res.FunctionError
		}
		if ctx.Err() != nil {
			return i + 1, last
		}
	}
	if cfg.OnFailureQueue != "" {
		var request any
		_ = json.Unmarshal(payload, &request)
		record, _ := json.Marshal(map[string]any{
			"version":   "1.0",
			"timestamp": time.Now().UTC().Format(time.RFC3339Nano),
			"requestContext": map[string]any{"requestId": fmt.Sprintf("local-%d", time.Now().UnixNano()), "functionArn": functionARN,
				"condition": "RetriesExhausted", "approximateInvokeCount": cfg.maxRetries + 1},
			"requestPayload":  request,
			"responseContext": map[string]any{"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
			"responsePayload": map[string]any{"errorMessage": last.Error()},
		})
		in := &sqs.SendMessageInput{QueueUrl: aws.String(d.QueueURL[cfg.OnFailureQueue]), MessageBody: aws.String(string(record))}
		if d.Template.Queues[cfg.OnFailureQueue].Fifo() {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String(function), aws.String(strconv.FormatInt(time.Now().UnixNano(), 10))
		}
		if _, err := sq.SendMessage(ctx, in); err != nil {
			return cfg.maxRetries + 1, fmt.Errorf("on-failure destination of %s: %w (after %v)", function, err, last)
		}
	}
	return cfg.maxRetries + 1, last
}
