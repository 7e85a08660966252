package batch

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// BenchmarkProcess measures a batch whose handler spends 2 ms per record (a stand-in for two
// DynamoDB writes), at the default bound of 10. Records/s is the figure to compare with the
// event source's batch size and the function timeout.
func BenchmarkProcess(b *testing.B) {
	slow := func(ctx context.Context, _ events.SQSMessage) error {
		t := time.NewTimer(2 * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, size := range []int{10, 100} {
		std := stdEvent(ids(size)...)
		var specs []string
		for i := range size {
			specs = append(specs, fmt.Sprintf("g%d:m%03d", i%10, i)) // 10 groups
		}
		fifo := fifoEvent(specs...)
		for _, bc := range []struct {
			name string
			ev   events.SQSEvent
		}{{"standard", std}, {"fifo-10-groups", fifo}} {
			b.Run(fmt.Sprintf("%s/%d", bc.name, size), func(b *testing.B) {
				p, err := New(Options{Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				for b.Loop() {
					rep := p.Process(ctx, bc.ev, slow)
					if n := rep.Count(StatusSucceeded); n != size {
						b.Fatalf("%d of %d succeeded", n, size)
					}
				}
				b.ReportMetric(float64(size*b.N)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}
