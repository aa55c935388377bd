// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

const (
	// networkingType and machineImage are the types of the sandbox's shoots' networking and
	// worker operating system, registered by providerRegistration.
	networkingType = "calico"
	machineImage   = "local"
	machineType    = "local"
	// credentialsName names each project's cloud provider Secret and CredentialsBinding.
	credentialsName = "local"
)

// providerRegistration stands in for the registrations of the provider, network and operating
// system extensions a landscape has next to shoot-flux: gardener-apiserver's ExtensionValidator
// admits a shoot with workers only when every extension kind it needs is registered. Nothing is
// deployed for them: the sandbox plays the shoot's control plane and nodes itself.
func providerRegistration() *gardencorev1beta1.ControllerRegistration {
	return &gardencorev1beta1.ControllerRegistration{
		ObjectMeta: metav1.ObjectMeta{Name: "provider-" + providerType},
		Spec: gardencorev1beta1.ControllerRegistrationSpec{Resources: []gardencorev1beta1.ControllerResource{
			{Kind: "ControlPlane", Type: providerType},
			{Kind: "Infrastructure", Type: providerType},
			{Kind: "Worker", Type: providerType},
			{Kind: "DNSRecord", Type: providerType},
			{Kind: "OperatingSystemConfig", Type: machineImage},
			{Kind: "Network", Type: networkingType},
		}},
	}
}

// GardenObjects are the cluster-scoped garden objects every shoot of the sandbox refers to.
type GardenObjects struct {
	CloudProfile *gardencorev1beta1.CloudProfile
	Seed         *gardencorev1beta1.Seed
}

// CreateGardenObjects creates what a landscape's operator sets up before the first shoot: the
// registrations of the provider the sandbox plays (providerRegistration), the CloudProfile and
// the Seed with its DNS Secret. shoot-flux's own registration is not among them: the sandbox
// registers it from example/controller-registration.yaml or the operator path.
func CreateGardenObjects(ctx context.Context, c client.Client) (*GardenObjects, error) {
	if err := c.Create(ctx, providerRegistration()); err != nil {
		return nil, fmt.Errorf("failed creating the provider's ControllerRegistration: %w", err)
	}
	cloudProfile := &gardencorev1beta1.CloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: providerType},
		Spec: gardencorev1beta1.CloudProfileSpec{
			Type:       providerType,
			Kubernetes: gardencorev1beta1.KubernetesSettings{Versions: []gardencorev1beta1.ExpirableVersion{{Version: KubernetesVersion}, {Version: KubernetesPatchVersion}}},
			Regions:    []gardencorev1beta1.Region{{Name: providerType}},
			MachineTypes: []gardencorev1beta1.MachineType{{
				Name:   machineType,
				CPU:    resource.MustParse("2"),
				Memory: resource.MustParse("8Gi"),
				GPU:    resource.MustParse("0"),
				Usable: ptr.To(true),
			}},
			MachineImages: []gardencorev1beta1.MachineImage{{
				Name: machineImage,
				Versions: []gardencorev1beta1.MachineImageVersion{{
					ExpirableVersion: gardencorev1beta1.ExpirableVersion{Version: "1.0.0"},
					CRI:              []gardencorev1beta1.CRI{{Name: gardencorev1beta1.CRINameContainerD}},
					Architectures:    []string{"amd64"},
				}},
			}},
		},
	}
	if err := c.Create(ctx, cloudProfile); err != nil {
		return nil, fmt.Errorf("failed creating CloudProfile %s: %w", cloudProfile.Name, err)
	}
	if err := ensureNamespace(ctx, c, v1beta1constants.GardenNamespace, nil); err != nil {
		return nil, err
	}
	dnsSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: v1beta1constants.GardenNamespace, Name: "seed-dns"}}
	if err := c.Create(ctx, dnsSecret); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("failed creating the seed's DNS Secret: %w", err)
	}
	dnsCredentials := &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: v1beta1constants.GardenNamespace, Name: dnsSecret.Name}
	seed := &gardencorev1beta1.Seed{
		ObjectMeta: metav1.ObjectMeta{Name: seedName},
		Spec: gardencorev1beta1.SeedSpec{
			Provider: gardencorev1beta1.SeedProvider{Type: providerType, Region: providerType},
			Ingress: &gardencorev1beta1.Ingress{
				Domain:     "ingress.local.seed.local.gardener.cloud",
				Controller: gardencorev1beta1.IngressController{Kind: "nginx"},
			},
			DNS: gardencorev1beta1.SeedDNS{
				Provider: &gardencorev1beta1.SeedDNSProvider{Type: providerType, CredentialsRef: dnsCredentials},
				Internal: &gardencorev1beta1.SeedDNSProviderConfig{Type: providerType, Domain: "internal.local.gardener.cloud", CredentialsRef: *dnsCredentials},
			},
			Networks: gardencorev1beta1.SeedNetworks{
				Pods:     "10.1.0.0/16",
				Services: "10.2.0.0/16",
				Nodes:    ptr.To("10.0.0.0/16"),
			},
		},
	}
	if err := c.Create(ctx, seed); err != nil {
		return nil, fmt.Errorf("failed creating Seed %s: %w", seed.Name, err)
	}
	return &GardenObjects{CloudProfile: cloudProfile, Seed: seed}, nil
}

func ensureNamespace(ctx context.Context, c client.Client, name string, labels map[string]string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed creating namespace %s: %w", name, err)
	}
	return nil
}

// CreateProject creates a Project and its namespace in the garden the way a project admin and
// gardener-controller-manager's project controller leave them (the namespace labelled with the
// project's role and name, the Project naming it), and the cloud provider credentials the
// project's shoots are bound to. It returns the namespace.
func CreateProject(ctx context.Context, c client.Client, name string) (string, error) {
	namespace := ProjectNamespace(name)
	if err := ensureNamespace(ctx, c, namespace, map[string]string{
		v1beta1constants.GardenRole:  v1beta1constants.GardenRoleProject,
		v1beta1constants.ProjectName: name,
	}); err != nil {
		return "", err
	}
	project := &gardencorev1beta1.Project{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       gardencorev1beta1.ProjectSpec{Namespace: ptr.To(namespace)},
	}
	if err := c.Create(ctx, project); err != nil {
		return "", fmt.Errorf("failed creating project %s: %w", name, err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: credentialsName}}
	if err := c.Create(ctx, secret); err != nil {
		return "", fmt.Errorf("failed creating the credentials of project %s: %w", name, err)
	}
	binding := &securityv1alpha1.CredentialsBinding{
		ObjectMeta:     metav1.ObjectMeta{Namespace: namespace, Name: credentialsName},
		Provider:       securityv1alpha1.CredentialsBindingProvider{Type: providerType},
		CredentialsRef: corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: namespace, Name: secret.Name},
	}
	if err := c.Create(ctx, binding); err != nil {
		return "", fmt.Errorf("failed creating the CredentialsBinding of project %s: %w", name, err)
	}
	return namespace, nil
}

// NewShoot returns a Shoot of the sandbox's CloudProfile and seed with one worker pool and the
// shoot-flux extension with providerConfig (JSON or YAML, empty for none), as a shoot owner
// writes it. gardener-apiserver admits it in a project of CreateProject once the garden has the
// objects of CreateGardenObjects and shoot-flux's ControllerRegistration.
func NewShoot(namespace, name string, providerConfigData []byte) (*gardencorev1beta1.Shoot, error) {
	raw, err := providerConfig(providerConfigData)
	if err != nil {
		return nil, err
	}
	return &gardencorev1beta1.Shoot{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: gardencorev1beta1.ShootSpec{
			CloudProfile:           &gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: providerType},
			CredentialsBindingName: ptr.To(credentialsName),
			Region:                 providerType,
			Provider: gardencorev1beta1.Provider{
				Type: providerType,
				Workers: []gardencorev1beta1.Worker{{
					Name:    "worker",
					Machine: gardencorev1beta1.Machine{Type: machineType, Image: &gardencorev1beta1.ShootMachineImage{Name: machineImage}},
					Minimum: 1,
					Maximum: 1,
				}},
			},
			Networking: &gardencorev1beta1.Networking{Type: ptr.To(networkingType), Nodes: ptr.To("10.10.0.0/16"), Pods: ptr.To("10.11.0.0/16"), Services: ptr.To("10.12.0.0/16")},
			Kubernetes: gardencorev1beta1.Kubernetes{Version: KubernetesVersion},
			SeedName:   ptr.To(seedName),
			Extensions: []gardencorev1beta1.Extension{{Type: constants.ExtensionType, ProviderConfig: raw}},
		},
	}, nil
}

// ExtensionRegistrationFile is the ControllerDeployment and ControllerRegistration of shoot-flux
// that make generate writes, relative to the repository root.
const ExtensionRegistrationFile = "example/controller-registration.yaml"

// exampleRegistration returns the ControllerDeployment and ControllerRegistration of
// ExtensionRegistrationFile.
func exampleRegistration() ([]*unstructured.Unstructured, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, ExtensionRegistrationFile))
	if err != nil {
		return nil, fmt.Errorf("failed reading the extension's registration: %w", err)
	}
	objs, err := DecodeObjects(data)
	if err != nil {
		return nil, fmt.Errorf("failed decoding %s: %w", ExtensionRegistrationFile, err)
	}
	return objs, nil
}

// registerExtension creates shoot-flux's ControllerDeployment and ControllerRegistration in the
// garden, as an operator does before the first shoot uses it: gardener-apiserver admits shoots
// with the extension only then, and gardenlet takes the Extension's lifecycle and timeout from the
// registration. The objects are those of ExtensionRegistrationFile or, with Options.Deployed,
// those that publishing the extension wrote (see publishExtension).
func (s *Sandbox) registerExtension(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if err := s.Garden.Client.Create(ctx, o.DeepCopy()); err != nil {
			return fmt.Errorf("failed registering the extension: creating %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}
