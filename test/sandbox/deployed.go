// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/controller/tokenrequestor"
	"github.com/gardener/gardener/pkg/controllermanager/controller/controllerregistration/extensionclusterrole"
	gardenerutils "github.com/gardener/gardener/pkg/utils/gardener"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

// GardenRBACFile is what operators apply to the garden for the extension, relative to the
// repository root: the ClusterRole and the ValidatingAdmissionPolicy (with its binding) that
// confines the extension's Secret writes.
const GardenRBACFile = "example/garden-rbac.yaml"

// DeployedRolloutTimeout bounds StartExtension with Options.Deployed: the rollout of the new
// values through gardener-controller-manager, gardenlet, gardener-resource-manager and the
// kubelet stand-in, the start of the pod and the ControllerInstallation's report.
var DeployedRolloutTimeout = 3 * time.Minute

// deployedEnv is what a deployed extension needs beyond its chart: the binary, the landscape that
// installs it, and a directory for its root file system, volumes and log.
type deployedEnv struct {
	dir     string
	binary  string
	logPath string
	// landscape publishes, registers and installs the extension (landscape.go).
	landscape              *landscape
	seedAudit, gardenAudit *AuditLog

	mu sync.Mutex
	// seedUsers and gardenUsers are the extension's identities in the seed and the garden, of
	// every installation it ran from (a new installation has a new namespace).
	seedUsers, gardenUsers []string
	// ports are the health and metrics ports of the last start.
	ports [2]int
}

// addUsers records the identities of a pod the kubelet stand-in starts.
func (e *deployedEnv) addUsers(seedUser, gardenUser string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !slices.Contains(e.seedUsers, seedUser) {
		e.seedUsers = append(e.seedUsers, seedUser)
	}
	if gardenUser != "" && !slices.Contains(e.gardenUsers, gardenUser) {
		e.gardenUsers = append(e.gardenUsers, gardenUser)
	}
}

func (e *deployedEnv) users() (seed, garden []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.seedUsers), slices.Clone(e.gardenUsers)
}

// deployedExtension is a start of the deployed extension: the rollout the kubelet stand-in runs.
type deployedExtension struct {
	kubelet     *kubelet.SeedKubelet
	healthAddr  string
	metricsAddr string
}

// prepareDeployed builds the binary and creates the directory once per sandbox; it runs before the
// API servers start, so that their audit logs go there.
func (s *Sandbox) prepareDeployed(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "shoot-flux-deployed-")
	if err != nil {
		return fmt.Errorf("failed creating directory of the deployed extension: %w", err)
	}
	// The root directories of the mount namespace are traversed by the extension's user.
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("failed preparing directory of the deployed extension: %w", err)
	}
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	binary := filepath.Join(dir, "gardener-extension-shoot-flux")
	if s.opts.ExtensionBinary != "" {
		if err := copyExecutable(s.opts.ExtensionBinary, binary); err != nil {
			return err
		}
	} else {
		s.log.Info("Building the extension binary", "path", binary)
		if err := BuildExtension(ctx, root, binary); err != nil {
			return err
		}
	}
	s.deployedEnv = &deployedEnv{dir: dir, binary: binary, logPath: s.opts.ExtensionLogPath}
	if s.deployedEnv.logPath == "" {
		s.deployedEnv.logPath = filepath.Join(dir, "extension.log")
	}
	if s.opts.AuditLogDir == "" {
		s.opts.AuditLogDir = dir
	}
	return nil
}

// deployedValues are the ControllerDeployment values of one start: free ports (others than the
// last start's, so that the rollout of this start is told from the last one by them) and the
// settings of the sandbox as chart values.
func (s *Sandbox) deployedValues(cfg *config.ControllerConfiguration, workers int) (map[string]any, kubelet.Rollout, error) {
	var want kubelet.Rollout
	for {
		var err error
		if want.HealthPort, err = kubelet.FreePort(); err != nil {
			return nil, want, err
		}
		if want.MetricsPort, err = kubelet.FreePort(); err != nil {
			return nil, want, err
		}
		last := s.deployedEnv.ports
		if want.HealthPort != want.MetricsPort && !slices.Contains(last[:], want.HealthPort) && !slices.Contains(last[:], want.MetricsPort) {
			break
		}
	}
	versioned, err := loader.Versioned(cfg)
	if err != nil {
		return nil, want, err
	}
	data, err := json.Marshal(versioned)
	if err != nil {
		return nil, want, fmt.Errorf("failed encoding the configuration: %w", err)
	}
	configValues := map[string]any{}
	if err := json.Unmarshal(data, &configValues); err != nil {
		return nil, want, fmt.Errorf("failed encoding the configuration: %w", err)
	}
	delete(configValues, "apiVersion")
	delete(configValues, "kind")
	if s.opts.HealthCheck {
		configValues["healthCheckConfig"] = map[string]any{"syncPeriod": HealthCheckSyncPeriod.String()}
	}
	values := map[string]any{
		"metrics":    map[string]any{"port": want.MetricsPort},
		"healthPort": want.HealthPort,
		"controllers": map[string]any{
			"extension":                 map[string]any{"concurrentSyncs": workers},
			"ignoreOperationAnnotation": s.opts.IgnoreOperationAnnotation,
		},
		"config":             configValues,
		"disableControllers": []any{},
	}
	if !s.opts.HealthCheck {
		values["disableControllers"] = []any{healthcheck.ControllerName}
	}
	return values, want, nil
}

// startDeployed configures the extension as an operator does, in the ControllerDeployment's values
// (and gardenlet's garden address, see ExtensionSettings.GardenAddress), and waits until the
// landscape rolled it out: the kubelet stand-in runs the new Deployment's pod, which reports
// ready, and the ControllerInstallation reports the installation healthy.
func (s *Sandbox) startDeployed(ctx context.Context, cfg *config.ControllerConfiguration, workers int, gardenAddress string) (*deployedExtension, error) {
	env := s.deployedEnv
	values, want, err := s.deployedValues(cfg, workers)
	if err != nil {
		return nil, err
	}
	if err := s.setGardenletAddress(ctx, gardenAddress); err != nil {
		return nil, err
	}
	if err := s.setDeploymentValues(ctx, values); err != nil {
		return nil, err
	}
	env.ports = [2]int{want.HealthPort, want.MetricsPort}
	k := env.landscape.kubelet
	k.Run(want)
	d := &deployedExtension{
		kubelet:     k,
		healthAddr:  net.JoinHostPort("127.0.0.1", strconv.Itoa(want.HealthPort)),
		metricsAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(want.MetricsPort)),
	}
	s.log.Info("Rolling out the deployed extension", "log", env.logPath)
	if err := s.waitRollout(ctx, want); err != nil {
		return nil, errors.Join(fmt.Errorf("the deployed extension (log: %s): %w", env.logPath, err), d.stop())
	}
	return d, nil
}

// waitRollout waits until the kubelet stand-in runs a ready pod of the rollout and gardenlet
// reports the ControllerInstallation Valid, Installed, Healthy and not Progressing. A pod of the
// rollout that ends before it is ready fails the wait at once.
func (s *Sandbox) waitRollout(ctx context.Context, want kubelet.Rollout) error {
	k := s.deployedEnv.landscape.kubelet
	var (
		state      string
		conditions []gardencorev1beta1.Condition
	)
	err := wait.PollUntilContextTimeout(ctx, PollInterval, DeployedRolloutTimeout, true, func(ctx context.Context) (bool, error) {
		ready, st, err := k.RolloutState(want)
		state = st
		if err != nil {
			return false, err
		}
		if !ready {
			return false, nil
		}
		ci, err := s.ControllerInstallation(ctx)
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		conditions = ci.Status.Conditions
		return v1beta1helper.IsControllerInstallationSuccessful(*ci) && conditionTrue(conditions, gardencorev1beta1.ControllerInstallationValid), nil
	})
	if err != nil {
		return fmt.Errorf("not rolled out within %s (pod: %s; ControllerInstallation: %s): %w", DeployedRolloutTimeout, state, FormatConditions(conditions), err)
	}
	return nil
}

func conditionTrue(conditions []gardencorev1beta1.Condition, t gardencorev1beta1.ConditionType) bool {
	c := v1beta1helper.GetCondition(conditions, t)
	return c != nil && c.Status == gardencorev1beta1.ConditionTrue
}

// FormatConditions formats conditions as "Type=Status (Reason: Message)", one after the other.
func FormatConditions(conditions []gardencorev1beta1.Condition) string {
	if len(conditions) == 0 {
		return "no conditions"
	}
	parts := make([]string, 0, len(conditions))
	for _, c := range conditions {
		parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, "; ")
}

// stop ends the start: the kubelet stand-in stops the pod and runs none until the next start, as
// if the extension's node were gone.
func (d *deployedExtension) stop() error {
	if d == nil {
		return nil
	}
	return d.kubelet.Suspend()
}

// ExtensionLogPath is the log of the deployed extension (Options.Deployed); empty otherwise.
func (s *Sandbox) ExtensionLogPath() string {
	if s.deployedEnv == nil {
		return ""
	}
	return s.deployedEnv.logPath
}

// ExtensionNamespace is the seed namespace gardenlet installed the deployed extension into
// (Options.Deployed): extension-<ControllerInstallation>.
func (s *Sandbox) ExtensionNamespace(ctx context.Context) (string, error) {
	ci, err := s.ControllerInstallation(ctx)
	if err != nil {
		return "", err
	}
	return gardenerutils.NamespaceNameForControllerInstallation(ci), nil
}

// DeniedRequests returns the requests of the deployed extension's seed and garden identities that
// the API servers refused (403) since the previous call, as "<cluster>: <permission>: <message>".
// A permission the chart or GardenRBACFile lacks shows up here by name.
func (s *Sandbox) DeniedRequests() ([]string, error) {
	env := s.deployedEnv
	if env == nil || env.seedAudit == nil {
		return nil, errors.New("the extension does not run as deployed")
	}
	seedUsers, gardenUsers := env.users()
	var (
		denied []string
		counts = map[string]int{}
	)
	for _, c := range []struct {
		name  string
		log   *AuditLog
		users []string
	}{{"seed", env.seedAudit, seedUsers}, {"garden", env.gardenAudit, gardenUsers}} {
		events, err := c.log.Read(func(e AuditEvent) bool {
			return slices.Contains(c.users, e.User.Username) && e.ResponseStatus != nil && e.ResponseStatus.Code == 403
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		for _, e := range events {
			line := fmt.Sprintf("%s: %s denied to %s: %s", c.name, e.Permission(), e.User.Username, e.ResponseStatus.Message)
			if counts[line] == 0 {
				denied = append(denied, line)
			}
			counts[line]++
		}
	}
	for i, line := range denied {
		if n := counts[line]; n > 1 {
			denied[i] = fmt.Sprintf("%s (%d times)", line, n)
		}
	}
	return denied, nil
}

// admitExtensionPod lets the seed's kubelet stand-in start the extension's pod once the garden
// enforces the admission policy of GardenRBACFile on the pod's garden identity, and records the
// pod's identities for DeniedRequests.
func (s *Sandbox) admitExtensionPod(ctx context.Context, seedUser, gardenUser string) error {
	if gardenUser != "" {
		enforced, answer, err := gardenPolicyEnforced(ctx, s.Garden.Config, gardenUser)
		if err != nil {
			return err
		}
		if !enforced {
			return fmt.Errorf("the garden does not enforce the admission policy of %s on %s yet (its answer to a forbidden Secret: %s)", GardenRBACFile, gardenUser, answer)
		}
	}
	s.deployedEnv.addUsers(seedUser, gardenUser)
	return nil
}

// gardenPolicyEnforced tells, with the garden's last answer, whether the asynchronously loaded
// admission policy of GardenRBACFile holds for the extension's garden user: a dry-run create as
// that user that the policy forbids and the bound ClusterRole allows.
func gardenPolicyEnforced(ctx context.Context, garden *rest.Config, user string) (bool, string, error) {
	cfg := rest.CopyConfig(garden)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return false, "", fmt.Errorf("failed creating a garden client as %s: %w", user, err)
	}
	probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "garden-policy-probe", Namespace: GardenAccessNamespace}}
	err = c.Create(ctx, probe, client.DryRunAll)
	switch {
	case err == nil:
		return false, "accepted", nil
	case apierrors.ReasonForError(err) == metav1.StatusReasonUnknown:
		// Only the API server's answers count; the client's own errors, e.g. about the deadline,
		// would hide what the garden said.
		return false, "none", nil
	}
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"), err.Error(), nil
}

// GenericGardenKubeconfig is the kubeconfig gardenlet writes for injectGardenKubeconfig: the
// garden's address and CA, and a token file that is renewed next to it.
func GenericGardenKubeconfig(garden *rest.Config, tokenFile string) ([]byte, error) {
	kubeconfig, err := clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"garden": {Server: garden.Host, CertificateAuthorityData: garden.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"extension": {TokenFile: tokenFile}},
		Contexts:       map[string]*clientcmdapi.Context{"garden": {Cluster: "garden", AuthInfo: "extension"}},
		CurrentContext: "garden",
	})
	if err != nil {
		return nil, fmt.Errorf("failed writing the generic garden kubeconfig: %w", err)
	}
	return kubeconfig, nil
}

// GardenAccessNamespace is the garden namespace of the sandbox's seed, where gardenlet's token
// requestor creates the extension's dedicated garden ServiceAccount.
const GardenAccessNamespace = "seed-" + SeedName

// GrantGardenAccess does once, with gardener's code, what gardener does for the chart's garden
// access: gardenlet's token requestor fills the access Secret and gardener-controller-manager binds
// the extension ClusterRoles to its ServiceAccount. It returns the token and the user name.
func GrantGardenAccess(ctx context.Context, seed, garden client.Client, accessSecret client.ObjectKey, clusterRoles []string) ([]byte, string, error) {
	secret, token, err := requestToken(ctx, &tokenrequestor.Reconciler{
		SourceClient:    seed,
		TargetClient:    garden,
		Clock:           clock.RealClock{},
		JitterFunc:      wait.Jitter,
		Class:           ptr.To(resourcesv1alpha1.ResourceManagerClassGarden),
		TargetNamespace: GardenAccessNamespace,
	}, accessSecret)
	if err != nil {
		return nil, "", fmt.Errorf("garden access: %w", err)
	}
	for _, name := range clusterRoles {
		if _, err := (&extensionclusterrole.Reconciler{Client: garden}).Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
			return nil, "", fmt.Errorf("failed binding ClusterRole %s: %w", name, err)
		}
	}
	return token, "system:serviceaccount:" + GardenAccessNamespace + ":" + secret.Annotations[resourcesv1alpha1.ServiceAccountName], nil
}

// requestToken runs gardener's token requestor once for an access Secret, as gardenlet does for
// garden access and gardener-resource-manager for shoot access, and returns the Secret with the
// token it wrote.
func requestToken(ctx context.Context, requestor *tokenrequestor.Reconciler, accessSecret client.ObjectKey) (*corev1.Secret, []byte, error) {
	if _, err := requestor.Reconcile(ctx, reconcile.Request{NamespacedName: accessSecret}); err != nil {
		return nil, nil, fmt.Errorf("failed requesting the token of %s: %w", accessSecret, err)
	}
	secret := &corev1.Secret{}
	if err := requestor.SourceClient.Get(ctx, accessSecret, secret); err != nil {
		return nil, nil, fmt.Errorf("failed reading the access Secret %s: %w", accessSecret, err)
	}
	token := secret.Data[resourcesv1alpha1.DataKeyToken]
	if len(token) == 0 {
		return nil, nil, fmt.Errorf("the token requestor wrote no token into %s", accessSecret)
	}
	return secret, token, nil
}
