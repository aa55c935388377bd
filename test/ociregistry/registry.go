// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package ociregistry serves an OCI registry with basic auth on 127.0.0.1 and pushes artifacts in
// Flux's OCI artifact format (what "flux push artifact" and "kluctl oci push" write), so that tests
// can let the real Flux source-controller pull them without reaching the internet.
package ociregistry

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"path"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/archive"
)

const (
	// ConfigMediaType is the config media type of a Flux artifact.
	ConfigMediaType types.MediaType = "application/vnd.cncf.flux.config.v1+json"
	// ContentMediaType is the media type of a Flux artifact's single layer, a tar.gz of the files.
	ContentMediaType types.MediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
)

// Server is an OCI registry over plain HTTP on 127.0.0.1 that answers only requests with its basic
// auth credentials. Registry clients (go-containerregistry, and with it Flux and kluctl) fall back
// to HTTP for loopback registries, so no TLS is needed.
type Server struct {
	// Username and Password are the only accepted credentials.
	Username, Password string

	listener net.Listener
	server   *http.Server
	// pulls counts the authorised manifest requests, unauthorised the refused requests.
	pulls, unauthorised atomic.Int64
}

// Start serves a new, empty registry.
func Start(username, password string) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("failed listening for the OCI registry: %w", err)
	}
	s := &Server{Username: username, Password: password, listener: l}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	s.server = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != s.Username || p != s.Password {
			s.unauthorised.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="ociregistry"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodGet && manifestSegment(r.URL.Path) == "manifests" {
			s.pulls.Add(1)
		}
		inner.ServeHTTP(w, r)
	})}
	go func() { _ = s.server.Serve(l) }()
	return s, nil
}

// manifestSegment returns "manifests" for /v2/<repo>/manifests/<ref> paths.
func manifestSegment(p string) string {
	return path.Base(path.Dir(p))
}

// Host is the registry's host:port.
func (s *Server) Host() string {
	return s.listener.Addr().String()
}

// URL is the oci:// URL of a repository in the registry.
func (s *Server) URL(repository string) string {
	return "oci://" + s.Host() + "/" + repository
}

// Pulls is the number of authorised manifest GET requests so far.
func (s *Server) Pulls() int64 {
	return s.pulls.Load()
}

// Unauthorised is the number of requests refused for missing or wrong credentials so far.
func (s *Server) Unauthorised() int64 {
	return s.unauthorised.Load()
}

// Close stops the registry.
func (s *Server) Close() error {
	return s.server.Close()
}

// Push pushes files (path to content) at the root of the archive, as "flux push artifact" archives
// a directory, as a Flux artifact with the tag into the repository and
// returns the manifest digest.
func (s *Server) Push(repository, tag string, files map[string]string) (string, error) {
	ref, err := name.NewTag(s.Host() + "/" + repository + ":" + tag)
	if err != nil {
		return "", err
	}
	content, err := archive.TarGz(files)
	if err != nil {
		return "", err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, ConfigMediaType)
	if img, err = mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(content, ContentMediaType)}); err != nil {
		return "", fmt.Errorf("failed building the artifact: %w", err)
	}
	if err := remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: s.Username, Password: s.Password})); err != nil {
		return "", fmt.Errorf("failed pushing %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	return digest.String(), nil
}
