package cmd

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// NewGardenCluster returns the garden cluster access of the extension. Its cache only holds the
// project ConfigMaps named flux-config (a field selector keeps a big garden's ConfigMaps out of
// memory), without managedFields; Secrets are never cached.
func NewGardenCluster(cfg *rest.Config) (cluster.Cluster, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("could not build garden scheme: %w", err)
	}
	c, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = scheme
		o.Cache.ByObject = map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Field: fields.OneTermEqualSelector("metadata.name", constants.ProjectConfigMapName)},
		}
		o.Cache.DefaultTransform = cache.TransformStripManagedFields()
		o.Client.Cache = &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}
	})
	if err != nil {
		return nil, fmt.Errorf("could not create garden cluster access: %w", err)
	}
	return c, nil
}
