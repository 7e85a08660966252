package dynamolocal

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idempotent-sqs/pipeline/internal/conntest"
)

// Clients made one per call share the server's connections: a client made without an HTTP
// client would open one of its own and leave it open, idle.
func TestClientsShareConnections(t *testing.T) {
	conntest.Shared(t, func(wrap func(conntest.Doer) conntest.Doer) error {
		_, err := srv.Client(func(o *dynamodb.Options) { o.HTTPClient = wrap(o.HTTPClient) }).ListTables(t.Context(), &dynamodb.ListTablesInput{})
		return err
	})
}
