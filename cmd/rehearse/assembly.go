package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// stack is one CloudFormation stack of a cloud assembly.
type stack struct {
	Name     string
	Dir      string // the (possibly nested) assembly directory that holds its template
	Template string // the template file, in Dir
	Env      string // aws://account/region, or with unknown-account/unknown-region
	Res      map[string]resource
}

type resource = cfn.Resource

// readAssembly lists the stacks of the cloud assembly in dir, nested assemblies (Stages)
// included, with their resources.
func readAssembly(dir string) ([]stack, error) {
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		return nil, fmt.Errorf("%s is not a cloud assembly (cdk synth's output): %w", dir, err)
	}
	refs, err := cfn.Stacks(dir)
	if err != nil {
		return nil, err
	}
	stacks := make([]stack, 0, len(refs))
	for _, ref := range refs {
		s := stack{Name: ref.StackName, Dir: ref.Dir, Template: ref.TemplateFile, Env: ref.Environment}
		if s.Res, err = cfn.ReadResources(filepath.Join(ref.Dir, ref.TemplateFile)); err != nil {
			return nil, err
		}
		stacks = append(stacks, s)
	}
	return stacks, nil
}

// env is the account and region every stack deploys to: a stack pinned to one gives it, an
// environment-agnostic one takes the emulator's defaults. Stacks pinned to different
// environments cannot share one emulator.
func env(stacks []stack) (account, region string, err error) {
	account, region = "123456789012", "us-east-1"
	var pinnedAcct, pinnedRegion string
	for _, s := range stacks {
		a, rg, _ := strings.Cut(strings.TrimPrefix(s.Env, "aws://"), "/")
		if a != "" && a != "unknown-account" {
			if pinnedAcct != "" && pinnedAcct != a {
				return "", "", fmt.Errorf("stacks pinned to accounts %s and %s: rehearse them one app at a time", pinnedAcct, a)
			}
			pinnedAcct = a
		}
		if rg != "" && rg != "unknown-region" {
			if pinnedRegion != "" && pinnedRegion != rg {
				return "", "", fmt.Errorf("stacks pinned to regions %s and %s: rehearse them one app at a time", pinnedRegion, rg)
			}
			pinnedRegion = rg
		}
	}
	if pinnedAcct != "" {
		account = pinnedAcct
	}
	if pinnedRegion != "" {
		region = pinnedRegion
	}
	return account, region, nil
}

// nameSchedules works around a fakecloud 0.51.0 defect: the name its CloudFormation engine
// generates for an AWS::Scheduler::Schedule without a Name is longer than Scheduler's 64
// characters, and the create fails ("Name must be 1-64 characters"; AWS shortens generated
// names to fit). It gives each such schedule in the copy of the assembly a name of at most
// 64 characters, unique per stack, and re-hashes the template so that the CDK CLI publishes
// the changed file. What AWS users deploy is not changed: this runs on the rehearsal's copy.
func nameSchedules(stacks []stack) (int, error) {
	n := 0
	for _, s := range stacks {
		path := filepath.Join(s.Dir, s.Template)
		raw, err := os.ReadFile(path)
		if err != nil {
			return n, err
		}
		var t map[string]any
		if err := json.Unmarshal(raw, &t); err != nil {
			return n, fmt.Errorf("%s: %w", path, err)
		}
		res, _ := t["Resources"].(map[string]any)
		changed := false
		for id, v := range res {
			r, _ := v.(map[string]any)
			if r["Type"] != "AWS::Scheduler::Schedule" {
				continue
			}
			props, _ := r["Properties"].(map[string]any)
			if props == nil || props["Name"] != nil {
				continue
			}
			props["Name"] = scheduleName(s.Name, id)
			changed = true
			n++
		}
		if !changed {
			continue
		}
		out, err := json.MarshalIndent(t, "", " ")
		if err != nil {
			return n, err
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			return n, err
		}
		// The template is published under its sha256 (the asset manifest and the stack's
		// stackTemplateAssetObjectUrl name it): name the new content.
		oldHash, newHash := sha256hex(raw), sha256hex(out)
		files, _ := filepath.Glob(filepath.Join(s.Dir, "*.json"))
		for _, f := range files {
			if f == path {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return n, err
			}
			if strings.Contains(string(b), oldHash) {
				if err := os.WriteFile(f, []byte(strings.ReplaceAll(string(b), oldHash, newHash)), 0o644); err != nil {
					return n, err
				}
			}
		}
	}
	return n, nil
}

func sha256hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// scheduleName is stack-logicalId, shortened to 64 characters with a hash that keeps it unique.
func scheduleName(stackName, logicalID string) string {
	name := stackName + "-" + logicalID
	if len(name) <= 64 {
		return name
	}
	h := sha256hex([]byte(name))[:8]
	return name[:64-9] + "-" + h
}

// stateful are the resource types whose data (or identity) an update must keep, and the
// properties whose change makes CloudFormation replace one (a new resource, the old one's
// data gone or orphaned): the AWS resource reference's "Update requires: Replacement".
var stateful = map[string][]string{
	"AWS::DynamoDB::Table":       {"TableName", "KeySchema", "LocalSecondaryIndexes"},
	"AWS::DynamoDB::GlobalTable": {"TableName", "KeySchema", "LocalSecondaryIndexes"},
	"AWS::SQS::Queue":            {"QueueName", "FifoQueue"},
	"AWS::Logs::LogGroup":        {"LogGroupName", "LogGroupClass"},
	"AWS::KMS::Key":              {"KeySpec", "KeyUsage", "MultiRegion"},
	"AWS::SNS::Topic":            {"TopicName", "FifoTopic"},
	"AWS::S3::Bucket":            {"BucketName"},
}

// kind is a stateful type's name in a sentence.
func kind(typ string) string {
	switch typ {
	case "AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable":
		return "table"
	case "AWS::SQS::Queue":
		return "queue"
	case "AWS::Logs::LogGroup":
		return "log group"
	case "AWS::KMS::Key":
		return "key"
	case "AWS::SNS::Topic":
		return "topic"
	case "AWS::S3::Bucket":
		return "bucket"
	}
	return typ
}

// replacements lists what an update from the stacks in before to those in after would replace
// or remove of the stateful resources, by stack.
func replacements(before, after []stack) []string {
	var bad []string
	next := map[string]stack{}
	for _, s := range after {
		next[s.Name] = s
	}
	for _, s := range before {
		n, ok := next[s.Name]
		if !ok {
			bad = append(bad, fmt.Sprintf("stack %s is gone from the update: deploying without it leaves it, removing it deletes its resources", s.Name))
			continue
		}
		for _, id := range sortedKeys(s.Res) {
			r := s.Res[id]
			props, ok := stateful[r.Type]
			if !ok {
				continue
			}
			nr, ok := n.Res[id]
			switch {
			case !ok:
				bad = append(bad, fmt.Sprintf("%s %s (%s) is removed or renamed: CloudFormation deletes it (or, retained, orphans it) and its data with it", s.Name, id, r.Type))
			case nr.Type != r.Type:
				bad = append(bad, fmt.Sprintf("%s %s changes type from %s to %s: replaced", s.Name, id, r.Type, nr.Type))
			default:
				for _, p := range props {
					if !reflect.DeepEqual(r.Properties[p], nr.Properties[p]) {
						bad = append(bad, fmt.Sprintf("%s %s (%s): %s changes, which replaces it", s.Name, id, r.Type, p))
					}
				}
				if retained(r) && !retained(nr) {
					bad = append(bad, fmt.Sprintf("%s %s (%s): DeletionPolicy %s becomes %q: a later destroy deletes it with its data", s.Name, id, r.Type, r.DeletionPolicy, nr.DeletionPolicy))
				}
			}
		}
	}
	return bad
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// retained says whether CloudFormation keeps a resource when its stack is deleted.
func retained(r resource) bool {
	return r.DeletionPolicy == "Retain" || r.DeletionPolicy == "RetainExceptOnCreate"
}

// checkAssets refuses an assembly whose file assets point outside it: the CDK writes the
// source directory there when it skipped bundling (cdk bootstrap run in an app's directory
// writes such an assembly into its cdk.out, as does a synth with aws:cdk:bundling-stacks that
// leaves the stack out), and deploying it would zip that directory, a whole repository perhaps,
// as a function's code.
func checkAssets(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.assets.json"))
	if err != nil {
		return err
	}
	sub, _ := filepath.Glob(filepath.Join(dir, "*", "*.assets.json")) // Stages' nested assemblies
	for _, f := range append(files, sub...) {
		var m struct {
			Files map[string]struct {
				Source struct{ Path string } `json:"source"`
			} `json:"files"`
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, id := range sortedKeys(m.Files) {
			p := m.Files[id].Source.Path
			if filepath.IsAbs(p) || strings.HasPrefix(filepath.Clean(p), "..") {
				return fmt.Errorf("%s: asset %s is %s, outside the assembly: it was synthesized without bundling "+
					"(cdk bootstrap in the app's directory writes such an assembly into cdk.out); synthesize it again with cdk synth", rel(f), id[:min(len(id), 12)], p)
			}
		}
	}
	return nil
}
