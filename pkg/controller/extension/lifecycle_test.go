// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
)

var _ = Describe("Actuator", func() {
	setUpActuator()

	Describe("#Delete", func() {
		It("deletes the bootstrap before the controllers and waits for each", func() {
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
			Expect(reconcile()).To(Succeed())
			rec.reset()

			Expect(act.Delete(ctx, logr.Discard(), ex)).To(Succeed())
			var deletes []string
			for _, w := range rec.reset() {
				if strings.HasPrefix(w, "delete *v1alpha1.ManagedResource") {
					deletes = append(deletes, w)
				}
			}
			Expect(deletes).To(Equal([]string{
				"delete *v1alpha1.ManagedResource " + constants.ManagedResourceBootstrap,
				"delete *v1alpha1.ManagedResource " + constants.ManagedResourceControllers,
			}))
		})

		It("does not remove the controllers while the bootstrap is still being deleted", func() {
			cfg.Timeouts.Deletion = metav1.Duration{Duration: 50 * time.Millisecond}
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
			Expect(reconcile()).To(Succeed())
			// The kluctl controller's finalizer keeps the bootstrap ManagedResource alive.
			mr := &resourcesv1alpha1.ManagedResource{}
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceBootstrap}, mr)).To(Succeed())
			mr.Finalizers = []string{"resources.gardener.cloud/gardener-resource-manager"}
			Expect(seed.Update(ctx, mr)).To(Succeed())
			rec.reset()

			Expect(act.Delete(ctx, logr.Discard(), ex)).To(MatchError(ContainSubstring(constants.ManagedResourceBootstrap + " was not deleted")))
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceControllers}, &resourcesv1alpha1.ManagedResource{})).To(Succeed())
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceBootstrap}, mr)).To(Succeed())
			Expect(mr.Spec.KeepObjects).To(Equal(ptr.To(true)), "objects whose finalizers nobody removes are left in the shoot")
		})

		It("leaves the bootstrap objects of a hibernated shoot and waits for nothing", func() {
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
			Expect(reconcile()).To(Succeed())
			for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
				mr := &resourcesv1alpha1.ManagedResource{}
				Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: name}, mr)).To(Succeed())
				mr.Finalizers = []string{"resources.gardener.cloud/gardener-resource-manager"}
				Expect(seed.Update(ctx, mr)).To(Succeed())
			}
			theShoot.Spec.Hibernation = &gardencorev1beta1.Hibernation{Enabled: ptr.To(true)}
			c := &extensionsv1alpha1.Cluster{}
			Expect(seed.Get(ctx, client.ObjectKey{Name: seedNamespace}, c)).To(Succeed())
			c.Spec.Shoot = clusterObject(theShoot).Spec.Shoot
			Expect(seed.Update(ctx, c)).To(Succeed())

			Expect(act.Delete(ctx, logr.Discard(), ex)).To(Succeed())
			boot := &resourcesv1alpha1.ManagedResource{}
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceBootstrap}, boot)).To(Succeed())
			Expect(boot.DeletionTimestamp).NotTo(BeNil())
			Expect(boot.Spec.KeepObjects).To(Equal(ptr.To(true)))
			ctrls := &resourcesv1alpha1.ManagedResource{}
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceControllers}, ctrls)).To(Succeed())
			Expect(ctrls.DeletionTimestamp).NotTo(BeNil())
			Expect(ctrls.Spec.KeepObjects).NotTo(Equal(ptr.To(true)), "the controllers go; their CRDs and namespaces are kept by annotation")
		})

		It("deletes a shoot-scoped deploy key together with the shoot", func() {
			cfg.SSHKey.Scope = config.KeyScopeShoot
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "ssh://git@git.example.com/org/repo"})})
			Expect(reconcile()).To(Succeed())
			identityKey, _ := deploykey.DataKeys(deploykey.KeyName(deploykey.ScopeShoot, "bar", "git.example.com:22/org/repo"))
			keys := func() map[string][]byte {
				secret := &corev1.Secret{}
				ExpectWithOffset(1, garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.DeployKeysSecretName}, secret)).To(Succeed())
				return secret.Data
			}
			Expect(keys()).To(HaveKey(identityKey))

			By("keeping it when only the extension is removed")
			Expect(act.Delete(ctx, logr.Discard(), ex)).To(Succeed())
			Expect(keys()).To(HaveKey(identityKey))

			By("deleting it when the shoot is deleted")
			now := metav1.Now()
			theShoot.DeletionTimestamp = &now
			c := &extensionsv1alpha1.Cluster{}
			Expect(seed.Get(ctx, client.ObjectKey{Name: seedNamespace}, c)).To(Succeed())
			c.Spec.Shoot = clusterObject(theShoot).Spec.Shoot
			Expect(seed.Update(ctx, c)).To(Succeed())
			Expect(act.Delete(ctx, logr.Discard(), ex)).To(Succeed())
			Expect(keys()).NotTo(HaveKey(identityKey))
			Expect(keys()).To(HaveKey(constants.SecretKeyKnownHosts), "host keys stay for the project's other shoots")
		})
	})

	Describe("#ForceDelete", func() {
		It("deletes both ManagedResources without waiting", func() {
			build(nil)
			Expect(reconcile()).To(Succeed())
			mr := &resourcesv1alpha1.ManagedResource{}
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceControllers}, mr)).To(Succeed())
			mr.Finalizers = []string{"resources.gardener.cloud/gardener-resource-manager"}
			Expect(seed.Update(ctx, mr)).To(Succeed())

			Expect(act.ForceDelete(ctx, logr.Discard(), ex)).To(Succeed())
			Expect(seed.Get(ctx, client.ObjectKeyFromObject(mr), mr)).To(Succeed())
			Expect(mr.DeletionTimestamp).NotTo(BeNil())
		})
	})

	Describe("#Migrate and #Restore", func() {
		It("keeps the shoot objects when migrating and deploys again on restore", func() {
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
			Expect(reconcile()).To(Succeed())
			rec.reset()

			Expect(act.Migrate(ctx, logr.Discard(), ex)).To(Succeed())
			writes := rec.reset()
			for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
				Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: name}, &resourcesv1alpha1.ManagedResource{})).To(BeNotFoundError())
				keep := slicesIndex(writes, "patch *v1alpha1.ManagedResource "+name)
				del := slicesIndex(writes, "delete *v1alpha1.ManagedResource "+name)
				Expect(keep).To(BeNumerically(">=", 0), "keepObjects must be set on %s", name)
				Expect(keep).To(BeNumerically("<", del), "keepObjects must be set before %s is deleted", name)
			}

			Expect(act.Restore(ctx, logr.Discard(), ex)).To(Succeed())
			for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
				Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: name}, &resourcesv1alpha1.ManagedResource{})).To(Succeed())
			}
		})
	})
})
