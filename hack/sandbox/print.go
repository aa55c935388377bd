package main

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

func printDeployments(ctx context.Context, c client.Client) error {
	deployments := &appsv1.DeploymentList{}
	if err := c.List(ctx, deployments); err != nil {
		return fmt.Errorf("failed listing shoot deployments: %w", err)
	}
	fmt.Println("\nShoot deployments (the sandbox has no nodes, so they do not run):")
	for _, d := range deployments.Items {
		var images []string
		for _, container := range d.Spec.Template.Spec.Containers {
			images = append(images, container.Image)
		}
		fmt.Printf("  %s/%s: %s\n", d.Namespace, d.Name, strings.Join(images, ", "))
	}
	return nil
}

func printKluctlDeployment(ctx context.Context, c client.Client) error {
	kd := &unstructured.Unstructured{}
	kd.SetGroupVersionKind(bootstrap.KluctlDeploymentGVK)
	// The namespace is the default kluctl namespace, which the demo configuration keeps.
	if err := c.Get(ctx, client.ObjectKey{Namespace: "kluctl-system", Name: constants.BootstrapName}, kd); err != nil {
		return fmt.Errorf("failed reading the bootstrap KluctlDeployment: %w", err)
	}
	spec, err := yaml.Marshal(kd.Object["spec"])
	if err != nil {
		return fmt.Errorf("failed encoding the KluctlDeployment spec: %w", err)
	}
	fmt.Printf("\nKluctlDeployment %s/%s spec:\n", kd.GetNamespace(), kd.GetName())
	for _, line := range strings.Split(strings.TrimRight(string(spec), "\n"), "\n") {
		fmt.Printf("  %s\n", line)
	}
	return nil
}
