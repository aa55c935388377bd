// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Downloader makes a module version available in the module cache and returns its directory.
type Downloader interface {
	Download(ctx context.Context, module, version string) (string, error)
}

// GoModDownloader runs `go mod download -json`, so modules come from GOPROXY through the module
// cache and are verified against go.sum data of the checksum database like any build dependency.
type GoModDownloader struct {
	// GoBin is the go command; empty means "go" from PATH (go generate puts its own first).
	GoBin string
}

type downloadResult struct {
	Path    string
	Version string
	Dir     string
	Error   string
}

// Download implements Downloader.
func (d *GoModDownloader) Download(ctx context.Context, module, version string) (string, error) {
	goBin := d.GoBin
	if goBin == "" {
		goBin = "go"
	}

	// Outside of any module, so the download can neither touch nor be influenced by the go.mod
	// of the repository the generator runs in.
	workDir, err := os.MkdirTemp("", "generate-flux-manifests-")
	if err != nil {
		return "", fmt.Errorf("creating working directory for go mod download: %w", err)
	}
	defer func() { _ = os.RemoveAll(workDir) }()

	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, goBin, "mod", "download", "-json", module+"@"+version)
	cmd.Dir = workDir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GO111MODULE=on")
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	runErr := cmd.Run()

	// On failure go mod download still prints the JSON object, whose Error field is far more
	// telling than the exit status.
	var res downloadResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		if runErr != nil {
			return "", fmt.Errorf("go mod download %s@%s: %w: %s", module, version, runErr, strings.TrimSpace(stderr.String()))
		}
		return "", fmt.Errorf("decoding go mod download output for %s@%s: %w", module, version, err)
	}
	if res.Error != "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, res.Error)
	}
	if runErr != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w: %s", module, version, runErr, strings.TrimSpace(stderr.String()))
	}
	if res.Dir == "" {
		return "", errors.New("go mod download " + module + "@" + version + " reported no directory")
	}
	return res.Dir, nil
}
