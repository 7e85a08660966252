package heartbeat

import (
	"os"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/queue"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
	"github.com/idempotent-sqs/pipeline/internal/jsiitest"
)

// fixture is one stack with a processing queue and a heartbeat on it, and its template.
type fixture struct {
	stack awscdk.Stack
	q     queue.ProcessingQueue
	hb    Heartbeat
	key   awskms.Key // nil: the queue's default encryption
	tmpl  assertions.Template
}

var (
	// standard is every default: a standard queue with SQS-managed encryption.
	standard fixture
	// fifo is a FIFO queue under a customer managed key, a 1-minute heartbeat in a given
	// schedule group.
	fifo fixture
	// scratch is for validation tests, which panic before creating anything.
	scratch awscdk.Stack
)

func TestMain(m *testing.M) {
	app := cdktest.NewApp()
	cdktest.AddNagPacks(app)

	standard.stack = cdktest.NewStack(app, "Standard")
	standard.q = queue.NewProcessingQueue(standard.stack, "Queue", nil)
	standard.hb = NewHeartbeat(standard.stack, "Heartbeat", &HeartbeatProps{Queue: standard.q})

	fifo.stack = cdktest.NewStack(app, "Fifo")
	fifo.key = awskms.NewKey(fifo.stack, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	fifo.q = queue.NewProcessingQueue(fifo.stack, "Queue", &queue.ProcessingQueueProps{Fifo: true, EncryptionKey: fifo.key})
	group := awsscheduler.NewScheduleGroup(fifo.stack, jsii.String("Group"), nil)
	fifo.hb = NewHeartbeat(fifo.stack, "Heartbeat", &HeartbeatProps{Queue: fifo.q, Every: time.Minute, ScheduleGroup: group})

	standard.tmpl = assertions.Template_FromStack(standard.stack, nil)
	fifo.tmpl = assertions.Template_FromStack(fifo.stack, nil)
	scratch = cdktest.NewStack(cdktest.NewApp(), "Scratch")
	os.Exit(jsiitest.Run(m))
}
