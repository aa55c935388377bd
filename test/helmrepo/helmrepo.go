// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package helmrepo serves Helm charts over HTTP the way a chart repository does (index.yaml and
// the chart archives it lists), so that tests can let the real Flux source- and helm-controller
// install a release without reaching the internet.
package helmrepo

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"sync"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/archive"
)

// Chart is a chart the repository serves.
type Chart struct {
	// Name and Version identify the chart; Version must be SemVer.
	Name, Version string
	// Values is the content of values.yaml.
	Values string
	// Templates maps file names below templates/ to their content.
	Templates map[string]string
}

// archiveDate makes the index independent of when the test runs.
var archiveDate = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Archive returns the chart as the .tgz that `helm package` writes: a directory named after the
// chart with Chart.yaml, values.yaml and templates/.
func (c Chart) Archive() ([]byte, error) {
	chartYAML, err := yaml.Marshal(map[string]any{"apiVersion": "v2", "name": c.Name, "version": c.Version, "type": "application"})
	if err != nil {
		return nil, fmt.Errorf("encoding Chart.yaml of %s: %w", c.Name, err)
	}
	files := map[string]string{path.Join(c.Name, "Chart.yaml"): string(chartYAML), path.Join(c.Name, "values.yaml"): c.Values}
	for name, content := range c.Templates {
		files[path.Join(c.Name, "templates", name)] = content
	}
	out, err := archive.TarGz(files)
	if err != nil {
		return nil, fmt.Errorf("archiving chart %s: %w", c.Name, err)
	}
	return out, nil
}

// Server is a chart repository on 127.0.0.1.
type Server struct {
	listener net.Listener
	server   *http.Server

	mu    sync.Mutex
	files map[string][]byte
	// requests counts the requests per path, e.g. to see that the controller fetched a chart.
	requests map[string]int
}

// Start serves the charts until Close.
func Start(charts ...Chart) (*Server, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the chart repository: %w", err)
	}
	s := &Server{listener: listener, files: map[string][]byte{}, requests: map[string]int{}}
	if err := s.publish(charts); err != nil {
		return nil, errors.Join(err, listener.Close())
	}
	s.server = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.server.Serve(listener) }()
	return s, nil
}

// URL is the repository URL, for a Flux HelmRepository.
func (s *Server) URL() string {
	return "http://" + s.listener.Addr().String()
}

// Requests returns how often a file (e.g. "index.yaml") was fetched.
func (s *Server) Requests(file string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[file]
}

// Close stops the server.
func (s *Server) Close() error {
	return s.server.Close()
}

func (s *Server) publish(charts []Chart) error {
	entries := map[string][]map[string]any{}
	for _, c := range charts {
		archive, err := c.Archive()
		if err != nil {
			return err
		}
		file := fmt.Sprintf("%s-%s.tgz", c.Name, c.Version)
		s.files[file] = archive
		sum := sha256.Sum256(archive)
		entries[c.Name] = append(entries[c.Name], map[string]any{
			"apiVersion": "v2",
			"name":       c.Name,
			"version":    c.Version,
			"type":       "application",
			"urls":       []string{s.URL() + "/" + file},
			"digest":     hex.EncodeToString(sum[:]),
			"created":    archiveDate.Format(time.RFC3339),
		})
	}
	index, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "entries": entries, "generated": archiveDate.Format(time.RFC3339)})
	if err != nil {
		return fmt.Errorf("encoding index.yaml: %w", err)
	}
	s.files["index.yaml"] = index
	return nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	file := path.Base(path.Clean(r.URL.Path))
	s.mu.Lock()
	content, ok := s.files[file]
	if ok {
		s.requests[file]++
	}
	s.mu.Unlock()
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(content)
}
