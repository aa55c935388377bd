// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// adoptionShoot is the shoot API server of the adoption check in every spec of the package:
// without objects, a shoot nobody installed Flux in.
var adoptionShoot struct {
	objects []client.Object
	clients int
}

var _ = BeforeEach(func() {
	adoptionShoot.objects, adoptionShoot.clients = nil, 0
	DeferCleanup(func(f func(context.Context, client.Client, string) (client.Client, error)) {
		newAdoptionClient = f
	}, newAdoptionClient)
	newAdoptionClient = func(context.Context, client.Client, string) (client.Client, error) {
		adoptionShoot.clients++
		scheme := runtime.NewScheme()
		Expect(appsv1.AddToScheme(scheme)).To(Succeed())
		return fake.NewClientBuilder().WithScheme(scheme).WithObjects(adoptionShoot.objects...).Build(), nil
	}
})
