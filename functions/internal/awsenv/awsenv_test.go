package awsenv

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func lookupFrom(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// lambdaEnv is what the Lambda runtime sets for every function, plus extra.
func lambdaEnv(extra map[string]string) map[string]string {
	env := map[string]string{
		envRegion: "eu-west-1", envDefaultRegion: "eu-west-1",
		envAccessKeyID: "AKIDEXAMPLE", envSecretAccessKey: "secret", envSessionToken: "token",
		envExecutionEnvironment: "AWS_Lambda_provided.al2023",
	}
	for k, v := range extra {
		if v == "<unset>" {
			delete(env, k)
		} else {
			env[k] = v
		}
	}
	return env
}

func TestLoad(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		service  string
		region   string
		endpoint string // "" = none
		session  string
		account  string
	}{
		{name: "lambda environment", env: lambdaEnv(nil), service: serviceDynamoDB, region: "eu-west-1", session: "token"},
		{name: "AWS_DEFAULT_REGION when AWS_REGION is unset", env: lambdaEnv(map[string]string{envRegion: "<unset>", envDefaultRegion: "us-west-2"}),
			service: serviceSQS, region: "us-west-2", session: "token"},
		{name: "AWS_REGION wins over AWS_DEFAULT_REGION", env: lambdaEnv(map[string]string{envDefaultRegion: "us-west-2"}),
			service: serviceSQS, region: "eu-west-1", session: "token"},
		{name: "session token optional (long-term keys, local runs)", env: lambdaEnv(map[string]string{envSessionToken: "<unset>"}),
			service: serviceDynamoDB, region: "eu-west-1"},
		{name: "AWS_ACCOUNT_ID carried on the credentials", env: lambdaEnv(map[string]string{envAccountID: "123456789012"}),
			service: serviceDynamoDB, region: "eu-west-1", session: "token", account: "123456789012"},
		{name: "AWS_ENDPOINT_URL_DYNAMODB", env: lambdaEnv(map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000"}),
			service: serviceDynamoDB, region: "eu-west-1", session: "token", endpoint: "http://127.0.0.1:8000"},
		{name: "AWS_ENDPOINT_URL_SQS", env: lambdaEnv(map[string]string{"AWS_ENDPOINT_URL_SQS": "http://localhost:9324"}),
			service: serviceSQS, region: "eu-west-1", session: "token", endpoint: "http://localhost:9324"},
		{name: "service variable of another service is ignored", env: lambdaEnv(map[string]string{"AWS_ENDPOINT_URL_SQS": "http://localhost:9324"}),
			service: serviceDynamoDB, region: "eu-west-1", session: "token"},
		{name: "AWS_ENDPOINT_URL for every service", env: lambdaEnv(map[string]string{envEndpointURL: "https://local.test:4566"}),
			service: serviceSQS, region: "eu-west-1", session: "token", endpoint: "https://local.test:4566"},
		{name: "service variable wins over AWS_ENDPOINT_URL", env: lambdaEnv(map[string]string{
			envEndpointURL: "https://local.test:4566", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000"}),
			service: serviceDynamoDB, region: "eu-west-1", session: "token", endpoint: "http://127.0.0.1:8000"},
		{name: "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", env: lambdaEnv(map[string]string{
			envEndpointURL: "https://local.test:4566", "AWS_ENDPOINT_URL_DYNAMODB": "not even a URL", envIgnoreEndpointURLs: "true"}),
			service: serviceDynamoDB, region: "eu-west-1", session: "token"},
		{name: "FIPS with an endpoint override that is ignored", env: lambdaEnv(map[string]string{
			envUseFIPSEndpoint: "true", envEndpointURL: "http://127.0.0.1:4566", envIgnoreEndpointURLs: "true"}),
			service: serviceDynamoDB, region: "eu-west-1", session: "token"},
		{name: "account endpoint required with an account", env: lambdaEnv(map[string]string{
			envAccountIDEndpoint: "required", envAccountID: "123456789012"}),
			service: serviceDynamoDB, region: "eu-west-1", session: "token", account: "123456789012"},
		{name: "blank values count as unset", env: lambdaEnv(map[string]string{envRegion: "  ", "AWS_ENDPOINT_URL_SQS": ""}),
			service: serviceSQS, region: "eu-west-1", session: "token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(lookupFrom(tc.env), tc.service)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if cfg.Region != tc.region {
				t.Errorf("Region = %q, want %q", cfg.Region, tc.region)
			}
			if got := aws.ToString(cfg.BaseEndpoint); got != tc.endpoint {
				t.Errorf("BaseEndpoint = %q, want %q", got, tc.endpoint)
			}
			creds, err := cfg.Credentials.Retrieve(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", SessionToken: tc.session,
				AccountID: tc.account, Source: "EnvConfigCredentials"}
			if creds != want {
				t.Errorf("credentials = %+v, want %+v", creds, want)
			}
			if cfg.RuntimeEnvironment.EnvironmentIdentifier != "AWS_Lambda_provided.al2023" {
				t.Errorf("EnvironmentIdentifier = %q", cfg.RuntimeEnvironment.EnvironmentIdentifier)
			}
			if cfg.Retryer != nil {
				t.Error("the retryer must be left to the service client's default")
			}
			if c := cfg.HTTPClient; c == nil || reflect.TypeOf(c).PkgPath() != "github.com/idempotent-sqs/pipeline/internal/sdkhttp" {
				t.Errorf("HTTP client %T, want sdkhttp's (the SDK's default, its answers not cut off by a connection this process closed)", c)
			}
		})
	}
}

func TestLoadErrorsNameTheVariable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		service string
		want    []string
	}{
		{name: "no region", env: lambdaEnv(map[string]string{envRegion: "<unset>", envDefaultRegion: "<unset>"}),
			want: []string{"AWS_REGION is not set"}},
		{name: "no access key", env: lambdaEnv(map[string]string{envAccessKeyID: "<unset>"}),
			want: []string{"AWS_ACCESS_KEY_ID is not set"}},
		{name: "no secret key", env: lambdaEnv(map[string]string{envSecretAccessKey: ""}),
			want: []string{"AWS_SECRET_ACCESS_KEY is not set"}},
		{name: "endpoint not a URL", service: serviceDynamoDB, env: lambdaEnv(map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "127.0.0.1:8000"}),
			want: []string{`AWS_ENDPOINT_URL_DYNAMODB="127.0.0.1:8000" is not an http(s) URL`}},
		{name: "generic endpoint without host", service: serviceSQS, env: lambdaEnv(map[string]string{envEndpointURL: "http://"}),
			want: []string{`AWS_ENDPOINT_URL="http://" is not an http(s) URL`}},
		{name: "FIPS not a boolean", env: lambdaEnv(map[string]string{envUseFIPSEndpoint: "yes"}),
			want: []string{`AWS_USE_FIPS_ENDPOINT="yes": want true or false`}},
		{name: "dual-stack not a boolean", env: lambdaEnv(map[string]string{envUseDualStackEndpoint: "1"}),
			want: []string{`AWS_USE_DUALSTACK_ENDPOINT="1": want true or false`}},
		{name: "FIPS with an endpoint override", service: serviceDynamoDB, env: lambdaEnv(map[string]string{
			envUseFIPSEndpoint: "true", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000"}),
			want: []string{`AWS_USE_FIPS_ENDPOINT=true with AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:8000"`}},
		{name: "dual-stack with the generic endpoint override", service: serviceSQS, env: lambdaEnv(map[string]string{
			envUseDualStackEndpoint: "TRUE", envEndpointURL: "http://127.0.0.1:9324"}),
			want: []string{`AWS_USE_DUALSTACK_ENDPOINT=true with AWS_ENDPOINT_URL="http://127.0.0.1:9324"`}},
		{name: "account endpoint mode not one of the SDK's", env: lambdaEnv(map[string]string{envAccountIDEndpoint: "Disabled"}),
			want: []string{`AWS_ACCOUNT_ID_ENDPOINT_MODE="Disabled": want preferred, required or disabled`}},
		{name: "account endpoint required without an account", env: lambdaEnv(map[string]string{envAccountIDEndpoint: "required"}),
			want: []string{"AWS_ACCOUNT_ID_ENDPOINT_MODE=required but AWS_ACCOUNT_ID is not set"}},
		{name: "CA bundle refused, not ignored", env: lambdaEnv(map[string]string{envCABundle: "/opt/ca.pem"}),
			want: []string{`AWS_CA_BUNDLE="/opt/ca.pem": a custom certificate bundle is not supported by this function's AWS client (it would connect without it)`}},
		{name: "empty environment: every problem at once", service: serviceSQS, env: map[string]string{},
			want: []string{"AWS_REGION is not set", "AWS_ACCESS_KEY_ID is not set", "AWS_SECRET_ACCESS_KEY is not set"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(lookupFrom(tc.env), tc.service)
			if !errors.Is(err, errConfig) {
				t.Fatalf("err = %v, want ErrConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// recorder answers every request with a service error and keeps what the SDK sent, so the
// configuration is checked through real SDK clients: endpoint, region and signing key.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write([]byte(`{"__type":"com.amazon.coral.validate#ValidationException","message":"recorded"}`))
}

func TestSDKClientsUseTheEnvironment(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	ctx := context.Background()

	ddbCfg, err := Load(lookupFrom(lambdaEnv(map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": srv.URL})), serviceDynamoDB)
	if err != nil {
		t.Fatal(err)
	}
	_, err = dynamodb.NewFromConfig(ddbCfg, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }).
		ListTables(ctx, &dynamodb.ListTablesInput{})
	if err == nil || !strings.Contains(err.Error(), "recorded") {
		t.Fatalf("DynamoDB call: err = %v, want the recorder's error", err)
	}
	sqsCfg, err := Load(lookupFrom(lambdaEnv(map[string]string{envEndpointURL: srv.URL})), serviceSQS)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sqs.NewFromConfig(sqsCfg, func(o *sqs.Options) { o.RetryMaxAttempts = 1 }).
		ListQueues(ctx, &sqs.ListQueuesInput{})
	if err == nil {
		t.Fatal("SQS call: want the recorder's error")
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) != 2 {
		t.Fatalf("%d requests reached the endpoint override, want 2", len(rec.reqs))
	}
	for i, svc := range []string{"dynamodb", "sqs"} {
		auth := rec.reqs[i].Header.Get("Authorization")
		if !strings.Contains(auth, "Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/eu-west-1/"+svc+"/aws4_request") {
			t.Errorf("%s request Authorization = %q, want signed with the env key for eu-west-1", svc, auth)
		}
		if tok := rec.reqs[i].Header.Get("X-Amz-Security-Token"); tok != "token" {
			t.Errorf("%s request session token = %q", svc, tok)
		}
	}
}

// hostRecorder is an HTTP client that keeps the host of each request and fails it, so the
// endpoint an SDK client resolves is seen without any network.
type hostRecorder struct{ hosts []string }

func (h *hostRecorder) Do(req *http.Request) (*http.Response, error) {
	h.hosts = append(h.hosts, req.URL.Host)
	return nil, errors.New("recorded")
}

// AWS_USE_FIPS_ENDPOINT and AWS_USE_DUALSTACK_ENDPOINT reach the service clients' endpoint
// resolution, as with the SDK's own loader: a FIPS setting given through the construct's
// Environment is honoured, not silently ignored.
func TestFIPSAndDualStackEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name          string
		env           map[string]string
		dynamo, queue string
	}{
		{"regional", map[string]string{}, "dynamodb.eu-west-1.amazonaws.com", "sqs.eu-west-1.amazonaws.com"},
		{"FIPS", map[string]string{envUseFIPSEndpoint: "true"}, "dynamodb-fips.eu-west-1.amazonaws.com", "sqs-fips.eu-west-1.amazonaws.com"},
		{"FIPS false", map[string]string{envUseFIPSEndpoint: "FALSE"}, "dynamodb.eu-west-1.amazonaws.com", "sqs.eu-west-1.amazonaws.com"},
		{"dual-stack", map[string]string{envUseDualStackEndpoint: "true"}, "dynamodb.eu-west-1.api.aws", "sqs.eu-west-1.api.aws"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rec := &hostRecorder{}
			ddbCfg, err := Load(lookupFrom(lambdaEnv(tc.env)), serviceDynamoDB)
			if err != nil {
				t.Fatal(err)
			}
			ddbCfg.HTTPClient = rec
			_, _ = dynamodb.NewFromConfig(ddbCfg, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }).ListTables(ctx, &dynamodb.ListTablesInput{})
			sqsCfg, err := Load(lookupFrom(lambdaEnv(tc.env)), serviceSQS)
			if err != nil {
				t.Fatal(err)
			}
			sqsCfg.HTTPClient = rec
			_, _ = sqs.NewFromConfig(sqsCfg, func(o *sqs.Options) { o.RetryMaxAttempts = 1 }).ListQueues(ctx, &sqs.ListQueuesInput{})
			if len(rec.hosts) != 2 || rec.hosts[0] != tc.dynamo || rec.hosts[1] != tc.queue {
				t.Errorf("hosts = %q, want [%s %s]", rec.hosts, tc.dynamo, tc.queue)
			}
		})
	}
}
