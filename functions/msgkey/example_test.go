package msgkey_test

import (
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-sqs/pipeline/functions/msgkey"
)

func ExampleSource_Extract() {
	src, err := msgkey.ParseSource("body:idempotencyKey") // once, at cold start
	if err != nil {
		panic(err) // configuration error: fail the cold start
	}
	for _, body := range []string{`{"idempotencyKey":"order-42","qty":1}`, `{"idempotencyKey":42}`} {
		key, err := src.Extract(events.SQSMessage{Body: body}, 256*1024)
		var bad *msgkey.InputError
		if errors.As(err, &bad) {
			fmt.Println("bad input:", bad.Code, "-", bad.Reason)
			continue
		}
		fmt.Println("key:", key)
	}
	// Output:
	// key: order-42
	// bad input: value_wrong_type - body field "idempotencyKey" is a JSON number, want a string
}

func ExampleDispatchKey() {
	key := msgkey.DispatchKey("nightly-report", "2025-01-02T03:00:00Z", "tenant#7")
	fmt.Println(key)
	fmt.Println(msgkey.DeduplicationID(key))
	fmt.Println(msgkey.DeduplicationID("key with spaces"))
	// Output:
	// nightly-report#2025-01-02T03:00:00Z#tenant%237
	// nightly-report#2025-01-02T03:00:00Z#tenant%237
	// cb640149a6b3ab84e91eb012016691e39f3d51c32c5461623a6c639deb1bc21d
}
