package local

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Each way Start refuses, with the message a user sees, before anything is started.
func TestStartRefuses(t *testing.T) {
	write := func(t *testing.T, dir, name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	noSource := t.TempDir()
	write(t, noSource, "manifest.json", `{"artifacts":{"Billing":{"type":"aws:cloudformation:stack","properties":{"templateFile":"Billing.template.json"}},
	  "Dev":{"type":"cdk:cloud-assembly","properties":{"directoryName":"assembly-Dev"}}}}`)
	write(t, noSource, "Billing.template.json", `{"Resources":{
	  "Q":{"Type":"AWS::SQS::Queue","Properties":{"RedrivePolicy":{"deadLetterTargetArn":{"Fn::GetAtt":["D","Arn"]},"maxReceiveCount":5}}},
	  "D":{"Type":"AWS::SQS::Queue","Properties":{}},
	  "F":{"Type":"AWS::Lambda::Function","Properties":{"Environment":{"Variables":{"IDEMPOTENCY_TABLE_NAME":"t"}}}},
	  "M":{"Type":"AWS::Lambda::EventSourceMapping","Properties":{"EventSourceArn":{"Fn::GetAtt":["Q","Arn"]},"FunctionName":{"Ref":"F"}}}}}`)
	if err := os.Mkdir(filepath.Join(noSource, "assembly-Dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(noSource, "assembly-Dev"), "manifest.json", `{"artifacts":{"DevBilling1234":{"type":"aws:cloudformation:stack","displayName":"Dev/Billing","properties":{"templateFile":"DevBilling1234.template.json"}}}}`)

	noPipeline := t.TempDir()
	write(t, noPipeline, "manifest.json", `{"artifacts":{"Shared":{"type":"aws:cloudformation:stack","properties":{"templateFile":"Shared.template.json"}}}}`)
	write(t, noPipeline, "Shared.template.json", `{"Resources":{"T":{"Type":"AWS::SNS::Topic","Properties":{}}}}`)

	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"no pipeline", Options{Assembly: noPipeline}, "local: no pipeline to run: none of the stacks Shared has an SQS event source mapping"},
		{"visibility in milliseconds", Options{Assembly: noSource, VisibilityTimeout: 500 * time.Millisecond},
			"local: Options.VisibilityTimeout 500ms: want whole seconds from 1s to 12h (SQS's range), or 0 for the consumer's timeout plus its mapping's batching window"},
		{"visibility over 12 hours", Options{Assembly: noSource, VisibilityTimeout: 13 * time.Hour}, "local: Options.VisibilityTimeout 13h0m0s: want whole seconds"},
		{"no assembly", Options{}, "local: Options.Assembly is empty: set it to the directory `cdk synth` wrote (cdk.out)"},
		{"not an assembly", Options{Assembly: t.TempDir()}, "is not a cloud assembly (no manifest.json): run `cdk synth` (or `cdk synth -o DIR`) first"},
		{"unknown stack", Options{Assembly: noSource, Stacks: []string{"Prod/Billing"}}, `local: no stack "Prod/Billing" in the cloud assembly; it has Billing, Dev/Billing`},
		{"no source", Options{Assembly: noSource, Stacks: []string{"Billing"}},
			"local: stack Billing: function F: the cloud assembly does not say where its source is; synthesize it again (`cdk synth`) with this version of the constructs, which records it"},
	} {
		kit, err := Start(context.Background(), tc.opts)
		if err == nil {
			kit.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// Java missing or too old, and jars that cannot be fetched, are errors naming what to
// install. PATH holds only a fake java here, so mvn is missing too.
func TestBackendsRefuse(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	if err := checkJava(context.Background()); err == nil || !strings.Contains(err.Error(), "java is not on PATH: DynamoDB Local and ElasticMQ run on the JVM; install a JDK 17 or newer") {
		t.Errorf("no java: %v", err)
	}
	fake := func(version string) {
		if err := os.WriteFile(filepath.Join(bin, "java"), []byte("#!/bin/sh\necho '"+version+"' >&2\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fake(`openjdk version "1.8.0_392"`)
	if err := checkJava(context.Background()); err == nil || !strings.Contains(err.Error(), "is Java 8; DynamoDB Local and ElasticMQ need Java 17 or newer") {
		t.Errorf("Java 8: %v", err)
	}
	fake(`openjdk version "11.0.2" 2019-01-15`)
	if err := checkJava(context.Background()); err == nil || !strings.Contains(err.Error(), "is Java 11;") {
		t.Errorf("Java 11: %v", err)
	}
	fake(`openjdk version "17.0.9" 2023-10-17`)
	if err := checkJava(context.Background()); err != nil {
		t.Errorf("Java 17: %v", err)
	}

	t.Setenv("DYNAMODB_LOCAL_DIR", "")
	t.Setenv("ELASTICMQ_DIR", "")
	t.Chdir(t.TempDir()) // no checkout's .cache above
	if err := Install(context.Background(), io.Discard); err == nil || !strings.Contains(err.Error(),
		"dynamodb-local-3.1.0 is not installed and Maven (mvn) is not on PATH to fetch it: install Maven 3.6+") {
		t.Errorf("no mvn: %v", err)
	}
	empty := t.TempDir()
	t.Setenv("DYNAMODB_LOCAL_DIR", empty)
	if err := Install(context.Background(), io.Discard); err == nil || !strings.Contains(err.Error(),
		"local: DYNAMODB_LOCAL_DIR="+empty+" holds no DynamoDBLocal*.jar") {
		t.Errorf("an empty DYNAMODB_LOCAL_DIR: %v", err)
	}
}

func TestPipelineName(t *testing.T) {
	for path, want := range map[string]string{
		"/Stack/Standard/Consumer/Resource/Resource":     "Standard",
		"/Stack/Orders/Consumer/Resource/Resource":       "Orders",
		"/Stack/Billing/Resource/Resource":               "Billing", // consumer.New directly
		"/Stack/Team/Billing/Consumer/Resource/Resource": "Team/Billing",
		"Stack/Refunds/Resource":                         "Refunds", // a function's aws:cdk:path in the template
	} {
		if got := pipelineName(path, "Stack"); got != want {
			t.Errorf("pipelineName(%s) = %q, want %q", path, got, want)
		}
	}
}
