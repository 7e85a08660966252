package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// BenchmarkUpdateItem is the bare cost of one of the two writes, the raw loop's acquire,
// through the client the consumer uses, against a stub server on loopback that answers as
// DynamoDB does to a new record ("{}" with its CRC32 header), so that no database time is in
// it. Every variant pays the same stub and loopback HTTP; the differences are the client's
// (cpu-µs/op is the process's CPU per call, stub included; ns/op is wall time):
//
//	go test -run '^$' -bench UpdateItem -benchmem ./test/bench/peers
//
// The variants: sdk is dynamodb.New as the raw loop builds it (retries off by
// RetryMaxAttempts = 1); sdk-nopretryer the same with aws.NopRetryer, the retryer that does
// nothing; sdk-lean NopRetryer with the middleware that neither the request nor its
// guarantees need removed (the invocation-id header of retries, the user agent builder);
// hand the floor without the SDK: the request body marshalled from a struct, signed with the
// SDK's SigV4 signer, sent with net/http, the response decoded.
func BenchmarkUpdateItem(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		body := []byte("{}")
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
		w.Header().Set("X-Amzn-Requestid", "stub")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local"}, nil
	})
	client := func(opts ...func(*dynamodb.Options)) *dynamodb.Client {
		return dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: creds,
			RetryMaxAttempts: 1, HTTPClient: srv.Client()}, opts...)
	}
	input := func(i int) *dynamodb.UpdateItemInput {
		return &dynamodb.UpdateItemInput{
			TableName:                aws.String("peer"),
			Key:                      map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "raw#key-" + strconv.Itoa(i)}},
			UpdateExpression:         aws.String("SET #s = :inprogress, #e = :exp"),
			ConditionExpression:      aws.String("attribute_not_exists(#id)"),
			ExpressionAttributeNames: map[string]string{"#s": "status", "#e": "expiration", "#id": "id"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":inprogress": &types.AttributeValueMemberS{Value: "INPROGRESS"},
				":exp":        &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(24*time.Hour).Unix(), 10)},
			},
		}
	}
	sdk := func(c *dynamodb.Client) func(b *testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			cpu0 := selfCPU()
			for i := 0; b.Loop(); i++ {
				if _, err := c.UpdateItem(ctx, input(i)); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu0)
		}
	}
	b.Run("sdk", sdk(client()))
	b.Run("sdk-nopretryer", sdk(client(func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })))
	b.Run("sdk-lean", sdk(client(leanDynamoDB)))
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		signer := v4.NewSigner()
		hc := srv.Client()
		type av struct {
			S string `json:"S,omitempty"`
			N string `json:"N,omitempty"`
		}
		type req struct {
			TableName                 string
			Key                       map[string]av
			UpdateExpression          string
			ConditionExpression       string
			ExpressionAttributeNames  map[string]string
			ExpressionAttributeValues map[string]av
		}
		cpu0 := selfCPU()
		for i := 0; b.Loop(); i++ {
			body, err := json.Marshal(req{TableName: "peer", Key: map[string]av{"id": {S: "raw#key-" + strconv.Itoa(i)}},
				UpdateExpression: "SET #s = :inprogress, #e = :exp", ConditionExpression: "attribute_not_exists(#id)",
				ExpressionAttributeNames: map[string]string{"#s": "status", "#e": "expiration", "#id": "id"},
				ExpressionAttributeValues: map[string]av{":inprogress": {S: "INPROGRESS"},
					":exp": {N: strconv.FormatInt(time.Now().Add(24*time.Hour).Unix(), 10)}}})
			if err != nil {
				b.Fatal(err)
			}
			r, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			r.Header.Set("Content-Type", "application/x-amz-json-1.0")
			r.Header.Set("X-Amz-Target", "DynamoDB_20120810.UpdateItem")
			sum := sha256.Sum256(body)
			if err := signer.SignHTTP(ctx, aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local"}, r,
				hex.EncodeToString(sum[:]), "dynamodb", "us-east-1", time.Now()); err != nil {
				b.Fatal(err)
			}
			resp, err := hc.Do(r)
			if err != nil {
				b.Fatal(err)
			}
			var out struct{ Attributes map[string]av }
			err = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatal(fmt.Errorf("status %d: %v", resp.StatusCode, err))
			}
		}
		reportCPU(b, cpu0)
	})
}

// reportCPU reports this process's CPU per operation since cpu0 (client and stub server: the
// stub's share is the same in every variant), the figure that matters under a CPU quota.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64((selfCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// leanDynamoDB is the cheapest client configuration that keeps every part of the request
// DynamoDB checks and every guarantee: no retryer machinery (the caller retries, as the
// Guard does), no invocation-id header (it only ties retries together), no user agent builder.
func leanDynamoDB(o *dynamodb.Options) {
	o.Retryer = aws.NopRetryer{}
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		for _, id := range []string{"ClientRequestID", "UserAgent"} {
			if _, err := s.Build.Remove(id); err != nil {
				return err
			}
		}
		return nil
	})
}
