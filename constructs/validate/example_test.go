package validate_test

import (
	"fmt"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
)

// A CDK app's main defers ExitOnInvalidProps before it builds anything. Had a construct's
// props been invalid, the app would print, on stderr and without a stack trace,
//
//	ProcessingQueue "IdempotentSqsPipeline-prod/Orders/Queue": invalid props:
//	  - MaxReceiveCount: got 0; use a value from 1 to 1000
//
// and exit with status 1. Here every prop is valid, so the app goes on.
func ExampleExitOnInvalidProps() {
	defer validate.ExitOnInvalidProps()

	// In an app: app := awscdk.NewApp(nil); stacks.Build(app, cfg); app.Synth(nil).
	problems := validate.New("ProcessingQueue", "IdempotentSqsPipeline-prod/Orders/Queue")
	problems.Check()
	fmt.Println("synthesized")
	// Output: synthesized
}
