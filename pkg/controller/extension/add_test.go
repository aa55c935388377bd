// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

var _ = Describe("predicates without the operation annotation", func() {
	var preds []predicate.Predicate

	BeforeEach(func() {
		preds = predicates(context.Background(), nil, true)
	})

	admits := func(check func(predicate.Predicate) bool) bool {
		for _, p := range preds {
			if !check(p) {
				return false
			}
		}
		return true
	}

	extension := func(generation int64, annotations map[string]string) *extensionsv1alpha1.Extension {
		return &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "shoot-flux", Namespace: "shoot--foo--bar", Generation: generation, Annotations: annotations}}
	}

	It("admits the generic events of the Cluster watch", func() {
		// The library maps Cluster changes to Extensions and evaluates the predicates as generic events.
		Expect(admits(func(p predicate.Predicate) bool { return p.Generic(event.GenericEvent{Object: extension(1, nil)}) })).To(BeTrue())
	})

	It("admits spec changes and operation annotations but not status updates", func() {
		update := func(old, new client.Object) bool {
			return admits(func(p predicate.Predicate) bool { return p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: new}) })
		}
		Expect(update(extension(1, nil), extension(2, nil))).To(BeTrue())
		Expect(update(extension(1, nil), extension(1, map[string]string{v1beta1constants.GardenerOperation: v1beta1constants.GardenerOperationMigrate}))).To(BeTrue())
		Expect(update(extension(1, nil), extension(1, nil))).To(BeFalse())
	})
})
