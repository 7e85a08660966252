package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	"github.com/idempotent-sqs/pipeline/internal/sdkhttp"
)

// awsClients reach the emulator only: its endpoint and its test credentials, never the
// caller's configuration.
type awsClients struct {
	cfg  aws.Config
	url  string
	cfn  *cloudformation.Client
	sqs  *sqs.Client
	ddb  *dynamodb.Client
	iam  *iam.Client
	sts  *sts.Client
	s3   *s3.Client
	fn   *lambda.Client
	http *http.Client
}

func newClients(endpoint, region string) *awsClients {
	cfg := aws.Config{
		Region:       region,
		Credentials:  aws.NewCredentialsCache(aws.CredentialsProviderFunc(testCredentials)),
		BaseEndpoint: aws.String(endpoint),
		HTTPClient:   sdkhttp.Wrap(&http.Client{Timeout: 60 * time.Second}),
	}
	return &awsClients{
		cfg:  cfg,
		url:  endpoint,
		cfn:  cloudformation.NewFromConfig(cfg),
		sqs:  sqs.NewFromConfig(cfg),
		ddb:  dynamodb.NewFromConfig(cfg),
		iam:  iam.NewFromConfig(cfg),
		sts:  sts.NewFromConfig(cfg),
		s3:   s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }),
		fn:   lambda.NewFromConfig(cfg),
		http: &http.Client{Timeout: 60 * time.Second},
	}
}

// testCredentials are fakecloud's root identity.
func testCredentials(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "rehearse"}, nil
}

// resources lists a stack's resources by logical id (every page: DescribeStackResources
// stops at 100).
func (c *awsClients) resources(ctx context.Context, stackName string) (map[string]deployed, error) {
	out := map[string]deployed{}
	pages := cloudformation.NewListStackResourcesPaginator(c.cfn, &cloudformation.ListStackResourcesInput{StackName: aws.String(stackName)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("stack %s's resources: %w", stackName, err)
		}
		for _, x := range page.StackResourceSummaries {
			out[aws.ToString(x.LogicalResourceId)] = deployed{Type: aws.ToString(x.ResourceType), Physical: aws.ToString(x.PhysicalResourceId)}
		}
	}
	return out, nil
}

// exists says whether a stateful resource, by its physical id, is still there.
func (c *awsClients) exists(ctx context.Context, typ, physical string) (bool, error) {
	switch typ {
	case "AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable":
		_, err := c.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(physical)})
		return found(err, "ResourceNotFoundException")
	case "AWS::SQS::Queue":
		_, err := c.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(physical)})
		return found(err, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")
	case "AWS::Logs::LogGroup":
		// CloudFormation's physical id of a log group is its name; fakecloud 0.51.0 gives its
		// ARN (arn:aws:logs:REGION:ACCOUNT:log-group:NAME:*). Either is read as the name.
		if _, name, ok := strings.Cut(physical, ":log-group:"); ok {
			physical = strings.TrimSuffix(name, ":*")
		}
		var out struct {
			LogGroups []struct{ LogGroupName string } `json:"logGroups"`
		}
		if err := c.jsonCall(ctx, "logs", "Logs_20140328.DescribeLogGroups", map[string]any{"logGroupNamePrefix": physical}, &out); err != nil {
			return false, err
		}
		for _, g := range out.LogGroups {
			if g.LogGroupName == physical {
				return true, nil
			}
		}
		return false, nil
	case "AWS::KMS::Key":
		var out struct {
			KeyMetadata struct{ KeyState string } `json:"KeyMetadata"`
		}
		err := c.jsonCall(ctx, "kms", "TrentService.DescribeKey", map[string]any{"KeyId": physical}, &out)
		if ok, err := found(err, "NotFoundException"); !ok || err != nil {
			return ok, err
		}
		// Deleting a key schedules its deletion; a retained key stays usable.
		return out.KeyMetadata.KeyState != "PendingDeletion", nil
	case "AWS::S3::Bucket":
		_, err := c.signed(ctx, http.MethodHead, "s3", "/"+physical, nil, "", "")
		var ce *callError
		if errors.As(err, &ce) && ce.status == http.StatusNotFound {
			return false, nil
		}
		return err == nil, err
	case "AWS::SNS::Topic":
		err := c.queryCall(ctx, "sns", url.Values{"Action": {"GetTopicAttributes"}, "Version": {"2010-03-31"}, "TopicArn": {physical}})
		return found(err, "NotFound")
	}
	return false, fmt.Errorf("no existence check for %s", typ)
}

// found turns a Describe/Get call's error into present (nil), absent (one of the codes) or
// an error.
func found(err error, absent ...string) (bool, error) {
	if err == nil {
		return true, nil
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		for _, code := range absent {
			if ae.ErrorCode() == code {
				return false, nil
			}
		}
	}
	var ce *callError
	if errors.As(err, &ce) {
		for _, code := range absent {
			if strings.Contains(ce.body, code) {
				return false, nil
			}
		}
	}
	return false, err
}

type callError struct {
	op     string
	status int
	body   string
}

func (e *callError) Error() string { return fmt.Sprintf("%s: %d %s", e.op, e.status, e.body) }

// jsonCall makes one signed AWS JSON 1.1 call (CloudWatch Logs, KMS) of a service the
// rehearsal has no SDK module for.
func (c *awsClients) jsonCall(ctx context.Context, service, target string, in any, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	resp, err := c.signed(ctx, http.MethodPost, service, "/", body, "application/x-amz-json-1.1", target)
	if err != nil {
		return err
	}
	return json.Unmarshal(resp, out)
}

// queryCall makes one signed AWS Query call (SNS) and discards the answer.
func (c *awsClients) queryCall(ctx context.Context, service string, form url.Values) error {
	_, err := c.signed(ctx, http.MethodPost, service, "/", []byte(form.Encode()), "application/x-www-form-urlencoded", "")
	return err
}

func (c *awsClients) signed(ctx context.Context, method, service, path string, body []byte, contentType, target string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if target != "" {
		req.Header.Set("X-Amz-Target", target)
	}
	creds, _ := c.cfg.Credentials.Retrieve(ctx)
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), service, c.cfg.Region, time.Now()); err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		op := target
		if op == "" {
			op = service
		}
		return nil, &callError{op: op, status: resp.StatusCode, body: strings.TrimSpace(string(b))}
	}
	return b, nil
}
