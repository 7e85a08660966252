package awsenv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// What the functions do with an SDK variable, as docs/environment.md's AWS table says it.
const (
	honoured = "honoured" // takes effect as with config.LoadDefaultConfig
	refused  = "refused"  // Load fails naming it
	ignored  = "ignored"  // no effect here, though config.LoadDefaultConfig would change
)

// sdkCase sets env over the Lambda environment ("{dir}" is the directory of sdkFiles); vars
// are the variables it is about: the case without them is what they are compared with.
type sdkCase struct {
	vars  []string
	class string
	env   map[string]string
}

// sdkFiles are shared config and credentials files that turn FIPS on (the setting a regulated
// user might have written in a profile rather than in a variable), and a CA bundle.
var sdkFiles = map[string]string{
	"config":      "[default]\nregion = eu-west-1\n\n[profile fips]\nuse_fips_endpoint = true\n",
	"config-fips": "[default]\nuse_fips_endpoint = true\n",
	"credentials": "[default]\nuse_fips_endpoint = true\n",
	"ca.pem":      "",
}

var sdkCases = []sdkCase{
	{[]string{envUseFIPSEndpoint}, honoured, map[string]string{envUseFIPSEndpoint: "true"}},
	{[]string{envUseDualStackEndpoint}, honoured, map[string]string{envUseDualStackEndpoint: "True"}},
	{[]string{envEndpointURL}, honoured, map[string]string{envEndpointURL: "http://127.0.0.1:4566"}},
	{[]string{"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SQS"}, honoured, map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000", "AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:9324"}},
	{[]string{envIgnoreEndpointURLs}, honoured, map[string]string{envEndpointURL: "http://127.0.0.1:4566", envIgnoreEndpointURLs: "true"}},
	{[]string{envAccountID}, honoured, map[string]string{envAccountID: "123456789012"}},
	{[]string{envAccountIDEndpoint}, honoured, map[string]string{envAccountID: "123456789012", envAccountIDEndpoint: "disabled"}},
	{[]string{envCABundle}, refused, map[string]string{envCABundle: "{dir}/ca.pem"}},
	{[]string{"AWS_PROFILE"}, ignored, map[string]string{"AWS_PROFILE": "fips", "AWS_CONFIG_FILE": "{dir}/config"}},
	{[]string{"AWS_DEFAULT_PROFILE"}, ignored, map[string]string{"AWS_DEFAULT_PROFILE": "fips", "AWS_CONFIG_FILE": "{dir}/config"}},
	{[]string{"AWS_CONFIG_FILE"}, ignored, map[string]string{"AWS_CONFIG_FILE": "{dir}/config-fips"}},
	{[]string{"AWS_SHARED_CREDENTIALS_FILE"}, ignored, map[string]string{"AWS_SHARED_CREDENTIALS_FILE": "{dir}/credentials"}},
	{[]string{"AWS_MAX_ATTEMPTS"}, ignored, map[string]string{"AWS_MAX_ATTEMPTS": "7"}},
	{[]string{"AWS_RETRY_MODE"}, ignored, map[string]string{"AWS_RETRY_MODE": "adaptive"}},
	{[]string{"AWS_DEFAULTS_MODE"}, ignored, map[string]string{"AWS_DEFAULTS_MODE": "in-region"}},
	{[]string{"AWS_SDK_UA_APP_ID"}, ignored, map[string]string{"AWS_SDK_UA_APP_ID": "orders"}},
	{[]string{"AWS_ENABLE_ENDPOINT_DISCOVERY"}, ignored, map[string]string{"AWS_ENABLE_ENDPOINT_DISCOVERY": "true"}},
}

// observation is what a DynamoDB and an SQS client built from one configuration do with one
// call each: where the requests go, how they are signed, and the client options the SDK's
// variables tune.
type observation struct {
	load     string // the configuration's error, if any
	requests []string
	options  []string
}

func (o observation) String() string {
	return fmt.Sprintf("load error %q, requests %q, options %q", o.load, o.requests, o.options)
}

// sameRequests compares what reaches the network, the part that both loaders must agree on
// for an honoured variable (client options differ by design: see the package doc).
func (o observation) sameRequests(p observation) bool {
	return o.load == p.load && slices.Equal(o.requests, p.requests)
}

func (o observation) equal(p observation) bool {
	return o.sameRequests(p) && slices.Equal(o.options, p.options)
}

// requestRecorder is an HTTP client that keeps what identifies each request and fails it,
// so nothing leaves the process.
type requestRecorder struct {
	mu   sync.Mutex // the SDK may send an endpoint discovery request from a goroutine
	seen []string
}

var credentialScope = regexp.MustCompile(`Credential=([^,]+)`)

func (r *requestRecorder) Do(req *http.Request) (*http.Response, error) {
	signed := ""
	if m := credentialScope.FindStringSubmatch(req.Header.Get("Authorization")); m != nil {
		parts := strings.Split(m[1], "/") // key/date/region/service/aws4_request
		if len(parts) == 5 {
			parts[1] = "<date>" // the two loaders' calls may straddle midnight
		}
		signed = strings.Join(parts, "/")
	}
	r.add(fmt.Sprintf("%s %s signed %s token %q", req.Method, req.URL.Host, signed, req.Header.Get("X-Amz-Security-Token")))
	return nil, errNotSent
}

var errNotSent = errors.New("recorded, not sent")

func (r *requestRecorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, s)
}

// call keeps the error of a call that failed before its request was sent (an endpoint the
// SDK refuses to resolve, say).
func (r *requestRecorder) call(service string, err error) {
	if err != nil && !errors.Is(err, errNotSent) {
		r.add(service + ": " + err.Error())
	}
}

func observe(cfgFor func(service string) (aws.Config, error)) observation {
	var o observation
	ctx := context.Background()
	rec := &requestRecorder{}
	ddbCfg, err := cfgFor(serviceDynamoDB)
	if err != nil {
		return observation{load: err.Error()}
	}
	ddbCfg.HTTPClient = rec
	ddb := dynamodb.NewFromConfig(ddbCfg)
	_, err = ddb.ListTables(ctx, &dynamodb.ListTablesInput{}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	rec.call("dynamodb", err)
	sqsCfg, err := cfgFor(serviceSQS)
	if err != nil {
		return observation{load: err.Error()}
	}
	sqsCfg.HTTPClient = rec
	sq := sqs.NewFromConfig(sqsCfg)
	_, err = sq.ListQueues(ctx, &sqs.ListQueuesInput{}, func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
	rec.call("sqs", err)
	rec.mu.Lock()
	o.requests = slices.Clone(rec.seen)
	rec.mu.Unlock()
	for _, opt := range []struct {
		name string
		v    any
	}{
		{"dynamodb", ddb.Options()}, {"sqs", sq.Options()},
	} {
		var max int
		var mode aws.RetryMode
		var appID string
		var defaults aws.DefaultsMode
		var retryer, discovery string
		switch c := opt.v.(type) {
		case dynamodb.Options:
			max, mode, appID, defaults, retryer = c.RetryMaxAttempts, c.RetryMode, c.AppID, c.DefaultsMode, fmt.Sprintf("%T/%d", c.Retryer, c.Retryer.MaxAttempts())
			// Whether the discovery request is sent before the call is up to a goroutine.
			discovery = fmt.Sprintf(", endpoint discovery %d", c.EndpointDiscovery.EnableEndpointDiscovery)
		case sqs.Options:
			max, mode, appID, defaults, retryer = c.RetryMaxAttempts, c.RetryMode, c.AppID, c.DefaultsMode, fmt.Sprintf("%T/%d", c.Retryer, c.Retryer.MaxAttempts())
		}
		o.options = append(o.options, fmt.Sprintf("%s: max attempts %d, retry mode %q, retryer %s, app id %q, defaults mode %q%s",
			opt.name, max, mode, retryer, appID, defaults, discovery))
	}
	return o
}

// withProcessEnv makes the process environment env for config.LoadDefaultConfig, with no
// AWS_* variable of the test's own environment and no shared file found but those of env.
func withProcessEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, "") // restored after the test
			os.Unsetenv(k)
		}
	}
	t.Setenv("HOME", t.TempDir())
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// TestSDKVariables finds out, against the SDK's own loader, what each of the SDK's optional
// variables does to the functions' clients: an honoured one changes what the clients send as
// config.LoadDefaultConfig's clients would, a refused one fails Load naming it, an ignored one
// changes nothing here though it would change the SDK loader's clients (so docs/environment.md's
// "ignored" is a real difference a user needs to know, not a no-op).
func TestSDKVariables(t *testing.T) {
	dir := t.TempDir()
	for name, text := range sdkFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ours := func(env map[string]string) observation {
		return observe(func(service string) (aws.Config, error) { return Load(lookupFrom(env), service) })
	}
	sdks := func(t *testing.T, env map[string]string) observation {
		withProcessEnv(t, env)
		return observe(func(string) (aws.Config, error) { return config.LoadDefaultConfig(context.Background()) })
	}
	t.Run("Lambda environment", func(t *testing.T) {
		env := lambdaEnv(nil)
		if got, sdk := ours(env), sdks(t, env); !got.sameRequests(sdk) || got.load != "" {
			t.Fatalf("the Lambda environment alone:\n ours %v\n  SDK %v", got, sdk)
		}
	})
	for _, tc := range sdkCases {
		t.Run(strings.Join(tc.vars, ","), func(t *testing.T) {
			with, without := map[string]string{}, map[string]string{}
			for k, v := range tc.env {
				v = strings.ReplaceAll(v, "{dir}", dir)
				with[k] = v
				if !slices.Contains(tc.vars, k) {
					without[k] = v
				}
			}
			env, before := lambdaEnv(with), lambdaEnv(without)
			got, ourBase := ours(env), ours(before)
			sdk, sdkBase := sdks(t, env), sdks(t, before)
			switch tc.class {
			case honoured:
				if got.equal(ourBase) || !got.sameRequests(sdk) {
					t.Errorf("not honoured as the SDK does:\n ours %v\n  SDK %v\n without it, ours %v", got, sdk, ourBase)
				}
			case refused:
				for _, v := range tc.vars {
					if !strings.Contains(got.load, v) {
						t.Errorf("Load error %q, want one naming %s", got.load, v)
					}
				}
			case ignored:
				if !got.equal(ourBase) {
					t.Errorf("not ignored:\n ours %v\n without it %v", got, ourBase)
				}
				if sdk.equal(sdkBase) {
					t.Errorf("config.LoadDefaultConfig ignores it too (so it need not be listed):\n SDK %v", sdk)
				}
			default:
				t.Fatalf("class %q", tc.class)
			}
		})
	}
}

// readmeAWSTable returns docs/environment.md's AWS variables table: each variable and what the
// functions do with it.
func readmeAWSTable(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../../docs/environment.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\nAWS variables:")
	if !ok {
		t.Fatal(`docs/environment.md: no paragraph starts with "AWS variables:"`)
	}
	lines := strings.Split(after, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "|") })
	if i < 0 {
		t.Fatal("docs/environment.md: no table after \"AWS variables:\"")
	}
	name := regexp.MustCompile("`(AWS_[A-Z0-9_]+)`")
	table := map[string]string{}
	for _, line := range lines[i+2:] { // past the header and its rule
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			t.Fatalf("docs/environment.md: AWS table row %q: want | variables | class | meaning |", line)
		}
		vars := name.FindAllStringSubmatch(cells[1], -1)
		if len(vars) == 0 {
			t.Errorf("docs/environment.md: AWS table row %q names no AWS_ variable", line)
		}
		for _, v := range vars {
			table[v[1]] = strings.TrimSpace(cells[2])
		}
	}
	return table
}

// docs/environment.md's AWS table says of each variable what TestSDKVariables finds, and lists every
// variable it checks.
func TestREADMEAWSTable(t *testing.T) {
	table := readmeAWSTable(t)
	tested := map[string]string{}
	for _, tc := range sdkCases {
		for _, v := range tc.vars {
			tested[v] = tc.class
		}
	}
	for _, v := range slices.Sorted(maps.Keys(tested)) {
		if got, ok := table[v]; !ok {
			t.Errorf("docs/environment.md's AWS table lacks %s (%s)", v, tested[v])
		} else if got != tested[v] {
			t.Errorf("docs/environment.md's AWS table says %s is %s; TestSDKVariables checks it is %s", v, got, tested[v])
		}
	}
	for _, v := range slices.Sorted(maps.Keys(table)) {
		if _, ok := tested[v]; !ok {
			t.Errorf("docs/environment.md's AWS table lists %s, which TestSDKVariables does not check", v)
		}
	}
}
