// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"strings"
	"time"
)

// report collects the benchmark's figures as a table of rows under section titles.
type report struct {
	header []string
	rows   []row
	err    error
}

type row struct {
	section           string
	note              string
	name, value, goal string
	verdictOrRemark   string
}

func newReport(o options) *report {
	header := []string{
		"shoot-flux extension benchmark, " + time.Now().UTC().Format(time.RFC3339),
		environment(o),
		"The extension runs as a separate process (the binary of cmd/gardener-extension-shoot-flux).",
	}
	if o.firstDeploy > 0 {
		header = append(header,
			"Every shoot has a control plane of its own and runs the delivered controllers (sandbox",
			"ShootSpec.RunControllers); the git server serves the kluctl project over SSH.")
	} else if o.markApplied {
		header = append(header,
			"All shoots are light and no resource manager applies anything: a stand-in marks every",
			"ManagedResource applied as soon as it is written, as if every shoot had a resource manager",
			"of its own with room to spare. The figures are the extension's and the seed API server's.")
	} else {
		header = append(header,
			"All shoots are light: they share one shoot API server and one gardener-resource-manager, which",
			"applies every shoot's ManagedResources into that one API server. Objects with equal names of",
			"different shoots overwrite each other there; that does not matter for these figures, but the",
			"shared resource manager and API server take part in every wait for an applied ManagedResource",
			"(and each apply rewrites all objects, whose origin annotation names the last ManagedResource).")
	}
	return &report{header: header}
}

func (r *report) section(format string, args ...any) {
	r.rows = append(r.rows, row{section: fmt.Sprintf(format, args...)})
}

// note adds a paragraph, e.g. an explanation of the figures above it.
func (r *report) note(format string, args ...any) {
	r.rows = append(r.rows, row{note: fmt.Sprintf(format, args...)})
}

func (r *report) add(name, value, goal, remark string) {
	r.rows = append(r.rows, row{name: name, value: value, goal: goal, verdictOrRemark: remark})
}

// fail records the error that ended the benchmark and returns it.
func (r *report) fail(err error) error {
	r.err = err
	return err
}

func (r *report) String() string {
	nameWidth, valueWidth, goalWidth := len("figure"), len("value"), len("goal")
	for _, row := range r.rows {
		nameWidth = max(nameWidth, len([]rune(row.name)))
		valueWidth = max(valueWidth, len([]rune(row.value)))
		goalWidth = max(goalWidth, len([]rune(row.goal)))
	}
	var b strings.Builder
	for _, h := range r.header {
		b.WriteString(h + "\n")
	}
	b.WriteString("\n")
	line := func(name, value, goal, remark string) {
		fmt.Fprintf(&b, "%s  %s  %s  %s", pad(name, nameWidth), pad(value, valueWidth), pad(goal, goalWidth), remark)
		b.WriteString("\n")
	}
	line("figure", "value", "goal", "")
	for _, row := range r.rows {
		if row.section != "" {
			b.WriteString("\n" + row.section + "\n")
			continue
		}
		if row.note != "" {
			b.WriteString(wrap(row.note, "  ", noteWidth))
			continue
		}
		line(row.name, row.value, row.goal, row.verdictOrRemark)
	}
	if r.err != nil {
		fmt.Fprintf(&b, "\nThe benchmark did not complete: %v\n", r.err)
	}
	lines := strings.Split(b.String(), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.Join(lines, "\n")
}

func pad(s string, width int) string {
	return s + strings.Repeat(" ", max(0, width-len([]rune(s))))
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}

func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.String()
}

func perShoot(v, n float64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v/n)
}

func bytesize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// noteWidth is the line length notes are wrapped at.
const noteWidth = 100

// wrap breaks text into lines of at most width characters, each starting with indent.
func wrap(text, indent string, width int) string {
	var b, line strings.Builder
	for _, word := range strings.Fields(text) {
		if line.Len() > 0 && len(indent)+line.Len()+1+len(word) > width {
			b.WriteString(indent + line.String() + "\n")
			line.Reset()
		}
		if line.Len() > 0 {
			line.WriteString(" ")
		}
		line.WriteString(word)
	}
	if line.Len() > 0 {
		b.WriteString(indent + line.String() + "\n")
	}
	return b.String()
}
