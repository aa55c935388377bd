// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gardener/gardener/pkg/apis/core"
	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	seedsystem "github.com/gardener/gardener/pkg/component/seed/system"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/hack/publish/publish"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/ociregistry"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/gardener"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubecontrollermanager"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

// With Options.Deployed the extension is installed by Gardener's own code, as in a landscape:
// published by hack/publish, scheduled by gardener-controller-manager, rendered by gardenlet's
// ControllerInstallation controllers, applied by the seed's resource manager and run by the seed's
// kubelet stand-in (docs/development/sandbox.md lists what runs and what stands in).

const (
	// RegistrationName names shoot-flux's ControllerRegistration and ControllerDeployment, as in
	// example/controller-registration.yaml.
	RegistrationName = "shoot-flux"
	// registryUser is the user of the sandbox's registry; its password is random.
	registryUser = "landscape"
)

// ControllerInstallationCareSyncPeriod is how often gardenlet's care controller checks the
// ControllerInstallation again besides the ManagedResource's condition changes (gardenlet's
// default).
var ControllerInstallationCareSyncPeriod = 30 * time.Second

// landscape is what installs the extension with Options.Deployed.
type landscape struct {
	registry *ociregistry.Server
	// image and chart are what publishing pushed.
	image, chart publish.Pushed
	// publishedValues are the ControllerDeployment's helm values publishing wrote; the sandbox's
	// settings are merged over them (setDeploymentValues).
	publishedValues map[string]any

	gardenerControllerManager, resourceManager, seedKubeControllerManager *cluster.Runner
	gardenlet                                                             *cluster.Runner
	// gardenAddress is the garden address gardenlet's configuration hands the extension
	// (gardenClientConnection.gardenClusterAddress); empty for the garden's own.
	gardenAddress string
	kubelet       *kubelet.SeedKubelet
}

// publishExtension installs the extension as InstallationDoc tells an operator to, into a registry
// of its own: the page's steps run (see InstallationSteps), `make publish` pushes the extension
// binary and its chart (package publish, the code behind `make publish`), the page's kubectl
// commands create the chart pull Secret in the garden, and the ControllerDeployment and
// ControllerRegistration that publishing wrote and the page applies are returned.
func (s *Sandbox) publishExtension(ctx context.Context) ([]*unstructured.Unstructured, error) {
	env := s.deployedEnv
	l := &landscape{}
	env.landscape = l
	password, err := randomHex(16)
	if err != nil {
		return nil, err
	}
	if l.registry, err = ociregistry.Start(registryUser, password); err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	version, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return nil, fmt.Errorf("failed reading the version: %w", err)
	}
	steps, err := ReadInstallationSteps()
	if err != nil {
		return nil, err
	}
	if steps.GardenRBAC != GardenRBACFile {
		return nil, fmt.Errorf("%s gives the extension its garden permissions with %s, the sandbox with %s", InstallationDoc, steps.GardenRBAC, GardenRBACFile)
	}
	operator, err := os.MkdirTemp(env.dir, "operator-")
	if err != nil {
		return nil, err
	}
	// The page has the operator set the registry's user and token in the environment.
	commands, err := steps.Record(ctx, operator, l.registry.Host(), map[string]string{"REGISTRY_USER": registryUser, "REGISTRY_TOKEN": password})
	if err != nil {
		return nil, err
	}
	pullSecret, err := chartPullSecretOf(commands)
	if err != nil {
		return nil, err
	}
	installDir := filepath.Join(operator, docInstallDir)
	// What the page leaves to the operator, as `make publish` variables of its table: no base image
	// (the kubelet stand-in runs the binary on this machine, for its platform), the sandbox's
	// install directory, and the chart pull Secret of step 3, which a private registry needs.
	overrides := map[string]string{"BASE_IMAGE": "scratch", "PLATFORM": hostPlatform, "INSTALL_DIR": installDir, "CHART_PULL_SECRET": pullSecret}
	for k := range overrides {
		if !slices.Contains(steps.Variables, k) {
			return nil, fmt.Errorf("%s does not document the make publish variable %s the sandbox sets", InstallationDoc, k)
		}
	}
	files, err := s.runInstallation(ctx, commands, installDir, overrides, func(vars map[string]string, auth authn.Authenticator) error {
		s.log.Info("Publishing the extension", "registry", vars["REGISTRY"])
		image, chart, _, err := publish.Extension(ctx, publish.Options{
			Registry:        vars["REGISTRY"],
			Version:         cmp.Or(vars["VERSION"], strings.TrimSpace(string(version))),
			DefaultRegistry: publish.ChartsDefaultRegistry,
			BaseImage:       vars["BASE_IMAGE"],
			Platform:        vars["PLATFORM"],
			Output:          vars["INSTALL_DIR"],
			ChartPullSecret: vars["CHART_PULL_SECRET"],
			Insecure:        vars["INSECURE"] == "true",
			RemoteOptions:   []remote.Option{remote.WithAuth(auth)},
		}, root, env.binary)
		if err != nil {
			return fmt.Errorf("failed publishing the extension: %w", err)
		}
		l.image, l.chart = image, chart
		return nil
	})
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("failed reading what %s applies: %w", InstallationDoc, err)
		}
		decoded, err := DecodeObjects(data)
		if err != nil {
			return nil, fmt.Errorf("failed decoding %s: %w", f, err)
		}
		objs = append(objs, decoded...)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "ControllerDeployment":
			values, _, err := unstructured.NestedMap(o.Object, "helm", "values")
			if err != nil {
				return nil, fmt.Errorf("failed reading the published ControllerDeployment's values: %w", err)
			}
			l.publishedValues = values
		case "ControllerRegistration":
			// The extension runs from the sandbox's start on, before the first shoot needs it
			// (StartExtension promises a running extension), as an operator's registration with
			// this policy does. The published registration installs it with the first shoot.
			if err := unstructured.SetNestedField(o.Object, string(gardencorev1beta1.ControllerDeploymentPolicyAlways), "spec", "deployment", "policy"); err != nil {
				return nil, fmt.Errorf("failed setting the registration's deployment policy: %w", err)
			}
		}
	}
	return objs, nil
}

// registryAuth are the credentials of the sandbox's registry.
func (l *landscape) registryAuth() remote.Option {
	return remote.WithAuth(&authn.Basic{Username: l.registry.Username, Password: l.registry.Password})
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("failed generating a password: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// startLandscape sets up what a landscape has around the installation and starts gardener's
// controllers that install the extension, and the kubelet stand-in that runs it.
func (s *Sandbox) startLandscape(ctx context.Context) error {
	env := s.deployedEnv
	l := env.landscape
	env.seedAudit = &AuditLog{Path: s.Seed.AuditLogPath}
	env.gardenAudit = &AuditLog{Path: s.Garden.AuditLogPath}

	// gardener-controller-manager creates the seed's namespace in the garden, where gardenlet's
	// token requestor creates the extension's garden ServiceAccount.
	if err := ensureNamespace(ctx, s.Garden.Client, GardenAccessNamespace, nil); err != nil {
		return err
	}
	if err := s.applyGardenRBAC(ctx); err != nil {
		return err
	}
	// gardenlet records the seed's cluster identity when it starts; its ControllerInstallation
	// controller refuses to install without it.
	seed := &gardencorev1beta1.Seed{}
	if err := s.Garden.Client.Get(ctx, client.ObjectKey{Name: SeedName}, seed); err != nil {
		return fmt.Errorf("failed reading Seed %s: %w", SeedName, err)
	}
	patch := client.MergeFrom(seed.DeepCopy())
	seed.Status.ClusterIdentity = ptr.To("seed-" + SeedName)
	if err := s.Garden.Client.Status().Patch(ctx, seed, patch); err != nil {
		return fmt.Errorf("failed setting the cluster identity of Seed %s: %w", SeedName, err)
	}

	var err error
	// The seed's kube-controller-manager: deleting an installation deletes its namespace, and
	// gardener-resource-manager deletes Deployments with foreground propagation.
	if l.seedKubeControllerManager, err = kubecontrollermanager.Start(ctx, s.log.WithName("seed-kube-controller-manager"), s.Seed); err != nil {
		return err
	}
	if l.resourceManager, err = gardener.StartResourceManager(ctx, s.log.WithName("seed-resource-manager"), s.Seed.Config, s.Seed, gardener.ResourceManagerOptions{
		Name:             "seed",
		Namespace:        GardenNamespace,
		ConcurrentSyncs:  ResourceManagerConcurrentSyncs,
		SyncPeriod:       ResourceManagerSyncPeriod,
		Class:            v1beta1constants.SeedResourceManagerClass,
		HealthSyncPeriod: ResourceManagerSyncPeriod,
		DeletionRequeue:  ResourceManagerDeletionRequeue,
	}); err != nil {
		return err
	}
	// gardenlet's seed reconcile deploys the seed's system resources, among them the
	// PriorityClass the chart's pods run with, which the seed's admission requires.
	system := seedsystem.New(s.Seed.Client, GardenNamespace, seedsystem.Values{ManagePriorityClasses: true})
	if err := system.Deploy(ctx); err != nil {
		return fmt.Errorf("failed deploying the seed's system resources: %w", err)
	}
	if err := system.Wait(ctx); err != nil {
		return fmt.Errorf("the seed's system resources: %w", err)
	}
	if l.gardenerControllerManager, err = gardener.StartControllerManager(ctx, s.log.WithName("gardener-controller-manager"), s.Garden); err != nil {
		return err
	}
	if l.gardenlet, err = s.startGardenlet(ctx, ""); err != nil {
		return err
	}
	log := s.log.WithName("seed-kubelet")
	l.kubelet, err = kubelet.StartSeed(ctx, log, s.Seed, kubelet.SeedOptions{
		Manager:               gardener.ManagerOptions(log),
		Registry:              l.registry.Host(),
		RegistryAuth:          l.registryAuth(),
		Dir:                   env.dir,
		LogPath:               env.logPath,
		GardenAccessNamespace: GardenAccessNamespace,
		Admit:                 s.admitExtensionPod,
	})
	return err
}

// applyGardenRBAC applies GardenRBACFile to the garden, as operators do for the extension. Unlike
// the chart's objects, none of its objects may be left out: without the admission policy the
// extension would run with more rights than in a garden.
func (s *Sandbox) applyGardenRBAC(ctx context.Context) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(root, GardenRBACFile))
	if err != nil {
		return fmt.Errorf("failed reading %s: %w", GardenRBACFile, err)
	}
	objs, err := DecodeObjects(data)
	if err != nil {
		return fmt.Errorf("failed decoding %s: %w", GardenRBACFile, err)
	}
	for _, o := range objs {
		if err := s.Garden.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("operator"), client.ForceOwnership); err != nil {
			return fmt.Errorf("failed applying %s %s of %s to the garden: %w", o.GetKind(), o.GetName(), GardenRBACFile, err)
		}
	}
	return nil
}

// stop stops the kubelet stand-in (and with it the extension), gardener's controllers and the
// registry.
func (l *landscape) stop() error {
	if l == nil {
		return nil
	}
	errs := []error{l.kubelet.Stop()}
	for _, r := range []*cluster.Runner{l.gardenlet, l.gardenerControllerManager, l.resourceManager, l.seedKubeControllerManager} {
		errs = append(errs, r.Stop())
	}
	if l.registry != nil {
		errs = append(errs, l.registry.Close())
	}
	return errors.Join(errs...)
}

// startGardenlet runs gardenlet's controllers that install the extension into the sandbox's seed
// (gardener.StartGardenlet). gardenAddress is the garden address gardenlet hands extensions; empty
// for the garden API server's own.
func (s *Sandbox) startGardenlet(ctx context.Context, gardenAddress string) (*cluster.Runner, error) {
	version, err := gardenerVersion()
	if err != nil {
		return nil, err
	}
	opts := gardener.GardenletOptions{
		Garden:                s.Garden,
		Seed:                  s.Seed,
		SeedName:              SeedName,
		GardenAccessNamespace: GardenAccessNamespace,
		Version:               version,
		CareSyncPeriod:        ControllerInstallationCareSyncPeriod,
	}
	if gardenAddress != "" {
		opts.GardenClusterAddress = s.gardenConfig(gardenAddress).Host
	}
	return gardener.StartGardenlet(ctx, s.log.WithName("gardenlet"), opts)
}

// setGardenletAddress restarts gardenlet with gardenAddress as the garden address it hands
// extensions, as an operator changes gardenlet's configuration; it re-reconciles every
// installation when it starts again.
func (s *Sandbox) setGardenletAddress(ctx context.Context, gardenAddress string) error {
	l := s.deployedEnv.landscape
	if l.gardenAddress == gardenAddress {
		return nil
	}
	if err := l.gardenlet.Stop(); err != nil {
		return err
	}
	r, err := s.startGardenlet(ctx, gardenAddress)
	if err != nil {
		l.gardenlet = nil
		return err
	}
	l.gardenlet, l.gardenAddress = r, gardenAddress
	return nil
}

// setDeploymentValues merges values over the published ControllerDeployment values, as an
// operator configures the extension; gardener-controller-manager and gardenlet roll the change
// out.
func (s *Sandbox) setDeploymentValues(ctx context.Context, values map[string]any) error {
	merged, err := json.Marshal(MergeValues(s.deployedEnv.landscape.publishedValues, values))
	if err != nil {
		return fmt.Errorf("failed encoding the ControllerDeployment's values: %w", err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &gardencorev1.ControllerDeployment{}
		if err := s.Garden.Client.Get(ctx, client.ObjectKey{Name: RegistrationName}, d); err != nil {
			return err
		}
		if d.Helm == nil {
			return fmt.Errorf("ControllerDeployment %s has no helm deployment", RegistrationName)
		}
		d.Helm.Values = &apiextensionsv1.JSON{Raw: merged}
		return s.Garden.Client.Update(ctx, d)
	})
	if err != nil {
		return fmt.Errorf("failed updating ControllerDeployment %s: %w", RegistrationName, err)
	}
	return nil
}

// ControllerInstallation returns the seed's ControllerInstallation of shoot-flux's registration
// (Options.Deployed), as gardener-controller-manager created it and gardenlet reports it.
func (s *Sandbox) ControllerInstallation(ctx context.Context) (*gardencorev1beta1.ControllerInstallation, error) {
	return s.ControllerInstallationOf(ctx, RegistrationName)
}

// ControllerInstallationConditions returns the conditions gardenlet reports on the seed's
// ControllerInstallation of shoot-flux (Options.Deployed): Valid, Installed, Healthy,
// Progressing and Required, where an operator looks for the state of the installation.
func (s *Sandbox) ControllerInstallationConditions(ctx context.Context) ([]gardencorev1beta1.Condition, error) {
	ci, err := s.ControllerInstallation(ctx)
	if err != nil {
		return nil, err
	}
	return ci.Status.Conditions, nil
}

// ControllerInstallationOf returns the seed's ControllerInstallation of a ControllerRegistration
// that is not being deleted; gardener-controller-manager keeps at most one. It returns a NotFound
// error if there is none.
func (s *Sandbox) ControllerInstallationOf(ctx context.Context, registration string) (*gardencorev1beta1.ControllerInstallation, error) {
	list := &gardencorev1beta1.ControllerInstallationList{}
	if err := s.Garden.Client.List(ctx, list, client.MatchingFields{core.RegistrationRefName: registration, core.SeedRefName: SeedName}); err != nil {
		return nil, fmt.Errorf("failed listing the ControllerInstallations of %s: %w", registration, err)
	}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			return &list.Items[i], nil
		}
	}
	return nil, apierrors.NewNotFound(gardencorev1beta1.Resource("controllerinstallations"), registration+" on seed "+SeedName)
}
