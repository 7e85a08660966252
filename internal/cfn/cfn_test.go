package cfn

import "testing"

func TestRefTarget(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{map[string]any{"Ref": "Queue"}, "Queue"},
		{map[string]any{"Fn::GetAtt": []any{"Dlq", "Arn"}}, "Dlq"},
		{map[string]any{"Fn::Join": []any{"", []any{"a"}}}, ""},
		{map[string]any{"Ref": "A", "Other": 1}, ""},
		{"Queue", ""},
		{nil, ""},
	} {
		if got := RefTarget(tc.v); got != tc.want {
			t.Errorf("RefTarget(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestDig(t *testing.T) {
	v := map[string]any{"A": map[string]any{"B": 7}}
	if got := Dig(v, "A", "B"); got != 7 {
		t.Errorf("Dig(A, B) = %v, want 7", got)
	}
	if got := Dig(v, "A", "X", "Y"); got != nil {
		t.Errorf("Dig of a missing path = %v, want nil", got)
	}
}

func TestJoinString(t *testing.T) {
	ref := func(p any) string { return "<" + RefTarget(p) + ">" }
	for _, tc := range []struct {
		v    any
		want string
	}{
		{"plain", "plain"},
		{map[string]any{"Fn::Join": []any{"", []any{"arn:", map[string]any{"Ref": "AWS::Partition"}, ":x"}}}, "arn:<AWS::Partition>:x"},
		{map[string]any{"Fn::Join": []any{"/", []any{"a", map[string]any{"Fn::GetAtt": []any{"Q", "Arn"}}}}}, "a/<Q>"},
		{map[string]any{"Fn::Join": []any{""}}, ""},
		{map[string]any{"Ref": "Q"}, ""},
		{nil, ""},
	} {
		if got := JoinString(tc.v, ref); got != tc.want {
			t.Errorf("JoinString(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
