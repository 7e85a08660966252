package idempotency

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// DynamoDBAPI is the one DynamoDB operation the Guard uses; *dynamodb.Client satisfies it.
// Acquire, complete and release are each a single conditional UpdateItem, so the function's
// role needs dynamodb:UpdateItem on the table and nothing else. The Guard shares parts of the
// input between calls (ExpressionAttributeNames, the constant ExpressionAttributeValues), so
// an implementation must not modify the input; the SDK's client does not.
type DynamoDBAPI interface {
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

var _ DynamoDBAPI = (*dynamodb.Client)(nil)

// WithoutSDKRetries is a dynamodb.Options function that turns the SDK's own retries off:
// the Guard retries transient errors itself (Config.Retry), and two retry layers would
// multiply each other's attempts. Build the client with it:
//
//	client := dynamodb.NewFromConfig(awsCfg, idempotency.WithoutSDKRetries)
func WithoutSDKRetries(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

// dynamoStore keeps records in a DynamoDB table with the Powertools layout.
type dynamoStore struct {
	api   DynamoDBAPI
	table string
	pk    string
	sk    string // "" without a sort key
	retry retryer

	// The expression attribute names of each write, built once (see exprNames): the SDK
	// only reads its input, so the concurrent records of a batch share them.
	namesOnce sync.Once
	names     writeNames
}

// writeNames are the ExpressionAttributeNames of each write the store makes.
type writeNames struct {
	acquire, complete, completeDrop, completeData, release map[string]string
}

// Expression attribute values that are the same in every write; shared like writeNames.
var (
	valInProgress types.AttributeValue = &types.AttributeValueMemberS{Value: StatusInProgress}
	valCompleted  types.AttributeValue = &types.AttributeValueMemberS{Value: StatusCompleted}
	valZero       types.AttributeValue = &types.AttributeValueMemberN{Value: "0"}
	valOne        types.AttributeValue = &types.AttributeValueMemberN{Value: "1"}
)

var _ store = (*dynamoStore)(nil)

// exprNames returns the expression attribute names of every write, building them on first
// use. The maps must not be modified.
func (s *dynamoStore) exprNames() *writeNames {
	s.namesOnce.Do(func() {
		s.names = writeNames{
			acquire:      s.buildNames("#id", "#exp", "#lock", "#owner", "#attempt", "#data", "#dropped", "#validation"),
			complete:     s.buildNames("#exp", "#attempt", "#owner", "#lock"),
			completeDrop: s.buildNames("#exp", "#attempt", "#owner", "#lock", "#dropped"),
			completeData: s.buildNames("#exp", "#attempt", "#owner", "#lock", "#data"),
			release:      s.buildNames("#lock", "#attempt", "#owner"),
		}
	})
	return &s.names
}

// buildNames maps placeholders to attribute names, #status always: `status` and `data` are
// DynamoDB reserved words, and placeholders keep the expressions independent of the key names.
func (s *dynamoStore) buildNames(extra ...string) map[string]string {
	n := map[string]string{"#status": AttrStatus}
	for _, a := range extra {
		switch a {
		case "#id":
			n[a] = s.pk
		case "#exp":
			n[a] = AttrExpiration
		case "#lock":
			n[a] = AttrLockExpiration
		case "#data":
			n[a] = AttrData
		case "#validation":
			n[a] = AttrValidation
		case "#owner":
			n[a] = AttrOwner
		case "#attempt":
			n[a] = AttrAttempt
		case "#dropped":
			n[a] = AttrResultDropped
		}
	}
	return n
}

func (s *dynamoStore) itemKey(k recordKey) map[string]types.AttributeValue {
	key := map[string]types.AttributeValue{s.pk: &types.AttributeValueMemberS{Value: k.pk}}
	if s.sk != "" {
		key[s.sk] = &types.AttributeValueMemberS{Value: k.sk}
	}
	return key
}

// The expressions of acquire, with and without a payload hash.
const (
	acquireSet = "SET #status = :inprogress, #exp = :exp, #lock = :lock, #owner = :owner, " +
		"#attempt = if_not_exists(#attempt, :zero) + :one"
	// A new attempt starts without the result (or the mark of a dropped one) of an earlier
	// record of this key; without a hash, a hash left by an earlier record of this key would
	// describe another payload, so it goes too.
	acquireUpdateHash   = acquireSet + ", #validation = :hash REMOVE #data, #dropped"
	acquireUpdateNoHash = acquireSet + " REMOVE #data, #dropped, #validation"
	// A lapsed lock may be taken over only for the same payload: a different one is a key
	// reused for other content, which the caller must see as a mismatch, not run.
	acquireConditionHash = "attribute_not_exists(#id) OR #exp < :now OR " +
		"(#status = :inprogress AND #lock < :nowms AND (attribute_not_exists(#validation) OR #validation = :hash))"
	acquireConditionNoHash = "attribute_not_exists(#id) OR #exp < :now OR (#status = :inprogress AND #lock < :nowms)"
)

func (s *dynamoStore) acquire(ctx context.Context, k recordKey, in acquireInput) (bool, *record, error) {
	values := make(map[string]types.AttributeValue, 9)
	values[":inprogress"] = valInProgress
	values[":exp"] = number(in.expiration.Unix())
	values[":lock"] = number(in.lockUntil.UnixMilli())
	values[":owner"] = &types.AttributeValueMemberS{Value: in.owner}
	values[":zero"] = valZero
	values[":one"] = valOne
	values[":now"] = number(in.now.Unix())
	values[":nowms"] = number(in.now.UnixMilli())
	update, condition := acquireUpdateNoHash, acquireConditionNoHash
	if in.hash != "" {
		update, condition = acquireUpdateHash, acquireConditionHash
		values[":hash"] = &types.AttributeValueMemberS{Value: in.hash}
	}
	input := &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 s.itemKey(k),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String(condition),
		ExpressionAttributeNames:            s.exprNames().acquire,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	out, err := s.update(ctx, input)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		old, derr := decodeRecord(ccf.Item)
		if derr != nil {
			return false, nil, derr
		}
		if old == nil {
			return false, nil, errors.New("condition failed but DynamoDB returned no item (ReturnValuesOnConditionCheckFailure unsupported?)")
		}
		return false, old, nil
	case err != nil:
		return false, nil, err
	}
	old, err := decodeRecord(out.Attributes)
	if err != nil {
		// The record is ours now and the write replaced every attribute that matters; an
		// unreadable predecessor only costs the attempt count and TookOver, so the work goes
		// on as attempt 1 rather than leaving a held lock behind an error.
		return true, nil, nil
	}
	return true, old, nil
}

// Sizes for the item size estimate of complete. DynamoDB counts an item as the UTF-8 length
// of every attribute name plus the size of every value: a string's UTF-8 length, a binary's
// length, a number's about 1 byte per 2 significant digits plus 1, at most 21.
const (
	// maxItemBytes is DynamoDB's item size limit, 400 KB.
	maxItemBytes = 400 * 1024
	// itemSlack stays free below the limit for what the estimate cannot see exactly; a record
	// is a few hundred bytes besides its result, so the slack costs the result little room.
	itemSlack = 1024
	// maxNumberBytes is the most a number attribute can count for.
	maxNumberBytes = 21
)

// resultRoom is the largest result complete stores on k's record: the item limit, less the
// slack and everything else the COMPLETED record holds, numbers counted at their maximum and
// `validation` always (acquire writes it when payloads are validated). Attributes another
// writer added to the item are not known here; complete's fallback covers them.
func (s *dynamoStore) resultRoom(k recordKey, owner string) int {
	rest := len(s.pk) + len(k.pk) +
		len(AttrStatus) + len(StatusCompleted) +
		len(AttrExpiration) + maxNumberBytes +
		len(AttrAttempt) + maxNumberBytes +
		len(AttrOwner) + len(owner) +
		len(AttrValidation) + 2*sha256.Size + // PayloadHash: sha256 in hex
		len(AttrData)
	if s.sk != "" {
		rest += len(s.sk) + len(k.sk)
	}
	return maxItemBytes - itemSlack - rest
}

// complete stores the result when it fits, and completes the record either way: the handler's
// side effect has happened, so a result DynamoDB cannot hold must not leave the record
// INPROGRESS for the next delivery to run the effect again. A result over resultRoom is left
// out up front (still one write); a complete with the result that DynamoDB rejects as invalid
// anyway is sent again without it (the one case of a second write).
func (s *dynamoStore) complete(ctx context.Context, k recordKey, in completeInput) (bool, error) {
	if in.data == nil {
		return false, s.fenced(ctx, s.completeUpdate(k, in, false))
	}
	if len(in.data) > s.resultRoom(k, in.owner) {
		return true, s.fenced(ctx, s.completeUpdate(k, in, true))
	}
	err := s.fenced(ctx, s.completeUpdate(k, in, false))
	if !isValidationError(err) {
		return false, err
	}
	if err2 := s.fenced(ctx, s.completeUpdate(k, in, true)); err2 != nil {
		return true, fmt.Errorf("complete without the result, which DynamoDB refused (%v): %w", err, err2)
	}
	return true, nil
}

// isValidationError reports a ValidationException. For a complete that carries a result, the
// result is what can make the request invalid: DynamoDB answers "Item size to update has
// exceeded the maximum allowed size" when attributes the estimate could not see (written by
// another client) leave it less room. The message is not matched, since its wording is not
// part of the API; a ValidationException with another cause fails the complete without the
// result too, and that error is returned.
func isValidationError(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "ValidationException"
}

// The expressions of complete and release.
const (
	completeUpdatePlain = "SET #status = :completed, #exp = :exp, #attempt = :attempt REMOVE #lock"
	completeUpdateDrop  = "SET #status = :completed, #exp = :exp, #attempt = :attempt, #dropped = :dropped REMOVE #lock"
	completeUpdateData  = "SET #status = :completed, #exp = :exp, #attempt = :attempt, #data = :data REMOVE #lock"
	releaseUpdate       = "SET #lock = :zero, #attempt = :attempt"
	// fencedCondition: only the owner of the lock, while the record is INPROGRESS.
	fencedCondition = "#owner = :owner AND #status = :inprogress"
)

// completeUpdate is complete's UpdateItem: with drop, the result is left out and its size
// recorded in `result_dropped`; otherwise in.data (if any) goes into `data`.
func (s *dynamoStore) completeUpdate(k recordKey, in completeInput, drop bool) *dynamodb.UpdateItemInput {
	values := make(map[string]types.AttributeValue, 6)
	values[":completed"] = valCompleted
	values[":inprogress"] = valInProgress
	values[":exp"] = number(in.expiration.Unix())
	values[":attempt"] = number(int64(in.attempt))
	values[":owner"] = &types.AttributeValueMemberS{Value: in.owner}
	names, update := s.exprNames().complete, completeUpdatePlain
	switch {
	case drop:
		values[":dropped"] = number(int64(len(in.data)))
		names, update = s.exprNames().completeDrop, completeUpdateDrop
	case in.data != nil:
		values[":data"] = encodeData(in.data)
		names, update = s.exprNames().completeData, completeUpdateData
	}
	// The owner stays on the record: it tells an audit (and a retried complete whose first
	// response was lost) which attempt finished it.
	return &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 s.itemKey(k),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String(fencedCondition),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

func (s *dynamoStore) release(ctx context.Context, k recordKey, in releaseInput) error {
	// A lock of 0 is always lapsed, so the next delivery acquires without waiting; TookOver
	// stays false for it because a released record is not a crashed one. The owner is kept so
	// that a retried release whose first response was lost can recognise its own work.
	return s.fenced(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      s.itemKey(k),
		UpdateExpression:         aws.String(releaseUpdate),
		ConditionExpression:      aws.String(fencedCondition),
		ExpressionAttributeNames: s.exprNames().release,
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":zero":       valZero,
			":attempt":    number(int64(in.attempt)),
			":owner":      &types.AttributeValueMemberS{Value: in.owner},
			":inprogress": valInProgress,
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
}

// fenced runs an owner-conditioned update and turns a condition failure into *fencedError.
func (s *dynamoStore) fenced(ctx context.Context, input *dynamodb.UpdateItemInput) error {
	_, err := s.update(ctx, input)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		cur, derr := decodeRecord(ccf.Item)
		if derr != nil {
			return derr
		}
		return &fencedError{current: cur}
	}
	return err
}

func (s *dynamoStore) update(ctx context.Context, input *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
	var out *dynamodb.UpdateItemOutput
	err := s.retry.do(ctx, func(ctx context.Context) error {
		var err error
		out, err = s.api.UpdateItem(ctx, input)
		return err
	})
	return out, err
}

func number(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// encodeData stores text as S, as Powertools does (it stores JSON strings), so the other
// runtimes can read it; anything else as B.
func encodeData(b []byte) types.AttributeValue {
	if utf8.Valid(b) {
		return &types.AttributeValueMemberS{Value: string(b)}
	}
	return &types.AttributeValueMemberB{Value: b}
}

// decodeRecord reads an item; nil for no item. Attributes of the wrong type are an error
// naming the attribute, since guessing could turn a record into a false duplicate.
func decodeRecord(item map[string]types.AttributeValue) (*record, error) {
	if len(item) == 0 {
		return nil, nil
	}
	r := &record{}
	var err error
	str := func(name string) string {
		switch v := item[name].(type) {
		case nil:
			return ""
		case *types.AttributeValueMemberS:
			return v.Value
		default:
			err = errors.Join(err, fmt.Errorf("attribute %s has type %T, want S", name, v))
			return ""
		}
	}
	num := func(name string) (int64, bool) {
		switch v := item[name].(type) {
		case nil:
			return 0, false
		case *types.AttributeValueMemberN:
			n, perr := strconv.ParseInt(v.Value, 10, 64)
			if perr != nil {
				// Other writers may store a decimal; whole units are all that matter here.
				f, ferr := strconv.ParseFloat(v.Value, 64)
				if ferr != nil {
					err = errors.Join(err, fmt.Errorf("attribute %s = %q is not a number", name, v.Value))
				}
				n = int64(f)
			}
			return n, true
		default:
			err = errors.Join(err, fmt.Errorf("attribute %s has type %T, want N", name, v))
			return 0, false
		}
	}
	r.status = str(AttrStatus)
	r.hash = str(AttrValidation)
	r.owner = str(AttrOwner)
	r.expiration, _ = num(AttrExpiration)
	r.lockMs, r.hasLock = num(AttrLockExpiration)
	a, _ := num(AttrAttempt)
	r.attempt = int(a)
	_, r.dropped = num(AttrResultDropped)
	switch v := item[AttrData].(type) {
	case nil:
	case *types.AttributeValueMemberS:
		r.data = []byte(v.Value)
	case *types.AttributeValueMemberB:
		r.data = v.Value
	default:
		err = errors.Join(err, fmt.Errorf("attribute %s has type %T, want S or B", AttrData, v))
	}
	if err != nil {
		return nil, fmt.Errorf("unreadable idempotency record: %w", err)
	}
	return r, nil
}
