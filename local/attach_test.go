package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Attached, the kit says what it needs before it calls anything: a region; and, when the
// endpoint does not answer, which call to where.
func TestAttachNeedsARegionAndAnEndpoint(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	asm := writeAssembly(t, `{"Resources":{`+strings.Replace(userFunction, "%s", `{}`, 1)+`}}`, self)
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	for _, tc := range []struct {
		name   string
		attach Attach
		want   string
	}{
		{"no region", Attach{Endpoint: "http://127.0.0.1:1"}, "local: attach: no region: set Options.Attach.Region or AWS_REGION"},
		{"a session of part of a second", Attach{Endpoint: "http://127.0.0.1:1", Region: "eu-west-1", SessionDuration: 1500 * time.Millisecond},
			"local: Options.Attach.SessionDuration 1.5s: want whole seconds (AWS takes 15m to the role's maximum session duration), or 0 for 15m0s"},
		{"a negative session", Attach{Endpoint: "http://127.0.0.1:1", Region: "eu-west-1", SessionDuration: -time.Hour},
			"local: Options.Attach.SessionDuration -1h0m0s: want whole seconds"},
		{"no endpoint there", Attach{Endpoint: "http://127.0.0.1:1", Region: "eu-west-1"},
			"local: attach: who is calling (sts:GetCallerIdentity at http://127.0.0.1:1): "},
	} {
		kit, err := Start(context.Background(), Options{Assembly: asm, Attach: &tc.attach})
		if err == nil {
			kit.Close()
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}
