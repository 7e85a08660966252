// A consumer main that does not compile: the bundling failure test's entry.
package main

import "github.com/idempotent-sqs/pipeline/functions/consume"

func main() {
	var n int = "not a number"
	consume.Start(nil)
}
