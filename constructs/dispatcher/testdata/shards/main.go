// Command shards is the dispatcher function of the package's own-function example: a whole
// Lambda function built on functions/dispatch, which the construct deploys through Entry.
package main

import (
	"context"

	"github.com/idempotent-sqs/pipeline/functions/dispatch"
)

func main() { dispatch.Start(shards{}) }

// shards yields the same items for every repeat of one occurrence.
type shards struct{}

func (shards) Items(ctx context.Context, run dispatch.Run) ([]dispatch.Item, error) {
	return []dispatch.Item{{ID: "shard-1"}, {ID: "shard-2"}}, nil
}
