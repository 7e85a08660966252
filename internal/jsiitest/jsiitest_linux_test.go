package jsiitest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/internal/localproc"
)

// TestCloseRemovesTheRuntime: the kernel (node, a child of this process) runs from a
// jsii-runtime.* directory in the temporary directory while a construct lives, and the
// directory is gone after jsii.Close, which Run calls.
func TestCloseRemovesTheRuntime(t *testing.T) {
	app := awscdk.NewApp(nil)
	awscdk.NewStack(app, jsii.String("S"), nil)
	var dir string
	for _, pid := range localproc.Descendants(os.Getpid()) {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		for _, arg := range strings.Split(string(cmdline), "\x00") {
			if rel, err := filepath.Rel(os.TempDir(), arg); err == nil && strings.HasPrefix(rel, "jsii-runtime.") {
				dir = filepath.Join(os.TempDir(), strings.Split(rel, string(filepath.Separator))[0])
			}
		}
	}
	if dir == "" {
		t.Fatalf("no jsii kernel under this process runs from %s/jsii-runtime.*: the test measures nothing", os.TempDir())
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the kernel's runtime directory %s: %v", dir, err)
	}
	jsii.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s after jsii.Close: %v, want it removed", dir, err)
	}
}
