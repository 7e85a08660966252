package local

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// A subscription's filter policy sees the attributes as SNS reads them: a String as a string,
// a Number as a number, a String.Array as its array, no Binary; or, scoped to the body, the
// message itself.
func TestFilteredAttributes(t *testing.T) {
	attr := func(typ, v string) sqstypes.MessageAttributeValue {
		return sqstypes.MessageAttributeValue{DataType: aws.String(typ), StringValue: aws.String(v)}
	}
	p := &publication{Message: `{"order":1}`, Attrs: map[string]sqstypes.MessageAttributeValue{
		"store": attr("String", "example_corp"), "price": attr("Number", "210.75"), "tags": attr("String.Array", `["a","b"]`),
		"blob": {DataType: aws.String("Binary"), BinaryValue: []byte{1}}, "custom": attr("String.kind", "x"),
	}}
	if got, want := string(filtered(false, p)), `{"custom":"x","price":210.75,"store":"example_corp","tags":["a","b"]}`; got != want {
		t.Errorf("filtered attributes = %s, want %s", got, want)
	}
	if got := string(filtered(true, p)); got != p.Message {
		t.Errorf("filtered body = %s, want the message %s", got, p.Message)
	}
}
