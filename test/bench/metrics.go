// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
)

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// metrics is a scrape of a Prometheus endpoint.
type metrics []sample

// parseMetrics reads the Prometheus text exposition format. Only what the benchmark needs is
// supported: comments, names, labels with escaped values and a value; timestamps are ignored.
func parseMetrics(r io.Reader) (metrics, error) {
	var out metrics
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for line := 1; s.Scan(); line++ {
		text := strings.TrimSpace(s.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		smp, err := parseSample(text)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w", line, err)
		}
		out = append(out, smp)
	}
	return out, s.Err()
}

func parseSample(text string) (sample, error) {
	smp := sample{labels: map[string]string{}}
	end := strings.IndexAny(text, "{ ")
	if end <= 0 {
		return smp, fmt.Errorf("no metric name in %q", text)
	}
	smp.name, text = text[:end], text[end:]
	if strings.HasPrefix(text, "{") {
		rest, err := parseLabels(text[1:], smp.labels)
		if err != nil {
			return smp, fmt.Errorf("metric %s: %w", smp.name, err)
		}
		text = rest
	}
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return smp, fmt.Errorf("metric %s has no value", smp.name)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return smp, fmt.Errorf("metric %s: invalid value %q: %w", smp.name, fields[0], err)
	}
	smp.value = v
	return smp, nil
}

// parseLabels reads `name="value",...}` into labels and returns the text after the brace.
func parseLabels(text string, labels map[string]string) (string, error) {
	for {
		text = strings.TrimLeft(text, " ,")
		if strings.HasPrefix(text, "}") {
			return text[1:], nil
		}
		eq := strings.Index(text, "=\"")
		if eq <= 0 {
			return "", fmt.Errorf("malformed labels %q", text)
		}
		name := text[:eq]
		text = text[eq+2:]
		var value strings.Builder
		closed := false
		for i := 0; i < len(text); i++ {
			c := text[i]
			if c == '\\' && i+1 < len(text) {
				i++
				switch text[i] {
				case 'n':
					value.WriteByte('\n')
				default:
					value.WriteByte(text[i])
				}
				continue
			}
			if c == '"' {
				text, closed = text[i+1:], true
				break
			}
			value.WriteByte(c)
		}
		if !closed {
			return "", fmt.Errorf("unterminated value of label %s", name)
		}
		labels[name] = value.String()
	}
}

// value returns the sum of all samples of a metric whose labels match.
func (m metrics) value(name string, match func(labels map[string]string) bool) float64 {
	var sum float64
	for _, s := range m {
		if s.name == name && (match == nil || match(s.labels)) {
			sum += s.value
		}
	}
	return sum
}

// requests counts client-go requests of the extension, by API server and kind.
type requests struct {
	SeedReads, SeedWrites, GardenReads, GardenWrites float64
}

// requestCounts splits client-go's rest_client_requests_total into reads (GET, LIST and WATCH
// are all GET requests) and writes per API server.
func requestCounts(m metrics, seedHost, gardenHost string) requests {
	var r requests
	for _, s := range m {
		if s.name != "rest_client_requests_total" {
			continue
		}
		read := s.labels["method"] == "GET"
		switch s.labels["host"] {
		case seedHost:
			if read {
				r.SeedReads += s.value
			} else {
				r.SeedWrites += s.value
			}
		case gardenHost:
			if read {
				r.GardenReads += s.value
			} else {
				r.GardenWrites += s.value
			}
		}
	}
	return r
}

func (r requests) minus(o requests) requests {
	return requests{
		SeedReads:    r.SeedReads - o.SeedReads,
		SeedWrites:   r.SeedWrites - o.SeedWrites,
		GardenReads:  r.GardenReads - o.GardenReads,
		GardenWrites: r.GardenWrites - o.GardenWrites,
	}
}

// hostOf returns the host:port client-go reports for an API server address.
func hostOf(address string) (string, error) {
	u, err := url.Parse(address)
	if err != nil {
		return "", fmt.Errorf("invalid API server address %q: %w", address, err)
	}
	return u.Host, nil
}
