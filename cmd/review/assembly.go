package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// An assembly is what the report is made from: the stacks' templates and the cdk-nag
// reports of a synthesized cloud assembly.
type assembly struct {
	Stacks []*stack
	// Nag holds every row of every *-NagReport.csv in the assembly directory.
	Nag []nagRow
	// NagReports is how many cdk-nag report files there were; none means cdk-nag did not run.
	NagReports int
}

// A stack is one CloudFormation template of the assembly.
type stack struct {
	Name      string
	Resources map[string]resource
	// IDs are the logical ids of Resources, sorted.
	IDs []string
	// byPath maps a resource's construct path (Metadata aws:cdk:path) to its logical id.
	byPath map[string]string
}

type resource = cfn.Resource

// A nagRow is one line of a cdk-nag report: a rule's verdict on a resource.
type nagRow struct {
	Rule, Path, Compliance, Reason, Level, Info string
}

// loadAssembly reads the stacks the manifest lists (nested assemblies included) or, without
// a manifest, every *.template.json in dir, and the cdk-nag reports next to them.
func loadAssembly(dir string) (*assembly, error) {
	files, err := stackTemplates(dir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no stack template in %s; run `make synth` first", dir)
	}
	a := &assembly{}
	for _, f := range files {
		s, err := readStack(f.name, f.path)
		if err != nil {
			return nil, err
		}
		a.Stacks = append(a.Stacks, s)
	}
	sort.Slice(a.Stacks, func(i, j int) bool { return a.Stacks[i].Name < a.Stacks[j].Name })
	reports, err := filepath.Glob(filepath.Join(dir, "*-NagReport.csv"))
	if err != nil {
		return nil, err
	}
	sort.Strings(reports)
	for _, p := range reports {
		rows, err := readNagReport(p)
		if err != nil {
			return nil, err
		}
		a.Nag = append(a.Nag, rows...)
	}
	a.NagReports = len(reports)
	return a, nil
}

type templateFile struct{ name, path string }

// stackTemplates lists the stack templates of the assembly in dir.
func stackTemplates(dir string) ([]templateFile, error) {
	_, err := os.Stat(filepath.Join(dir, "manifest.json"))
	if errors.Is(err, os.ErrNotExist) {
		paths, err := filepath.Glob(filepath.Join(dir, "*.template.json"))
		var out []templateFile
		for _, p := range paths {
			out = append(out, templateFile{strings.TrimSuffix(filepath.Base(p), ".template.json"), p})
		}
		return out, err
	}
	if err != nil {
		return nil, err
	}
	refs, err := cfn.Stacks(dir)
	if err != nil {
		return nil, err
	}
	out := make([]templateFile, len(refs))
	for i, s := range refs {
		out[i] = templateFile{s.DisplayName, filepath.Join(s.Dir, s.TemplateFile)}
	}
	return out, nil
}

func readStack(name, path string) (*stack, error) {
	res, err := cfn.ReadResources(path)
	if err != nil {
		return nil, err
	}
	s := &stack{Name: name, Resources: res, byPath: map[string]string{}}
	for id, r := range res {
		s.IDs = append(s.IDs, id)
		if p, _ := r.Metadata["aws:cdk:path"].(string); p != "" {
			s.byPath[p] = id
		}
	}
	sort.Strings(s.IDs)
	return s, nil
}

// readNagReport reads a cdk-nag report: a header line, then Rule ID, Resource ID (the
// construct path), Compliance, Exception Reason, Rule Level, Rule Info.
func readNagReport(path string) ([]nagRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = 6
	if _, err := r.Read(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var rows []nagRow
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rows = append(rows, nagRow{rec[0], rec[1], rec[2], rec[3], rec[4], rec[5]})
	}
}

// nagRows returns the report rows about resources of s, with the logical id each concerns
// ("" when the path is not a resource of the template, e.g. a construct without one).
func (a *assembly) nagRows(s *stack) []stackNagRow {
	var out []stackNagRow
	for _, r := range a.Nag {
		if id, ok := s.byPath[r.Path]; ok {
			out = append(out, stackNagRow{r, id})
		} else if strings.HasPrefix(r.Path, s.Name+"/") {
			out = append(out, stackNagRow{r, ""})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Rule != out[j].Rule {
			return out[i].Rule < out[j].Rule
		}
		return out[i].Path < out[j].Path
	})
	return out
}

type stackNagRow struct {
	nagRow
	ID string
}

// strayNagRows returns the report rows about a construct path of no stack of the assembly,
// so that a finding cannot vanish from the report for want of a stack to list it under.
func (a *assembly) strayNagRows() []stackNagRow {
	var out []stackNagRow
	for _, r := range a.Nag {
		found := false
		for _, s := range a.Stacks {
			if _, ok := s.byPath[r.Path]; ok || strings.HasPrefix(r.Path, s.Name+"/") {
				found = true
				break
			}
		}
		if !found {
			out = append(out, stackNagRow{r, ""})
		}
	}
	return out
}
