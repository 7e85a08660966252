package outside

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// testdata/shop is an app written as teams write them, with nothing changed for the kit: a
// TableV2 orders table, a refunds table referenced through a CfnParameter with a default,
// a consumer that is a plain GoFunction on aws-lambda-go, and a Stage whose stack maps a
// queue onto a function that exists already. Its module and this checkout are both reached
// through symbolic links, as macOS's /tmp or a devcontainer's /workspace reach them. It
// synthesizes with the CDK CLI, passes its own test on the kit (defaults), and runs with
// `go tool pipelinectl local up --parameter` as the README says, then stops on Ctrl-C.
func TestAnOutsideAppRunsUnchanged(t *testing.T) {
	t.Parallel() // two modules, two kits: they wait on builds and servers, not on each other
	real, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	links := t.TempDir()
	root, work := filepath.Join(links, "checkout"), filepath.Join(links, "work")
	for link, target := range map[string]string{root: real, work: t.TempDir()} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	dir := newModule(t, "shop", work, root, "get")

	start := time.Now()
	synth(t, dir, root)
	fmt.Printf("FIGURE outside app: cdk synth of the shop (bundles its intake consumer and its GoFunction) in %v\n", time.Since(start).Round(100*time.Millisecond))

	start = time.Now()
	out := runOut(t, dir, nil, "go", "test", "-count=1", "-v", "./app/")
	if !strings.Contains(out, "--- PASS: TestShopLocally") {
		t.Fatalf("the shop's own test did not pass:\n%s", out)
	}
	fmt.Printf("FIGURE outside app: its own test on the kit (TableV2, a parameter's default, a GoFunction, an existing function's mapping in a Stage) in %v\n",
		time.Since(start).Round(100*time.Millisecond))

	// pipelinectl from the user's module (newModule added it with go get -tool), as the README
	// says, with another value for the parameter.
	cmd, proc := localUp(t, dir, nil, 4*time.Minute, "--assembly", "cdk.out", "--cron=false",
		"--parameter", "RefundsTableArn=arn:aws:dynamodb:eu-west-1:111122223333:table/refunds-cli")
	b, err := os.ReadFile(filepath.Join(dir, "cdk.out", "local-outputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var outputs map[string]map[string]string
	if err := json.Unmarshal(b, &outputs); err != nil || outputs["Shop"]["RefundsTableName"] != "refunds-cli" {
		t.Errorf("local-outputs.json %s (%v): want Shop.RefundsTableName refunds-cli, from --parameter", b, err)
	}
	want := []string{"Shop/Intake  queue ", "Not run locally: Legacy/Bridge: function orders-legacy (a function the stack does not create), mapped to queue Inbox"}
	if runtime.GOARCH == "amd64" {
		want = append(want, "Shop/Refunds  queue ")
	} else { // GoFunction's default architecture is x86_64
		want = append(want, "Not run locally: Shop: function Refunds")
	}
	for _, w := range want {
		if !strings.Contains(proc.Output(), w) {
			t.Errorf("local up printed no %q:\n%s", w, proc.Output())
		}
	}
	stopWithCtrlC(t, cmd, proc, 2)
}
