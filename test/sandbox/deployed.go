package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/controller/tokenrequestor"
	"github.com/gardener/gardener/pkg/controllermanager/controller/controllerregistration/extensionclusterrole"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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
)

const (
	// DeployedNamespace is the seed namespace the chart is installed into, named like gardenlet
	// names the namespace of a ControllerInstallation.
	DeployedNamespace = "extension-shoot-flux-sandbox"
	// GardenRBACFile is what operators apply to the garden for the extension, relative to the
	// repository root: the ClusterRole and the ValidatingAdmissionPolicy (with its binding) that
	// confines the extension's Secret writes.
	GardenRBACFile = "example/garden-rbac.yaml"
	// gardenletFieldOwner applies the chart's objects, as gardenlet's resource manager would.
	gardenletFieldOwner = "gardenlet"
)

// deployedEnv is what a deployed extension needs beyond its chart: the binary, the garden side of
// its identity, and a directory for its root file system, volumes and log.
type deployedEnv struct {
	dir     string
	binary  string
	logPath string
	// seedUser and gardenUser are the extension's identities in the seed and the garden.
	seedUser, gardenUser   string
	seedAudit, gardenAudit *AuditLog
	// kubeconfigDir is where the chart mounts the garden kubeconfig and its token.
	kubeconfigDir string
	// installed is set once installDeployed succeeded; later starts only apply the chart.
	installed bool
}

// deployedExtension is a running deployed extension.
type deployedExtension struct {
	pod         *Pod
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
		// The extension's user runs it from the sandbox's directory, the only one it may traverse.
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

// installDeployed sets up what gardenlet and gardener-controller-manager set up once per seed: the
// release namespace, the garden ClusterRole of GardenRBACFile bound to the extension's dedicated
// garden ServiceAccount (with the file's admission policy in effect) and its token. genericSecret
// is the generic garden kubeconfig Secret the chart was rendered with.
func (s *Sandbox) installDeployed(ctx context.Context, objs []*unstructured.Unstructured, deployment *appsv1.Deployment, genericSecret string) error {
	env := s.deployedEnv
	env.seedAudit = &AuditLog{Path: s.Seed.AuditLogPath}
	env.gardenAudit = &AuditLog{Path: s.Garden.AuditLogPath}

	// The chart's dashboard goes to the seed's garden namespace, where the seed's Plutono looks.
	for _, ns := range []string{DeployedNamespace, GardenNamespace} {
		if err := s.Seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed creating namespace %s: %w", ns, err)
		}
	}
	if err := s.Garden.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: GardenAccessNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed creating garden namespace %s: %w", GardenAccessNamespace, err)
	}

	root, err := RepoRoot()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(root, GardenRBACFile))
	if err != nil {
		return fmt.Errorf("failed reading %s: %w", GardenRBACFile, err)
	}
	rbacObjs, err := DecodeObjects(data)
	if err != nil {
		return fmt.Errorf("failed decoding %s: %w", GardenRBACFile, err)
	}
	// Unlike the chart's objects, none of these may be skipped for a kind the API server does not
	// serve: without the policy the extension would run with more rights than in a garden.
	for _, o := range rbacObjs {
		if err := s.Garden.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner(gardenletFieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("failed applying %s %s of %s to the garden: %w", o.GetKind(), o.GetName(), GardenRBACFile, err)
		}
	}

	// The chart's objects exist before gardenlet's token requestor reads the access Secret.
	if err := applyObjects(ctx, s.Seed.Client, objs); err != nil {
		return err
	}
	accessSecret, kubeconfigDir, err := gardenAccess(deployment, genericSecret)
	if err != nil {
		return err
	}
	var clusterRoles []string
	for _, o := range rbacObjs {
		if o.GetKind() == "ClusterRole" {
			clusterRoles = append(clusterRoles, o.GetName())
		}
	}
	_, gardenUser, err := GrantGardenAccess(ctx, s.Seed.Client, s.Garden.Client, client.ObjectKey{Namespace: DeployedNamespace, Name: accessSecret}, clusterRoles)
	if err != nil {
		return err
	}
	env.gardenUser = gardenUser
	if err := waitGardenPolicy(ctx, s.Garden.Config, gardenUser); err != nil {
		return err
	}
	env.seedUser = "system:serviceaccount:" + DeployedNamespace + ":" + deployment.Spec.Template.Spec.ServiceAccountName
	env.kubeconfigDir = kubeconfigDir
	return nil
}

// genericKubeconfigSecret returns the name of the generic garden kubeconfig Secret for a garden
// address: GenericKubeconfigSecret for the garden API server's own, else one named after the
// address, as gardenlet names its Secret after the content's hash.
func genericKubeconfigSecret(gardenAddress string) string {
	if gardenAddress == "" {
		return GenericKubeconfigSecret
	}
	return fmt.Sprintf("generic-garden-kubeconfig-%08x", crc32.ChecksumIEEE([]byte(gardenAddress)))
}

// createGenericKubeconfig creates gardenlet's generic garden kubeconfig Secret: the garden's
// address and CA, and the token file that the chart projects next to it. The Secret is immutable;
// one that exists already has the same content, as its name stands for the address.
func (s *Sandbox) createGenericKubeconfig(ctx context.Context, name string, garden *rest.Config) error {
	kubeconfig, err := GenericGardenKubeconfig(garden, path.Join(s.deployedEnv.kubeconfigDir, "token"))
	if err != nil {
		return err
	}
	generic := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: DeployedNamespace},
		Data:       map[string][]byte{"kubeconfig": kubeconfig},
		Immutable:  ptr.To(true),
	}
	if err := s.Seed.Client.Create(ctx, generic); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed creating the generic garden kubeconfig %s: %w", name, err)
	}
	return nil
}

// waitGardenPolicy waits until the garden enforces the admission policy of GardenRBACFile on the
// extension's garden user. kube-apiserver loads policies asynchronously, and a Secret the extension
// wrote before would escape the check. The probe is a dry-run creation that the policy forbids
// (a Secret other than shoot-flux-deploy-keys, outside a project namespace) and the ClusterRole
// allows, made as that user.
func waitGardenPolicy(ctx context.Context, garden *rest.Config, user string) error {
	cfg := rest.CopyConfig(garden)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("failed creating a garden client as %s: %w", user, err)
	}
	probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "garden-policy-probe", Namespace: GardenAccessNamespace}}
	answer := "none"
	err = wait.PollUntilContextTimeout(ctx, PollInterval, CacheSyncTimeout, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		switch {
		case err == nil:
			answer = "accepted"
		case apierrors.ReasonForError(err) != metav1.StatusReasonUnknown:
			// Only the API server's answers; the client's own errors, e.g. about the deadline,
			// would hide what the garden said.
			answer = err.Error()
		}
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"), nil
	})
	if err != nil {
		return fmt.Errorf("the garden does not enforce the admission policy of %s on %s (last answer to a forbidden Secret: %s): %w", GardenRBACFile, user, answer, err)
	}
	return nil
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

// GrantGardenAccess does what gardener does for the chart's dedicated garden access, with gardener's
// own code: gardenlet's token requestor reads the access Secret in the seed, creates the
// ServiceAccount in the garden namespace of the seed and writes its token into the Secret, and
// gardener-controller-manager's reconciler binds each of the extension ClusterRoles (labelled for
// custom extension permissions, like example/garden-rbac.yaml) to it. It returns the token and the
// ServiceAccount's user name.
func GrantGardenAccess(ctx context.Context, seed, garden client.Client, accessSecret client.ObjectKey, clusterRoles []string) ([]byte, string, error) {
	requestor := &tokenrequestor.Reconciler{
		SourceClient:    seed,
		TargetClient:    garden,
		Clock:           clock.RealClock{},
		JitterFunc:      wait.Jitter,
		Class:           ptr.To(resourcesv1alpha1.ResourceManagerClassGarden),
		TargetNamespace: GardenAccessNamespace,
	}
	if _, err := requestor.Reconcile(ctx, reconcile.Request{NamespacedName: accessSecret}); err != nil {
		return nil, "", fmt.Errorf("failed requesting the garden token: %w", err)
	}
	secret := &corev1.Secret{}
	if err := seed.Get(ctx, accessSecret, secret); err != nil {
		return nil, "", fmt.Errorf("failed reading the garden access Secret: %w", err)
	}
	token := secret.Data[resourcesv1alpha1.DataKeyToken]
	if len(token) == 0 {
		return nil, "", errors.New("the token requestor wrote no garden token")
	}
	for _, name := range clusterRoles {
		if _, err := (&extensionclusterrole.Reconciler{Client: garden}).Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
			return nil, "", fmt.Errorf("failed binding ClusterRole %s: %w", name, err)
		}
	}
	return token, "system:serviceaccount:" + GardenAccessNamespace + ":" + secret.Annotations[resourcesv1alpha1.ServiceAccountName], nil
}

// deployedValues are the values of one installation: gardenlet's, free ports, and the settings of
// the sandbox as chart values. It also returns the addresses of the health and metrics servers.
func (s *Sandbox) deployedValues(cfg *config.ControllerConfiguration, workers int, genericSecret string) (map[string]any, string, string, error) {
	metricsPort, err := FreePort()
	if err != nil {
		return nil, "", "", err
	}
	healthPort, err := FreePort()
	if err != nil {
		return nil, "", "", err
	}
	versioned, err := loader.Versioned(cfg)
	if err != nil {
		return nil, "", "", err
	}
	data, err := json.Marshal(versioned)
	if err != nil {
		return nil, "", "", fmt.Errorf("failed encoding the configuration: %w", err)
	}
	configValues := map[string]any{}
	if err := json.Unmarshal(data, &configValues); err != nil {
		return nil, "", "", fmt.Errorf("failed encoding the configuration: %w", err)
	}
	delete(configValues, "apiVersion")
	delete(configValues, "kind")
	if s.opts.HealthCheck {
		configValues["healthCheckConfig"] = map[string]any{"syncPeriod": HealthCheckSyncPeriod.String()}
	}
	values := map[string]any{
		"metrics":    map[string]any{"port": metricsPort},
		"healthPort": healthPort,
		"controllers": map[string]any{
			"extension":                 map[string]any{"concurrentSyncs": workers},
			"ignoreOperationAnnotation": s.opts.IgnoreOperationAnnotation,
		},
		"config": configValues,
		"gardener": map[string]any{
			"garden": map[string]any{"genericKubeconfigSecretName": genericSecret},
		},
	}
	if !s.opts.HealthCheck {
		values["disableControllers"] = []any{healthcheck.ControllerName}
	}
	return MergeValues(GardenletValues(), values), net.JoinHostPort("127.0.0.1", strconv.Itoa(healthPort)), net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort)), nil
}

// startDeployed installs the chart into the seed and runs its Deployment's pod. gardenAddress, if
// set, is where the pod reaches the garden API server (see ExtensionSettings.GardenAddress).
func (s *Sandbox) startDeployed(ctx context.Context, cfg *config.ControllerConfiguration, workers int, gardenAddress string) (*deployedExtension, error) {
	genericSecret := genericKubeconfigSecret(gardenAddress)
	values, healthAddr, metricsAddr, err := s.deployedValues(cfg, workers, genericSecret)
	if err != nil {
		return nil, err
	}
	objs, err := RenderExtensionChart(DeployedNamespace, values)
	if err != nil {
		return nil, err
	}
	deployment, err := chartDeployment(objs)
	if err != nil {
		return nil, err
	}
	env := s.deployedEnv
	if !env.installed {
		if err := s.installDeployed(ctx, objs, deployment, genericSecret); err != nil {
			return nil, err
		}
		env.installed = true
	} else if err := applyObjects(ctx, s.Seed.Client, objs); err != nil {
		return nil, err
	}
	if err := s.createGenericKubeconfig(ctx, genericSecret, s.gardenConfig(gardenAddress)); err != nil {
		return nil, err
	}
	pod := &Pod{
		Namespace: DeployedNamespace,
		Name:      deployment.Name + "-0",
		Spec:      deployment.Spec.Template.Spec,
		Images:    map[string]string{deployment.Spec.Template.Spec.Containers[0].Image: env.binary},
		API:       s.Seed.Config,
		Dir:       env.dir,
		LogPath:   s.ExtensionLogPath(),
	}
	s.log.Info("Starting the deployed extension", "log", pod.LogPath)
	if err := pod.Start(ctx); err != nil {
		return nil, err
	}
	if err := WaitReady(ctx, healthAddr, pod.Exited); err != nil {
		return nil, errors.Join(fmt.Errorf("the deployed extension (log: %s): %w", pod.LogPath, err), pod.Stop())
	}
	return &deployedExtension{pod: pod, healthAddr: healthAddr, metricsAddr: metricsAddr}, nil
}

func (d *deployedExtension) stop() error {
	if d == nil {
		return nil
	}
	return d.pod.Stop()
}

// ExtensionLogPath is the log of the deployed extension (Options.Deployed); empty otherwise.
func (s *Sandbox) ExtensionLogPath() string {
	if s.deployedEnv == nil {
		return ""
	}
	return s.deployedEnv.logPath
}

// DeniedRequests returns the requests of the deployed extension's seed and garden identities that
// the API servers refused (403) since the previous call, as "<cluster>: <permission>: <message>".
// A permission the chart or GardenRBACFile lacks shows up here by name.
func (s *Sandbox) DeniedRequests() ([]string, error) {
	env := s.deployedEnv
	if env == nil || env.seedAudit == nil {
		return nil, errors.New("the extension does not run as deployed")
	}
	var (
		denied []string
		counts = map[string]int{}
	)
	for _, c := range []struct {
		name string
		log  *AuditLog
		user string
	}{{"seed", env.seedAudit, env.seedUser}, {"garden", env.gardenAudit, env.gardenUser}} {
		events, err := c.log.Read(func(e AuditEvent) bool {
			return e.User.Username == c.user && e.ResponseStatus != nil && e.ResponseStatus.Code == 403
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		for _, e := range events {
			line := fmt.Sprintf("%s: %s denied to %s: %s", c.name, e.Permission(), c.user, e.ResponseStatus.Message)
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

func chartDeployment(objs []*unstructured.Unstructured) (*appsv1.Deployment, error) {
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
			return nil, fmt.Errorf("failed decoding Deployment %s: %w", o.GetName(), err)
		}
		if len(d.Spec.Template.Spec.Containers) != 1 {
			return nil, fmt.Errorf("deployment %s has %d containers, want 1", d.Name, len(d.Spec.Template.Spec.Containers))
		}
		return d, nil
	}
	return nil, errors.New("the chart renders no Deployment")
}

// gardenAccess returns the name of the chart's garden access Secret (the projected token source of
// the volume that $GARDEN_KUBECONFIG points into, besides the generic kubeconfig Secret
// genericSecret) and the directory of that volume.
func gardenAccess(d *appsv1.Deployment, genericSecret string) (string, string, error) {
	c := d.Spec.Template.Spec.Containers[0]
	var kubeconfig string
	for _, e := range c.Env {
		if e.Name == "GARDEN_KUBECONFIG" {
			kubeconfig = e.Value
		}
	}
	if kubeconfig == "" {
		return "", "", errors.New("the chart's container has no GARDEN_KUBECONFIG")
	}
	dir := path.Dir(kubeconfig)
	for _, m := range c.VolumeMounts {
		if m.MountPath != dir {
			continue
		}
		v, ok := podVolume(d.Spec.Template.Spec.Volumes, m.Name)
		if !ok || v.Projected == nil {
			break
		}
		for _, src := range v.Projected.Sources {
			if src.Secret != nil && src.Secret.Name != genericSecret {
				return src.Secret.Name, dir, nil
			}
		}
	}
	return "", "", fmt.Errorf("no projected garden access Secret is mounted at %s", dir)
}

// applyObjects applies objects with server-side apply; kinds the API server does not serve (the
// VerticalPodAutoscaler: no VPA runs in the sandbox) are left out.
func applyObjects(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner(gardenletFieldOwner), client.ForceOwnership)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("failed applying %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}
