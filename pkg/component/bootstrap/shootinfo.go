// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"encoding/json"
	"fmt"
	"strings"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	gardenerutils "github.com/gardener/gardener/pkg/utils/gardener"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
)

// ShootInfo is the identity of the shoot that the bootstrap delivers, so that one repository can
// serve many shoots and tell them apart. Empty values are left out.
type ShootInfo struct {
	Project           string
	Name              string
	Namespace         string
	Seed              string
	Region            string
	ProviderType      string
	KubernetesVersion string
	Purpose           string
	Domain            string
	// ClusterIdentity and TechnicalID are the shoot's status fields of those names.
	ClusterIdentity string
	TechnicalID     string
	// GardenClusterIdentity is the garden's cluster identity.
	GardenClusterIdentity string
}

// shootInfoField is one value of the identity under its two names: the ConfigMap key, which is
// also the Kustomization's substitution variable and so must match ^[_a-zA-Z][_a-zA-Z0-9]*$, and
// the key below the kluctl argument "shoot", in kluctl's camelCase.
type shootInfoField struct {
	variable string
	arg      string
	value    string
}

func (i *ShootInfo) fields() []shootInfoField {
	return []shootInfoField{
		{"SHOOT_PROJECT", "project", i.Project},
		{"SHOOT_NAME", "name", i.Name},
		{"SHOOT_NAMESPACE", "namespace", i.Namespace},
		{"SHOOT_SEED", "seed", i.Seed},
		{"SHOOT_REGION", "region", i.Region},
		{"SHOOT_PROVIDER_TYPE", "providerType", i.ProviderType},
		{"SHOOT_KUBERNETES_VERSION", "kubernetesVersion", i.KubernetesVersion},
		{"SHOOT_PURPOSE", "purpose", i.Purpose},
		{"SHOOT_DOMAIN", "domain", i.Domain},
	}
}

// stackitVariables are the keys stackit's extension wrote into its ConfigMap shoot-info, which
// the repositories of shoots switched from it substitute: they stay beside this extension's.
func (i *ShootInfo) stackitVariables() map[string]string {
	return map[string]string{
		"SHOOT_INFO_NAME":                    i.Name,
		"SHOOT_INFO_CLUSTER_IDENTITY":        i.ClusterIdentity,
		"SHOOT_INFO_TECHNICAL_ID":            i.TechnicalID,
		"SHOOT_INFO_GARDEN_CLUSTER_IDENTITY": i.GardenClusterIdentity,
	}
}

// ShootInfoFromCluster reads the identity from the Cluster, which gardenlet updates before every
// shoot operation, so that e.g. a Kubernetes upgrade reaches the shoot with the reconcile it
// starts.
func ShootInfoFromCluster(cluster *extensionscontroller.Cluster) *ShootInfo {
	shoot := cluster.Shoot
	info := &ShootInfo{
		Project:           projectName(shoot),
		Name:              shoot.Name,
		Namespace:         shoot.Namespace,
		Seed:              ptr.Deref(shoot.Status.SeedName, ptr.Deref(shoot.Spec.SeedName, "")),
		Region:            shoot.Spec.Region,
		ProviderType:      shoot.Spec.Provider.Type,
		KubernetesVersion: shoot.Spec.Kubernetes.Version,
		Purpose:           string(ptr.Deref(shoot.Spec.Purpose, "")),
		ClusterIdentity:   ptr.Deref(shoot.Status.ClusterIdentity, ""),
		TechnicalID:       shoot.Status.TechnicalID,
	}
	// The Cluster's seed is the one this extension runs on, also while the shoot migrates.
	if cluster.Seed != nil && cluster.Seed.Name != "" {
		info.Seed = cluster.Seed.Name
	}
	if shoot.Spec.DNS != nil {
		info.Domain = ptr.Deref(shoot.Spec.DNS.Domain, "")
	}
	return info
}

// projectName derives the project from the technical ID shoot--<project>--<shoot>, which gardener
// builds from the project name, and else from the project namespace garden-<project>: the Cluster
// does not name the project, and reading the Project from the garden would make every reconcile
// depend on the garden for a name that never changes.
func projectName(shoot *gardencorev1beta1.Shoot) string {
	prefix := v1beta1constants.TechnicalIDPrefix + "-"
	if id := shoot.Status.TechnicalID; strings.HasPrefix(id, prefix) && strings.HasSuffix(id, "--"+shoot.Name) {
		if project := strings.TrimSuffix(strings.TrimPrefix(id, prefix), "--"+shoot.Name); project != "" {
			return project
		}
	}
	if shoot.Namespace == v1beta1constants.GardenNamespace {
		return v1beta1constants.GardenNamespace
	}
	return strings.TrimPrefix(shoot.Namespace, gardenerutils.ProjectNamespacePrefix)
}

// configMap returns the ConfigMap shoot-info.
func (i *ShootInfo) configMap(namespace string) *corev1.ConfigMap {
	data := map[string]string{}
	for _, f := range i.fields() {
		if f.value != "" {
			data[f.variable] = f.value
		}
	}
	for k, v := range i.stackitVariables() {
		if v != "" {
			data[k] = v
		}
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: constants.ShootInfoConfigMapName, Namespace: namespace, Labels: labels()},
		Data:       data,
	}
}

// kluctlArgs returns the user's kluctl arguments with the identity under "shoot". The user's
// arguments are applied on top as a JSON merge patch, like the configuration layers among each
// other: a "shoot" object of the user's merges key by key and wins, any other "shoot" value
// replaces the identity.
func (i *ShootInfo) kluctlArgs(userArgs *runtime.RawExtension) (*runtime.RawExtension, error) {
	shoot := map[string]string{}
	for _, f := range i.fields() {
		if f.value != "" {
			shoot[f.arg] = f.value
		}
	}
	raw, err := json.Marshal(map[string]any{constants.KluctlArgShoot: shoot})
	if err != nil {
		return nil, fmt.Errorf("failed serializing the shoot's identity: %w", err)
	}
	base := &runtime.RawExtension{Raw: raw}
	if userArgs == nil || userArgs.Raw == nil {
		return base, nil
	}
	return fluxconfig.MergeArgs(base, userArgs)
}
