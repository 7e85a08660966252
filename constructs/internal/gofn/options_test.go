package gofn

import (
	"reflect"
	"testing"
)

// same compares what Go cannot compare (an interface holding a struct with a slice) by value,
// instead of panicking, and pointers by identity.
func TestSame(t *testing.T) {
	type shape struct{ parts []string }
	a, b := &shape{[]string{"x"}}, &shape{[]string{"x"}}
	for _, tc := range []struct {
		name string
		x, y any
		want bool
	}{
		{"one pointer", a, a, true},
		{"two pointers to equal values", a, b, false},
		{"structs with slices, equal", shape{[]string{"x"}}, shape{[]string{"x"}}, true},
		{"structs with slices, different", shape{[]string{"x"}}, shape{[]string{"y"}}, false},
		{"strings", "a", "a", true},
	} {
		x, y := reflect.ValueOf(&tc.x).Elem(), reflect.ValueOf(&tc.y).Elem() // interface values
		if got := same(x, y); got != tc.want {
			t.Errorf("%s: same = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// unset takes an empty slice or map for unset, as a nil one.
func TestUnset(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want bool
	}{
		{[]string{}, true}, {[]string(nil), true}, {map[string]string{}, true}, {[]string{"a"}, false},
		{0, true}, {1, false}, {"", true},
	} {
		if got := unset(reflect.ValueOf(tc.v)); got != tc.want {
			t.Errorf("unset(%#v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}
