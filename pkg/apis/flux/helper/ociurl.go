// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package helper

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// OCIScheme is the prefix of OCI artifact repository URLs, as Flux and kluctl write them.
const OCIScheme = "oci://"

var (
	// ociTagRegexp is the tag grammar of the OCI distribution specification.
	ociTagRegexp = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	// ociDigestRegexp are the digest algorithms registries and Flux support.
	ociDigestRegexp = regexp.MustCompile(`^(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$`)
)

// OCIURL is a parsed OCI artifact repository URL.
type OCIURL struct {
	// Registry is the registry host with its port, if any.
	Registry string
	// Repository is the repository path inside the registry.
	Repository string
}

// ParseOCIURL parses oci://registry[:port]/repository. The registry must be written out: a
// registry-less name would silently mean Docker Hub. Tags, digests, credentials and queries belong
// elsewhere and are rejected.
func ParseOCIURL(s string) (*OCIURL, error) {
	if s == "" {
		return nil, errors.New("must not be empty")
	}
	rest, ok := strings.CutPrefix(s, OCIScheme)
	if !ok {
		return nil, fmt.Errorf("must start with %s", OCIScheme)
	}
	host, repo, ok := strings.Cut(rest, "/")
	switch {
	case !ok || repo == "":
		return nil, errors.New("must be oci://registry/repository")
	case strings.ContainsAny(host, "@?#") || strings.ContainsAny(repo, "?#"):
		return nil, errors.New("must not contain credentials, a query or a fragment")
	case strings.Contains(repo, "@"):
		return nil, errors.New("must not contain a digest; set ref.digest")
	case strings.Contains(repo, ":"):
		return nil, errors.New("must not contain a tag; set ref.tag")
	case !strings.ContainsAny(host, ".:") && host != "localhost":
		return nil, fmt.Errorf("registry %q must be a host name with a dot or a port, or localhost", host)
	}
	r, err := name.NewRepository(rest, name.StrictValidation)
	if err != nil {
		return nil, err
	}
	return &OCIURL{Registry: r.RegistryStr(), Repository: r.RepositoryStr()}, nil
}

// String returns the URL in the form Flux and kluctl understand.
func (u *OCIURL) String() string {
	return OCIScheme + u.Registry + "/" + u.Repository
}

// IsOCITag tells whether tag is a valid OCI tag.
func IsOCITag(tag string) bool {
	return ociTagRegexp.MatchString(tag)
}

// IsOCIDigest tells whether digest is a sha256 or sha512 manifest digest.
func IsOCIDigest(digest string) bool {
	return ociDigestRegexp.MatchString(digest)
}
