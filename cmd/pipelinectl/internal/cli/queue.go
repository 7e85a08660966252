package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// QueueInfo is what GetQueueAttributes says about a queue.
type QueueInfo struct {
	URL, ARN                   string
	FIFO                       bool
	Visible, InFlight, Delayed int64
	SourceARNs                 []string // the redrive-allow policy's source queues (byQueue)
	RedrivePermission          string
}

// GetQueue reads the attributes of the queue at url that the commands show and check.
func GetQueue(ctx context.Context, api *sqs.Client, url string, opts ...func(*sqs.Options)) (QueueInfo, error) {
	out, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	}, opts...)
	if c := ErrorCode(err); strings.HasSuffix(c, "QueueDoesNotExist") || strings.HasSuffix(c, "NonExistentQueue") {
		return QueueInfo{}, fmt.Errorf("queue %s does not exist in this account and region (%s): check the URL (--queue-url, or the outputs it came from), "+
			"--region and the SQS endpoint; a stack deleted and deployed again has new queue names", url, c[strings.LastIndex(c, "#")+1:])
	}
	if err != nil {
		return QueueInfo{}, fmt.Errorf("queue %s: %w", url, err)
	}
	a := out.Attributes
	n := func(name types.QueueAttributeName) int64 {
		v, _ := strconv.ParseInt(a[string(name)], 10, 64)
		return v
	}
	q := QueueInfo{
		URL: url, ARN: a[string(types.QueueAttributeNameQueueArn)],
		FIFO:     a[string(types.QueueAttributeNameFifoQueue)] == "true" || strings.HasSuffix(url, ".fifo"),
		Visible:  n(types.QueueAttributeNameApproximateNumberOfMessages),
		InFlight: n(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		Delayed:  n(types.QueueAttributeNameApproximateNumberOfMessagesDelayed),
	}
	q.RedrivePermission, q.SourceARNs = parseRedriveAllow(a[string(types.QueueAttributeNameRedriveAllowPolicy)])
	return q, nil
}

// parseRedriveAllow reads a DLQ's RedriveAllowPolicy: its permission and, for byQueue, the
// source queues' ARNs. An absent or unreadable policy gives "" and nil.
func parseRedriveAllow(p string) (permission string, sourceArns []string) {
	var policy struct {
		RedrivePermission string   `json:"redrivePermission"`
		SourceQueueArns   []string `json:"sourceQueueArns"`
	}
	if p == "" || json.Unmarshal([]byte(p), &policy) != nil {
		return "", nil
	}
	return policy.RedrivePermission, policy.SourceQueueArns
}
