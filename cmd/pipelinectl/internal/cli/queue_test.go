package cli

import "testing"

// A DLQ's redrive-allow policy names its source queues (byQueue) or none.
func TestParseRedriveAllow(t *testing.T) {
	t.Parallel()
	perm, arns := parseRedriveAllow(`{"redrivePermission":"byQueue","sourceQueueArns":["arn:aws:sqs:us-east-1:123456789012:work"]}`)
	if perm != "byQueue" || len(arns) != 1 || arns[0] != "arn:aws:sqs:us-east-1:123456789012:work" {
		t.Errorf("parseRedriveAllow = %q, %q", perm, arns)
	}
	if perm, arns := parseRedriveAllow(`{"redrivePermission":"allowAll"}`); perm != "allowAll" || arns != nil {
		t.Errorf("parseRedriveAllow(allowAll) = %q, %q", perm, arns)
	}
}
