package netguard

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// The guard sees and refuses what Node sends: https.get (the CDK CLI's telemetry sender and
// notices), fetch (undici, the version check of newer CLIs) and a plain socket, in a child
// process as in the process itself, and in a detached one that outlives it; a Unix socket
// passes.
func TestGuardSeesEveryConnection(t *testing.T) {
	g := New(t)
	script := `
const https = require('https'), net = require('net'), { execFileSync, spawn } = require('child_process');
https.get('https://cdk-cli-telemetry.us-east-1.api.aws/metrics').on('error', (e) => console.log('https:', e.code));
fetch('https://registry.npmjs.org/aws-cdk').catch((e) => console.log('fetch:', (e.cause || e).code));
net.connect(9, '127.0.0.1').on('error', (e) => console.log('net:', e.code));
net.connect('/nonexistent.sock').on('error', (e) => console.log('unix:', e.code));
execFileSync(process.execPath, ['-e', "require('http').get('http://169.254.169.254/latest/meta-data/').on('error', () => {})"]);
spawn(process.execPath, ['-e', "setTimeout(() => require('https').get('https://sts.amazonaws.com/').on('error', () => {}), 1500)"], { detached: true, stdio: 'ignore' }).unref();
`
	cmd := exec.Command("node", "-e", script)
	cmd.Env = append(os.Environ(), g.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	// The detached one connects after node has exited: Wait waits for it.
	if left := g.Wait(time.Minute); len(left) > 0 {
		t.Fatalf("Node processes still running after a minute: %q", left)
	}
	var hosts []string
	for _, a := range g.Attempts() {
		hosts = append(hosts, strings.Fields(a)[0])
	}
	slices.Sort(hosts)
	want := []string{"127.0.0.1:9", "169.254.169.254:80", "cdk-cli-telemetry.us-east-1.api.aws:443", "registry.npmjs.org:443", "sts.amazonaws.com:443"}
	if !slices.Equal(hosts, want) {
		t.Errorf("the guard recorded %q, want %q; node printed:\n%s", hosts, want, out)
	}
	for _, w := range []string{"https: ECONNREFUSED", "net: ECONNREFUSED", "unix: ENOENT"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("node printed %q, want a line %q: refused by the guard (or, for the Unix socket, not touched)", out, w)
		}
	}
}
