// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package gardener

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/gardener/gardener/pkg/client/kubernetes"
	gardenerenvtest "github.com/gardener/gardener/test/envtest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

// DisabledAdmissionPlugins are the admission plugins of gardener-apiserver the sandbox's garden
// turns off, each with the reason: they need components or objects of a landscape that the sandbox
// does not run. Every other plugin of gardener-apiserver's default set admits the sandbox's
// Projects, Seeds, CloudProfiles, Shoots and ControllerRegistrations as in a landscape.
// docs/development/sandbox.md lists them (a test compares).
var DisabledAdmissionPlugins = map[string]string{
	// The sandbox's shoots have no DNS provider and the garden no default domain Secret; the
	// plugin would reject every shoot without spec.dns.providers.
	"ShootDNS": "the garden has no default domain Secret and the shoots no DNS provider",
}

// GardenOptions are the settings of StartGarden.
type GardenOptions struct {
	// CRDPaths are CRD files installed into the garden kube-apiserver, e.g. gardener-operator's
	// VerticalPodAutoscaler CRD of a runtime cluster.
	CRDPaths []string
	// AuditDir, if set, makes kube-apiserver write an audit log there (cluster.Cluster.AuditLogPath).
	AuditDir string
	// APIServerLog receives gardener-apiserver's log; nil discards it. gardener-apiserver runs in
	// this process and logs to its stderr, at start even at level error: stack traces of the
	// discovery requests it aborts while its APIs register.
	APIServerLog io.Writer
}

// StartGarden starts a garden as a landscape has it: kube-apiserver with etcd, and
// gardener-apiserver (gardener's test/envtest, in this process) registered behind it through the
// aggregation layer, with its admission plugins except DisabledAdmissionPlugins. Its webhooks
// (ValidatingAdmissionWebhook) call the ValidatingWebhookConfigurations registered in the
// kube-apiserver for Gardener's resources, as in a landscape. Stop stops both.
func StartGarden(opts GardenOptions) (*cluster.Cluster, error) {
	// gardener-apiserver's logger takes the process's stderr when it starts and keeps it, so stderr
	// points at a pipe into APIServerLog while it starts.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("failed creating the pipe for gardener-apiserver's log: %w", err)
	}
	dst := opts.APIServerLog
	if dst == nil {
		dst = io.Discard
	}
	go func() {
		// Ends when Stop closes the writer.
		_, _ = io.Copy(dst, r)
		_ = r.Close()
	}()
	stderr := os.Stderr
	os.Stderr = w
	c, err := cluster.Start("garden", kubernetes.GardenScheme, opts.CRDPaths, cluster.Options{AuditDir: opts.AuditDir, Wrap: gardenerEnvironment})
	os.Stderr = stderr
	if err != nil {
		return nil, errors.Join(err, w.Close())
	}
	c.AddCloser(w.Close)
	return c, nil
}

// gardenerEnvironment wraps env so that starting it also starts gardener-apiserver.
func gardenerEnvironment(env *envtest.Environment) cluster.Environment {
	disabled := slices.Sorted(maps.Keys(DisabledAdmissionPlugins))
	return &gardenerenvtest.GardenerTestEnvironment{
		Environment:         env,
		UseExistingGardener: ptr.To(false),
		GardenerAPIServer: &gardenerenvtest.GardenerAPIServer{
			Args:         []string{"--disable-admission-plugins=" + strings.Join(disabled, ","), "--log-level=error"},
			StartTimeout: cluster.ControlPlaneStartTimeout,
			StopTimeout:  cluster.ControlPlaneStopTimeout,
		},
	}
}
