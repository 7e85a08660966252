package local

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/idempotent-sqs/pipeline/internal/sqslocal"
)

// The kit's S3 is gofakes3, in this process, in memory: the stacks' buckets, with the
// names the app gives them, path-style (every AWS SDK addresses a bucket by path at an
// endpoint that is an IP address). Chosen over MinIO (a server of its own, far larger than
// what a test needs) and moto (Python, the whole AWS in one process): it is a Go module the
// kit links, with nothing to install or start. What S3 does after a write, the bucket's
// event notifications, the kit does itself (s3Notify).
func newS3() (*s3mem.Backend, http.Handler) {
	backend := s3mem.New()
	return backend, gofakes3.New(backend, gofakes3.WithTimeSkewLimit(0)).Server()
}

// s3API serves an S3 call with the kit's S3 and, when it created or removed an object,
// sends the bucket's event notifications as S3 does.
func (k *Kit) s3API(w http.ResponseWriter, r *http.Request) {
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	k.s3h.ServeHTTP(rec, r)
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q := r.URL.Query()
	if rec.status/100 != 2 || key == "" || q.Has("partNumber") || q.Has("tagging") || q.Has("acl") {
		return
	}
	var event string
	switch {
	case r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "":
		event = "ObjectCreated:Copy"
	case r.Method == http.MethodPut:
		event = "ObjectCreated:Put"
	case r.Method == http.MethodPost && q.Has("uploadId"):
		event = "ObjectCreated:CompleteMultipartUpload"
	case r.Method == http.MethodDelete:
		event = "ObjectRemoved:Delete"
	default:
		return
	}
	if err := k.s3Notify(r.Context(), bucket, key, event, r.ContentLength, strings.Trim(rec.Header().Get("ETag"), `"`)); err != nil {
		k.background(fmt.Errorf("S3 event notification of s3://%s/%s: %w", bucket, key, err))
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// s3Notify sends an S3 event to every topic and queue the bucket's notifications name for
// it (their Events and key filter), as the S3 event message's JSON.
func (k *Kit) s3Notify(ctx context.Context, bucket, key, event string, size int64, etag string) error {
	for _, st := range k.stacks {
		for _, n := range st.d.Template.BucketEvents {
			if name, err := st.d.Resolve(n.Bucket); err != nil || name != bucket {
				continue
			}
			for _, kind := range []string{"TopicConfigurations", "QueueConfigurations"} {
				configs, _ := n.Config[kind].([]any)
				for i, c := range configs {
					c, _ := c.(map[string]any)
					if !eventMatches(c["Events"], event) || !keyMatches(c["Filter"], key) {
						continue
					}
					id, _ := c["Id"].(string)
					if id == "" { // S3 names a configuration that has no Id
						id = fmt.Sprintf("%s-%s-%d", n.LogicalID, kind, i)
					}
					body := s3Event(st.d.Account(), bucket, key, event, size, etag, id)
					if kind == "TopicConfigurations" {
						arn, err := st.d.Resolve(c["TopicArn"])
						if err != nil {
							return err
						}
						if err := k.publish(ctx, fmt.Sprint(arn), &publication{Message: body, Subject: "Amazon S3 Notification"}); err != nil {
							return err
						}
						continue
					}
					arn, err := st.d.Resolve(c["QueueArn"])
					if err != nil {
						return err
					}
					queue, ok := k.queueByARN(fmt.Sprint(arn))
					if !ok {
						return fmt.Errorf("notification %s: queue %v is not a queue of the running stacks", n.LogicalID, arn)
					}
					if _, err := k.sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(body)}); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// eventMatches reports whether event ("ObjectCreated:Put") is one of events ("s3:ObjectCreated:*").
func eventMatches(events any, event string) bool {
	list, _ := events.([]any)
	for _, e := range list {
		e, _ := e.(string)
		if e == "s3:"+event || strings.HasSuffix(e, ":*") && strings.HasPrefix("s3:"+event, strings.TrimSuffix(e, "*")) {
			return true
		}
	}
	return false
}

// keyMatches applies a notification's Filter.Key.FilterRules (prefix, suffix) to key.
func keyMatches(filter any, key string) bool {
	f, _ := filter.(map[string]any)
	k, _ := f["Key"].(map[string]any)
	rules, _ := k["FilterRules"].([]any)
	for _, r := range rules {
		r, _ := r.(map[string]any)
		name, _ := r["Name"].(string)
		value, _ := r["Value"].(string)
		switch strings.ToLower(name) {
		case "prefix":
			if !strings.HasPrefix(key, value) {
				return false
			}
		case "suffix":
			if !strings.HasSuffix(key, value) {
				return false
			}
		}
	}
	return true
}

// s3Event is the S3 event message of one object, as S3 sends it (event version 2.1); the
// object's key URL-encoded, as S3 writes it.
func s3Event(account, bucket, key, event string, size int64, etag, id string) string {
	object := map[string]any{"key": strings.ReplaceAll(url.QueryEscape(key), "%2F", "/"), "sequencer": fmt.Sprintf("%016X", time.Now().UnixNano())}
	if strings.HasPrefix(event, "ObjectCreated") {
		object["size"], object["eTag"] = size, etag
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string]any{"Records": []any{map[string]any{
		"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": sqslocal.Region, "eventTime": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		"eventName": event, "userIdentity": map[string]string{"principalId": "AWS:local"},
		"requestParameters": map[string]string{"sourceIPAddress": "127.0.0.1"}, "responseElements": map[string]string{},
		"s3": map[string]any{"s3SchemaVersion": "1.0", "configurationId": id,
			"bucket": map[string]any{"name": bucket, "ownerIdentity": map[string]string{"principalId": account}, "arn": "arn:aws:s3:::" + bucket},
			"object": object},
	}}})
	return strings.TrimSuffix(b.String(), "\n")
}
