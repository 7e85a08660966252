package health

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
)

// Each mapping's scaling as Lambda reports it: provisioned mode's pollers (and the
// concurrency they reach), a maximum concurrency, or neither.
func TestStatusShowsHowAMappingScales(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"EventSourceMappings":[`+
			`{"UUID":"u-pollers","State":"Enabled","BatchSize":10,"ProvisionedPollerConfig":{"MinimumPollers":2,"MaximumPollers":20}},`+
			`{"UUID":"u-capped","State":"Enabled","BatchSize":10,"ScalingConfig":{"MaximumConcurrency":5}},`+
			`{"UUID":"u-default","State":"Enabled","BatchSize":10}]}`)
	}))
	defer srv.Close()
	rc := &cli.RESTClient{Cfg: aws.Config{Region: "eu-west-1", HTTPClient: srv.Client(),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}, Endpoint: srv.URL}
	ms, err := eventSourceMappings(t.Context(), rc, "consumer")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"u-pollers": "provisioned mode, 2-20 event pollers (up to 200 concurrent invocations)",
		"u-capped":  "maximum concurrency 5",
		"u-default": "no maximum concurrency (Lambda's own scaling, up to 1,250 for a standard queue)",
	}
	if len(ms) != len(want) {
		t.Fatalf("%d mappings, want %d", len(ms), len(want))
	}
	for _, m := range ms {
		if got := m.Scaling(); got != want[m.UUID] {
			t.Errorf("%s: %q, want %q", m.UUID, got, want[m.UUID])
		}
	}
	if b, _ := json.Marshal(ms[0]); !strings.Contains(string(b), `"provisionedPollers":{"minimum":2,"maximum":20}`) {
		t.Errorf("JSON %s lacks provisionedPollers", b)
	}
}
