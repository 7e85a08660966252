package msgkey

import (
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// BenchmarkExtract measures key extraction from a typical dispatcher body and from a large
// body whose key field comes last (the decoder walks every field before it).
func BenchmarkExtract(b *testing.B) {
	src := Source{Kind: SourceBody, Name: "idempotencyKey"}
	bodies := map[string]string{
		"small": `{"idempotencyKey":"nightly#2025-03-04T05:00:00Z#tenant-1","job":"nightly","period":"2025-03-04T05:00:00Z","itemId":"tenant-1","payload":{"a":1}}`,
		"64KiB": `{"pad":"` + strings.Repeat("x", 64*1024) + `","idempotencyKey":"k"}`,
	}
	for name, body := range bodies {
		b.Run(name, func(b *testing.B) {
			msg := events.SQSMessage{Body: body}
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := src.Extract(msg, 256*1024); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDeduplicationID(b *testing.B) {
	for _, key := range []string{"nightly#2025-03-04T05:00:00Z#tenant-1", strings.Repeat("é", 100)} {
		b.Run(map[bool]string{true: "verbatim", false: "hashed"}[DeduplicationID(key) == key], func(b *testing.B) {
			for b.Loop() {
				DeduplicationID(key)
			}
		})
	}
}
