package cli

import (
	"slices"
	"testing"
)

// A pipeline's own outputs win over the stack's; the reference stack's layout (only the
// stack's) and a library stack's (only the pipelines') both resolve.
func TestPipelineOutputs(t *testing.T) {
	outputs := map[string]string{
		"OrdersDeadLetterQueueUrl": "d1", "OrdersIdempotencyTableName": "orders-table", "OrdersKeyPrefix": "OrdersPipeline",
		"OrdersUnhealthyAlarmName":  "orders-unhealthy",
		"RefundsDeadLetterQueueUrl": "d2", "IdempotencyTableName": "shared", "UnhealthyAlarmName": "stack-unhealthy",
	}
	for _, tt := range []struct{ p, name, want string }{
		{"Orders", OutTableName, "orders-table"},
		{"Refunds", OutTableName, "shared"},
		{"", OutTableName, "shared"},
		{"Orders", OutUnhealthy, "orders-unhealthy"},
		{"Refunds", OutUnhealthy, "stack-unhealthy"},
		{"Refunds", OutKeyPrefix, ""},
	} {
		if got := PipelineOutput(outputs, tt.p, tt.name); got != tt.want {
			t.Errorf("PipelineOutput(%q, %q) = %q, want %q", tt.p, tt.name, got, tt.want)
		}
	}
	if got := KeyPrefix(outputs, "Orders"); got != "OrdersPipeline" {
		t.Errorf("KeyPrefix(Orders) = %q, want the output's OrdersPipeline", got)
	}
	if got := KeyPrefix(outputs, "Refunds"); got != "Refunds" {
		t.Errorf("KeyPrefix(Refunds) = %q, want the pipeline's name", got)
	}
	if got := Composites(outputs, []string{"Orders", "Refunds"}); !slices.Equal(got, []string{"orders-unhealthy", "stack-unhealthy"}) {
		t.Errorf("Composites = %q, want both, once each", got)
	}
	if got := Composites(outputs, []string{"Refunds"}); !slices.Equal(got, []string{"stack-unhealthy"}) {
		t.Errorf("Composites(Refunds) = %q, want the stack's only", got)
	}
	if got := pipelineTables(map[string]string{"ADeadLetterQueueUrl": "d", "AIdempotencyTableName": "t", "BDeadLetterQueueUrl": "d", "BIdempotencyTableName": "t"}); !slices.Equal(got, []string{"t"}) {
		t.Errorf("pipelineTables = %q, want the one table once", got)
	}
}
