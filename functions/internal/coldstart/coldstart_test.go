package coldstart

import (
	"errors"
	"strings"
	"testing"
)

func TestBuild(t *testing.T) {
	if got, err := Build("answer", func() (int, error) { return 42, nil }); got != 42 || err != nil {
		t.Errorf("Build = %d, %v", got, err)
	}
	boom := errors.New("boom")
	if got, err := Build("answer", func() (int, error) { return 1, boom }); got != 0 || !errors.Is(err, boom) ||
		err.Error() != "build the answer: boom" {
		t.Errorf("Build error = %d, %v", got, err)
	}
	if got, err := Build("answer", func() (int, error) { panic("boom") }); got != 0 || err == nil ||
		err.Error() != "build the answer: panic: boom" {
		t.Errorf("Build panic = %d, %v", got, err)
	}
}

func TestAWSConfig(t *testing.T) {
	env := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if cfg, err := AWSConfig(lookup, "SQS"); err != nil || cfg.Region != "eu-west-1" {
		t.Errorf("AWSConfig = %+v, %v", cfg, err)
	}
	delete(env, "AWS_REGION")
	if _, err := AWSConfig(lookup, "SQS"); err == nil || !strings.HasPrefix(err.Error(), "load AWS configuration: ") {
		t.Errorf("AWSConfig without a region: %v", err)
	}
}
