// Command legacy is a function as many published apps still have one: aws-sdk-go v1, which
// reads no AWS_ENDPOINT_URL, reading its configuration from SSM Parameter Store and Secrets
// Manager at each record, and a plain HTTP client calling a partner's API. It logs what each
// call returned.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/session"
	"github.com/aws/aws-sdk-go/service/secretsmanager"
	"github.com/aws/aws-sdk-go/service/ssm"
)

func main() {
	sess := session.Must(session.NewSession())
	params, secrets := ssm.New(sess), secretsmanager.New(sess)
	lambda.Start(func(ctx context.Context, ev events.SQSEvent) error {
		for _, r := range ev.Records {
			line := map[string]string{"seen": r.Body}
			if out, err := params.GetParameterWithContext(ctx, &ssm.GetParameterInput{Name: aws.String(os.Getenv("GREETING_PARAMETER"))}); err != nil {
				line["ssm"] = err.Error()
			} else {
				line["ssm"] = aws.StringValue(out.Parameter.Value)
			}
			for key, id := range map[string]string{"secret": os.Getenv("API_KEY_SECRET"), "token": os.Getenv("TOKEN_SECRET_ARN")} {
				if out, err := secrets.GetSecretValueWithContext(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)}); err != nil {
					line[key] = err.Error()
				} else {
					line[key] = aws.StringValue(out.SecretString)
				}
			}
			if resp, err := http.Get("https://partner.example.com/ping"); err != nil {
				line["http"] = err.Error()
			} else {
				resp.Body.Close()
				line["http"] = resp.Status
			}
			b, _ := json.Marshal(line)
			fmt.Println(string(b))
		}
		return nil
	})
}
