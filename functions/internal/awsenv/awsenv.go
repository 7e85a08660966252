// Package awsenv builds the aws.Config of one service client from the environment Lambda
// gives every function, and nothing else. It replaces config.LoadDefaultConfig in the Lambda
// mains: that loader links the SSO, SSO-OIDC, STS, sign-in and IMDS clients and the shared
// config file parser (about 0.9 MiB of a stripped arm64 binary) for credential sources a
// Lambda function never uses.
//
// What it reads, through the lookup function given (os.LookupEnv in main):
//   - AWS_REGION, else AWS_DEFAULT_REGION: the region (required).
//   - AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (required), AWS_SESSION_TOKEN and
//     AWS_ACCOUNT_ID (optional): static credentials, which is what Lambda provides for the
//     lifetime of an execution environment.
//   - AWS_ENDPOINT_URL_<SERVICE> (for example AWS_ENDPOINT_URL_DYNAMODB), else
//     AWS_ENDPOINT_URL: the endpoint override for local runs (DynamoDB Local, an SQS-compatible
//     server), ignored when AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is "true", as in the SDK.
//   - AWS_USE_FIPS_ENDPOINT and AWS_USE_DUALSTACK_ENDPOINT ("true" or "false", any case): the
//     FIPS 140 and dual-stack (IPv6) endpoints, as the SDK reads them. They are security and
//     network settings a regulated deployment relies on, so they are honoured, never ignored.
//     With an endpoint override they are refused at start: the SDK would fail every call
//     ("FIPS and custom endpoint are not supported").
//   - AWS_ACCOUNT_ID_ENDPOINT_MODE ("preferred", "required" or "disabled", as the SDK spells
//     them): whether DynamoDB uses the account-based endpoint (<account>.ddb.<region>...)
//     when AWS_ACCOUNT_ID is set. It picks the host the function connects to, so it is
//     honoured; "required" without AWS_ACCOUNT_ID is refused at start, as every call would fail.
//   - AWS_EXECUTION_ENV: the execution environment reported in the User-Agent, as the SDK does.
//
// Refused, with an error naming it (the function would otherwise run without it, silently):
// AWS_CA_BUNDLE (a custom certificate authority for TLS).
//
// Behaviour that differs from config.LoadDefaultConfig, on purpose: no shared config or
// credentials file (AWS_PROFILE, AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE; so a
// use_fips_endpoint or ca_bundle written in a profile does not apply: set the variable), no
// SSO, web identity, process, container or IMDS credentials, and none of the SDK's tuning
// variables (AWS_MAX_ATTEMPTS, AWS_RETRY_MODE, AWS_DEFAULTS_MODE, AWS_SDK_UA_APP_ID,
// AWS_ENABLE_ENDPOINT_DISCOVERY, ...: the idempotency store and the dispatcher retry on their
// own terms, see their packages). The retryer is the service client's default; the HTTP
// client is the SDK's default behind internal/sdkhttp, which keeps an answer from being cut
// off by a connection the function itself closed ("use of closed network connection"). TestSDKVariables holds each of these statements to config.LoadDefaultConfig.
// Outside Lambda, export the region and credentials (for example
// `aws configure export-credentials --format env`).
package awsenv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/idempotent-sqs/pipeline/internal/sdkhttp"
)

// Environment variables read by Load.
const (
	envRegion               = "AWS_REGION"
	envDefaultRegion        = "AWS_DEFAULT_REGION"
	envAccessKeyID          = "AWS_ACCESS_KEY_ID"
	envSecretAccessKey      = "AWS_SECRET_ACCESS_KEY"
	envSessionToken         = "AWS_SESSION_TOKEN"
	envAccountID            = "AWS_ACCOUNT_ID"
	envEndpointURL          = "AWS_ENDPOINT_URL"
	envIgnoreEndpointURLs   = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"
	envExecutionEnvironment = "AWS_EXECUTION_ENV"
	envUseFIPSEndpoint      = "AWS_USE_FIPS_ENDPOINT"
	envUseDualStackEndpoint = "AWS_USE_DUALSTACK_ENDPOINT"
	envAccountIDEndpoint    = "AWS_ACCOUNT_ID_ENDPOINT_MODE"
	envCABundle             = "AWS_CA_BUNDLE"
)

// Service identifiers for Load: the suffix of the service's AWS_ENDPOINT_URL_<SERVICE>
// variable (the SDK's service id, upper case, spaces as underscores).
const (
	serviceDynamoDB = "DYNAMODB"
	serviceSQS      = "SQS"
)

// errConfig is wrapped by every error Load returns.
var errConfig = errors.New("invalid AWS environment")

// credentialSource is what the User-Agent and aws.Credentials.Source report, as the SDK's own
// environment credentials do.
const credentialSource = "EnvConfigCredentials"

// Load returns the configuration for the client of one service (DynamoDB, SQS, or another
// SDK service id) from the environment. Every missing or unusable variable is reported in one
// error that names it and wraps errConfig.
func Load(lookup func(string) (string, bool), service string) (aws.Config, error) {
	l := &loader{get: func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}}
	cfg := aws.Config{Region: l.region()}
	creds := l.credentials()
	cfg.Credentials = staticCredentials(creds)
	cfg.BaseEndpoint, cfg.ConfigSources = l.endpoints(service)
	if env := l.get(envExecutionEnvironment); env != "" {
		cfg.RuntimeEnvironment.EnvironmentIdentifier = aws.ExecutionEnvironmentID(env)
	}
	cfg.AccountIDEndpointMode = l.accountIDEndpointMode(creds.AccountID)
	if v := l.get(envCABundle); v != "" {
		l.problem("%s=%q: a custom certificate bundle is not supported by this function's AWS client "+
			"(it would connect without it); remove it, or build your function's clients with config.LoadDefaultConfig", envCABundle, v)
	}
	if len(l.problems) > 0 {
		return aws.Config{}, fmt.Errorf("%w: %s", errConfig, strings.Join(l.problems, "; "))
	}
	cfg.HTTPClient = sdkhttp.Wrap(nil)
	return cfg, nil
}

// loader reads Lambda's variables and collects every problem with them, so that one error
// names them all.
type loader struct {
	get      func(name string) string // the variable, trimmed; "" when unset
	problems []string
}

func (l *loader) problem(format string, args ...any) {
	l.problems = append(l.problems, fmt.Sprintf(format, args...))
}

// region is AWS_REGION, else AWS_DEFAULT_REGION.
func (l *loader) region() string {
	region := cmp.Or(l.get(envRegion), l.get(envDefaultRegion))
	if region == "" {
		l.problem("%s is not set (Lambda sets it; for a local run export %s=us-east-1)", envRegion, envRegion)
	}
	return region
}

// credentials are the execution role's, from the variables Lambda sets.
func (l *loader) credentials() aws.Credentials {
	creds := aws.Credentials{
		AccessKeyID:     l.get(envAccessKeyID),
		SecretAccessKey: l.get(envSecretAccessKey),
		SessionToken:    l.get(envSessionToken),
		AccountID:       l.get(envAccountID),
		Source:          credentialSource,
	}
	for _, v := range []struct{ name, value string }{
		{envAccessKeyID, creds.AccessKeyID}, {envSecretAccessKey, creds.SecretAccessKey},
	} {
		if v.value == "" {
			l.problem("%s is not set (Lambda sets it from the execution role; shared config files and profiles are not read)", v.name)
		}
	}
	return creds
}

// endpoints are service's endpoint override (nil: the SDK resolves the regional endpoint)
// and the FIPS and dual-stack settings, as config sources: the service clients read these
// two from the config sources, as from the SDK's loader.
func (l *loader) endpoints(service string) (*string, []any) {
	endpointVar, endpoint, err := endpointFor(l.get, service)
	if err != nil {
		l.problems = append(l.problems, err.Error())
	}
	var ep endpointSettings
	for _, v := range []struct {
		name string
		dst  *bool
	}{{envUseFIPSEndpoint, &ep.fips}, {envUseDualStackEndpoint, &ep.dualStack}} {
		switch value := strings.ToLower(l.get(v.name)); value {
		case "":
		case "true", "false":
			*v.dst = value == "true"
		default:
			l.problem("%s=%q: want true or false", v.name, l.get(v.name))
		}
	}
	if endpoint == "" {
		return nil, []any{ep}
	}
	// The endpoint rules refuse both with a custom endpoint on every call; say it once, here.
	for _, v := range []struct {
		name string
		on   bool
	}{{envUseFIPSEndpoint, ep.fips}, {envUseDualStackEndpoint, ep.dualStack}} {
		if v.on {
			l.problem("%s=true with %s=%q: the SDK has no FIPS or dual-stack form of a custom endpoint "+
				"(every call would fail); unset one of them", v.name, endpointVar, endpoint)
		}
	}
	return aws.String(endpoint), []any{ep}
}

// accountIDEndpointMode is AWS_ACCOUNT_ID_ENDPOINT_MODE; required needs the account id.
func (l *loader) accountIDEndpointMode(accountID string) aws.AccountIDEndpointMode {
	switch mode := aws.AccountIDEndpointMode(l.get(envAccountIDEndpoint)); mode {
	case aws.AccountIDEndpointModeUnset, aws.AccountIDEndpointModePreferred, aws.AccountIDEndpointModeDisabled:
		return mode
	case aws.AccountIDEndpointModeRequired:
		if accountID == "" {
			l.problem("%s=required but %s is not set (every call would fail)", envAccountIDEndpoint, envAccountID)
		}
		return mode
	default:
		l.problem("%s=%q: want preferred, required or disabled", envAccountIDEndpoint, mode)
		return ""
	}
}

// endpointFor returns the endpoint override for service and the variable it came from:
// AWS_ENDPOINT_URL_<SERVICE>, else AWS_ENDPOINT_URL, else "" (the SDK resolves the regional
// endpoint).
func endpointFor(get func(string) string, service string) (name, value string, err error) {
	if strings.EqualFold(get(envIgnoreEndpointURLs), "true") {
		return "", "", nil
	}
	name = envEndpointURL
	if service != "" {
		name = envEndpointURL + "_" + strings.ToUpper(strings.ReplaceAll(service, " ", "_"))
		value = get(name)
	}
	if value == "" {
		name, value = envEndpointURL, get(envEndpointURL)
	}
	if value == "" {
		return "", "", nil
	}
	u, err := url.Parse(value)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return name, "", fmt.Errorf("%s=%q is not an http(s) URL with a host (for example http://127.0.0.1:8000)", name, value)
	}
	return name, value, nil
}

// endpointSettings gives the service clients AWS_USE_FIPS_ENDPOINT and
// AWS_USE_DUALSTACK_ENDPOINT (the interfaces of the SDK's config sources).
type endpointSettings struct{ fips, dualStack bool }

func (e endpointSettings) GetUseFIPSEndpoint(context.Context) (aws.FIPSEndpointState, bool, error) {
	if e.fips {
		return aws.FIPSEndpointStateEnabled, true, nil
	}
	return aws.FIPSEndpointStateDisabled, true, nil
}

func (e endpointSettings) GetUseDualStackEndpoint(context.Context) (aws.DualStackEndpointState, bool, error) {
	if e.dualStack {
		return aws.DualStackEndpointStateEnabled, true, nil
	}
	return aws.DualStackEndpointStateDisabled, true, nil
}

// staticCredentials is the provider for credentials that do not change while the process
// lives (what credentials.NewStaticCredentialsProvider does, without linking that module).
type staticCredentials aws.Credentials

func (s staticCredentials) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials(s), nil
}

// ProviderSources reports the source of the credentials in the User-Agent, as the SDK's own
// environment provider does.
func (staticCredentials) ProviderSources() []aws.CredentialSource {
	return []aws.CredentialSource{aws.CredentialSourceEnvVars}
}
