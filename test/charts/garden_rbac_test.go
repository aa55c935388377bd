// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package charts_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// envGardenRBACMatrix names a file that the permission matrix is written to as a markdown table.
const envGardenRBACMatrix = "SHOOT_FLUX_GARDEN_RBAC_MATRIX"

// The garden namespaces of the matrix. Project namespaces carry the label gardener-controller-manager
// puts on them; garden and kube-system do not.
const (
	rbacProjectNS = "garden-dev"
	// rbacNewProjectNS holds no deploy keys, so that a create the policy failed to deny would
	// succeed instead of hitting an existing name.
	rbacNewProjectNS = "garden-new"
	rbacGardenNS     = v1beta1constants.GardenNamespace
	rbacKubeSystemNS = metav1.NamespaceSystem
	// otherSecret and otherConfigMap stand for everything else in a namespace, e.g. the cloud
	// provider credentials of a project.
	otherSecret    = "cloudprovider"
	otherConfigMap = "cloud-settings"
)

// outcome is how the garden answers a request.
type outcome string

const (
	allowed outcome = "allowed"
	// deniedByRBAC is a Forbidden error from the authorizer.
	deniedByRBAC outcome = "denied (RBAC)"
	// deniedByPolicy is a Forbidden error from the ValidatingAdmissionPolicy of the example file.
	deniedByPolicy outcome = "denied (policy)"
	// failed is any other error, e.g. a conflict with an object a wrongly allowed request created.
	failed outcome = "error"
)

// Identities of the matrix. The extension acts with its real token; the others are impersonated in
// the group system:masters, which RBAC allows everything, so that only the policy decides.
const (
	extensionIdentity = "shoot-flux (token)"
	adminIdentity     = "admin"
)

// impersonated are users whose requests show where the policy applies: to the extension's garden
// identities in every seed, and to nobody else.
var impersonated = map[string]string{
	"shoot-flux of another seed":     "system:serviceaccount:seed-aws-eu1:shoot-flux",
	"gardenlet's injected identity":  "system:serviceaccount:" + sandbox.GardenAccessNamespace + ":extension-shoot-flux-x7k2p",
	"another extension's identity":   "system:serviceaccount:" + sandbox.GardenAccessNamespace + ":extension-provider-local-x7k2p",
	"shoot-flux outside a seed ns":   "system:serviceaccount:garden:shoot-flux",
	"gardenlet":                      "gardener.cloud:system:seed:local",
	"lookalike of shoot-flux's name": "system:serviceaccount:" + sandbox.GardenAccessNamespace + ":shoot-flux-other",
}

// permission is one row of the matrix: a request of an identity and how the garden must answer.
type permission struct {
	identity  string
	verb      string
	resource  string
	namespace string
	// object says what matters of the object: its name, type, labels or the selector of a list.
	object string
	expect outcome
	// because is part of the message that the denial must carry: the verb RBAC refused, or the
	// validation of the policy that failed.
	because string
	do      func(ctx context.Context, c client.WithWatch) error
}

func (p permission) description() string {
	ns := p.namespace
	if ns == "" {
		ns = "(all)"
	}
	return fmt.Sprintf("%s: %s %s %s %s → %s", p.identity, p.verb, p.resource, ns, p.object, p.expect)
}

// deployKeys is a Secret as the extension writes it into a project namespace.
func deployKeys(namespace string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      constants.DeployKeysSecretName,
			Namespace: namespace,
			Labels:    map[string]string{constants.LabelManagedBy: constants.ExtensionName},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"matrix": []byte("deploy keys")},
	}
}

// withName, withType and withLabels change a Secret to create.
func withName(s *corev1.Secret, name string) *corev1.Secret {
	s.Name = name
	return s
}

func withType(s *corev1.Secret, t corev1.SecretType) *corev1.Secret {
	s.Type = t
	if t == corev1.SecretTypeServiceAccountToken {
		// Without it, the Secret's own validation rejects it before the policy sees it.
		s.Annotations = map[string]string{corev1.ServiceAccountNameKey: "default"}
	}
	return s
}

func withLabels(s *corev1.Secret, labels map[string]string) *corev1.Secret {
	s.Labels = labels
	return s
}

// The requests. Updates start from the current object read by the admin, so that only the
// authorization and admission of the update itself decide.

func getSecret(ns, name string) func(context.Context, client.WithWatch) error {
	return func(ctx context.Context, c client.WithWatch) error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{})
	}
}

func listSecrets(ns string, opts ...client.ListOption) func(context.Context, client.WithWatch) error {
	return func(ctx context.Context, c client.WithWatch) error {
		return c.List(ctx, &corev1.SecretList{}, append(opts, client.InNamespace(ns))...)
	}
}

func watchSecrets(ns string) func(context.Context, client.WithWatch) error {
	return func(ctx context.Context, c client.WithWatch) error {
		w, err := c.Watch(ctx, &corev1.SecretList{}, client.InNamespace(ns))
		if err == nil {
			w.Stop()
		}
		return err
	}
}

func createSecret(s *corev1.Secret) func(context.Context, client.WithWatch) error {
	return func(ctx context.Context, c client.WithWatch) error {
		return c.Create(ctx, s.DeepCopy())
	}
}

func updateSecret(ns, name string, change func(*corev1.Secret)) func(context.Context, client.WithWatch) error {
	return func(ctx context.Context, c client.WithWatch) error {
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			return fmt.Errorf("admin reading Secret %s/%s: %w", ns, name, err)
		}
		change(s)
		return c.Update(ctx, s)
	}
}

func patchSecret(ns, name string) func(context.Context, client.WithWatch) error {
	return func(ctx context.Context, c client.WithWatch) error {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		return c.Patch(ctx, s, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+constants.AnnotationRotate+`":"true"}}}`)))
	}
}

func deleteSecret(ns, name string) func(context.Context, client.WithWatch) error {
	return func(ctx context.Context, c client.WithWatch) error {
		return c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	}
}

func getConfigMap(ns, name string) func(context.Context, client.WithWatch) error {
	return func(ctx context.Context, c client.WithWatch) error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
	}
}

func listConfigMaps(ns string, opts ...client.ListOption) func(context.Context, client.WithWatch) error {
	return func(ctx context.Context, c client.WithWatch) error {
		return c.List(ctx, &corev1.ConfigMapList{}, append(opts, client.InNamespace(ns))...)
	}
}

func watchConfigMaps(ns string, opts ...client.ListOption) func(context.Context, client.WithWatch) error {
	return func(ctx context.Context, c client.WithWatch) error {
		w, err := c.Watch(ctx, &corev1.ConfigMapList{}, append(opts, client.InNamespace(ns))...)
		if err == nil {
			w.Stop()
		}
		return err
	}
}

func createConfigMap(ns, name string) func(context.Context, client.WithWatch) error {
	return func(ctx context.Context, c client.WithWatch) error {
		return c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	}
}

func updateConfigMap(ns, name string) func(context.Context, client.WithWatch) error {
	return func(ctx context.Context, c client.WithWatch) error {
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
			return fmt.Errorf("admin reading ConfigMap %s/%s: %w", ns, name, err)
		}
		cm.Data = map[string]string{constants.ConfigMapKeyRepositoryURL: "https://example.com/x.git"}
		return c.Update(ctx, cm)
	}
}

var (
	byFluxConfigName = client.MatchingFields{"metadata.name": constants.ProjectConfigMapName}
	labelled         = "Opaque, managed-by"
	// Messages of the policy's validations, as far as the matrix checks them.
	becauseName      = "may write only the Secret " + constants.DeployKeysSecretName
	becauseNamespace = "only in project namespaces"
	becauseType      = "must be of type Opaque"
	becauseLabel     = "must carry the label " + constants.LabelManagedBy + "=" + constants.ExtensionName
)

// permissions is the matrix, in the order the requests are made: the extension first creates its
// Secret, then reads and updates it.
var permissions = []permission{
	// What the extension does.
	{extensionIdentity, "create", "secrets", rbacProjectNS, constants.DeployKeysSecretName + " (" + labelled + ")", allowed, "", createSecret(deployKeys(rbacProjectNS))},
	{extensionIdentity, "get", "secrets", rbacProjectNS, constants.DeployKeysSecretName, allowed, "", getSecret(rbacProjectNS, constants.DeployKeysSecretName)},
	{extensionIdentity, "update", "secrets", rbacProjectNS, constants.DeployKeysSecretName + " (" + labelled + ")", allowed, "", updateSecret(rbacProjectNS, constants.DeployKeysSecretName, func(s *corev1.Secret) {
		s.Data = map[string][]byte{"matrix": []byte("rotated deploy keys")}
	})},
	{extensionIdentity, "get", "secrets", rbacProjectNS, constants.LegacyDeployKeySecretName + " (legacy)", allowed, "", getSecret(rbacProjectNS, constants.LegacyDeployKeySecretName)},
	{extensionIdentity, "get", "configmaps", rbacProjectNS, constants.ProjectConfigMapName, allowed, "", getConfigMap(rbacProjectNS, constants.ProjectConfigMapName)},
	{extensionIdentity, "list", "configmaps", "", "metadata.name=" + constants.ProjectConfigMapName, allowed, "", listConfigMaps("", byFluxConfigName)},
	{extensionIdentity, "list", "configmaps", rbacProjectNS, "metadata.name=" + constants.ProjectConfigMapName, allowed, "", listConfigMaps(rbacProjectNS, byFluxConfigName)},
	{extensionIdentity, "watch", "configmaps", "", "metadata.name=" + constants.ProjectConfigMapName, allowed, "", watchConfigMaps("", byFluxConfigName)},

	// Other Secrets are out of reach.
	{extensionIdentity, "get", "secrets", rbacProjectNS, otherSecret, deniedByRBAC, "cannot get", getSecret(rbacProjectNS, otherSecret)},
	{extensionIdentity, "list", "secrets", rbacProjectNS, "(all)", deniedByRBAC, "cannot list", listSecrets(rbacProjectNS)},
	{extensionIdentity, "list", "secrets", rbacProjectNS, "metadata.name=" + constants.DeployKeysSecretName, deniedByRBAC, "cannot list", listSecrets(rbacProjectNS, client.MatchingFields{"metadata.name": constants.DeployKeysSecretName})},
	{extensionIdentity, "list", "secrets", "", "(all)", deniedByRBAC, "cannot list", listSecrets("")},
	{extensionIdentity, "watch", "secrets", rbacProjectNS, "(all)", deniedByRBAC, "cannot watch", watchSecrets(rbacProjectNS)},
	{extensionIdentity, "update", "secrets", rbacProjectNS, otherSecret, deniedByRBAC, "cannot update", updateSecret(rbacProjectNS, otherSecret, func(s *corev1.Secret) { s.Data = nil })},
	{extensionIdentity, "delete", "secrets", rbacProjectNS, otherSecret, deniedByRBAC, "cannot delete", deleteSecret(rbacProjectNS, otherSecret)},
	{extensionIdentity, "get", "secrets", rbacGardenNS, otherSecret, deniedByRBAC, "cannot get", getSecret(rbacGardenNS, otherSecret)},
	{extensionIdentity, "list", "secrets", rbacGardenNS, "(all)", deniedByRBAC, "cannot list", listSecrets(rbacGardenNS)},
	{extensionIdentity, "update", "secrets", rbacGardenNS, otherSecret, deniedByRBAC, "cannot update", updateSecret(rbacGardenNS, otherSecret, func(s *corev1.Secret) { s.Data = nil })},
	{extensionIdentity, "delete", "secrets", rbacGardenNS, otherSecret, deniedByRBAC, "cannot delete", deleteSecret(rbacGardenNS, otherSecret)},

	// Its own Secrets only as far as it needs them.
	{extensionIdentity, "delete", "secrets", rbacProjectNS, constants.DeployKeysSecretName, deniedByRBAC, "cannot delete", deleteSecret(rbacProjectNS, constants.DeployKeysSecretName)},
	{extensionIdentity, "patch", "secrets", rbacProjectNS, constants.DeployKeysSecretName, deniedByRBAC, "cannot patch", patchSecret(rbacProjectNS, constants.DeployKeysSecretName)},
	{extensionIdentity, "update", "secrets", rbacProjectNS, constants.DeployKeysSecretName + " (label removed)", deniedByPolicy, becauseLabel, updateSecret(rbacProjectNS, constants.DeployKeysSecretName, func(s *corev1.Secret) {
		delete(s.Labels, constants.LabelManagedBy)
	})},
	{extensionIdentity, "update", "secrets", rbacProjectNS, constants.LegacyDeployKeySecretName + " (legacy)", deniedByRBAC, "cannot update", updateSecret(rbacProjectNS, constants.LegacyDeployKeySecretName, func(s *corev1.Secret) { s.Data = nil })},
	{extensionIdentity, "delete", "secrets", rbacProjectNS, constants.LegacyDeployKeySecretName + " (legacy)", deniedByRBAC, "cannot delete", deleteSecret(rbacProjectNS, constants.LegacyDeployKeySecretName)},

	// Creations, which RBAC cannot restrict, are the policy's.
	{extensionIdentity, "create", "secrets", rbacNewProjectNS, "other-secret (" + labelled + ")", deniedByPolicy, becauseName, createSecret(withName(deployKeys(rbacNewProjectNS), "other-secret"))},
	{extensionIdentity, "create", "secrets", rbacNewProjectNS, constants.LegacyDeployKeySecretName + " (legacy, " + labelled + ")", deniedByPolicy, becauseName, createSecret(withName(deployKeys(rbacNewProjectNS), constants.LegacyDeployKeySecretName))},
	{extensionIdentity, "create", "secrets", rbacKubeSystemNS, constants.DeployKeysSecretName + " (" + labelled + ")", deniedByPolicy, becauseNamespace, createSecret(deployKeys(rbacKubeSystemNS))},
	{extensionIdentity, "create", "secrets", rbacGardenNS, constants.DeployKeysSecretName + " (" + labelled + ")", deniedByPolicy, becauseNamespace, createSecret(deployKeys(rbacGardenNS))},
	{extensionIdentity, "create", "secrets", sandbox.GardenAccessNamespace, constants.DeployKeysSecretName + " (" + labelled + ")", deniedByPolicy, becauseNamespace, createSecret(deployKeys(sandbox.GardenAccessNamespace))},
	{extensionIdentity, "create", "secrets", rbacNewProjectNS, constants.DeployKeysSecretName + " (kubernetes.io/service-account-token, managed-by)", deniedByPolicy, becauseType, createSecret(withType(deployKeys(rbacNewProjectNS), corev1.SecretTypeServiceAccountToken))},
	{extensionIdentity, "create", "secrets", rbacNewProjectNS, constants.DeployKeysSecretName + " (Opaque, no labels)", deniedByPolicy, becauseLabel, createSecret(withLabels(deployKeys(rbacNewProjectNS), nil))},
	{extensionIdentity, "create", "secrets", rbacNewProjectNS, constants.DeployKeysSecretName + " (Opaque, managed-by=helm)", deniedByPolicy, becauseLabel, createSecret(withLabels(deployKeys(rbacNewProjectNS), map[string]string{constants.LabelManagedBy: "helm"}))},

	// ConfigMaps other than flux-config are out of reach, and flux-config is read-only.
	{extensionIdentity, "get", "configmaps", rbacProjectNS, otherConfigMap, deniedByRBAC, "cannot get", getConfigMap(rbacProjectNS, otherConfigMap)},
	{extensionIdentity, "list", "configmaps", "", "(all)", deniedByRBAC, "cannot list", listConfigMaps("")},
	{extensionIdentity, "list", "configmaps", rbacProjectNS, "(all)", deniedByRBAC, "cannot list", listConfigMaps(rbacProjectNS)},
	{extensionIdentity, "watch", "configmaps", "", "(all)", deniedByRBAC, "cannot watch", watchConfigMaps("")},
	{extensionIdentity, "create", "configmaps", rbacNewProjectNS, constants.ProjectConfigMapName, deniedByRBAC, "cannot create", createConfigMap(rbacNewProjectNS, constants.ProjectConfigMapName)},
	{extensionIdentity, "update", "configmaps", rbacProjectNS, constants.ProjectConfigMapName, deniedByRBAC, "cannot update", updateConfigMap(rbacProjectNS, constants.ProjectConfigMapName)},

	// The policy holds for the extension's identities regardless of RBAC.
	{"shoot-flux of another seed", "create", "secrets", rbacNewProjectNS, "other-secret (" + labelled + ")", deniedByPolicy, becauseName, createSecret(withName(deployKeys(rbacNewProjectNS), "other-secret"))},
	{"gardenlet's injected identity", "create", "secrets", rbacNewProjectNS, "other-secret (" + labelled + ")", deniedByPolicy, becauseName, createSecret(withName(deployKeys(rbacNewProjectNS), "other-secret"))},
	{"gardenlet's injected identity", "create", "secrets", rbacGardenNS, constants.DeployKeysSecretName + " (" + labelled + ")", deniedByPolicy, becauseNamespace, createSecret(deployKeys(rbacGardenNS))},
	{"gardenlet's injected identity", "create", "secrets", rbacNewProjectNS, constants.DeployKeysSecretName + " (" + labelled + ")", allowed, "", createSecret(deployKeys(rbacNewProjectNS))},

	// Nobody else is affected.
	{adminIdentity, "create", "secrets", rbacProjectNS, "admin-secret (Opaque, no labels)", allowed, "", createSecret(withLabels(withName(deployKeys(rbacProjectNS), "admin-secret"), nil))},
	{adminIdentity, "create", "secrets", rbacKubeSystemNS, constants.DeployKeysSecretName + " (kubernetes.io/service-account-token, no labels)", allowed, "", createSecret(withLabels(withType(deployKeys(rbacKubeSystemNS), corev1.SecretTypeServiceAccountToken), nil))},
	{adminIdentity, "update", "secrets", rbacProjectNS, constants.DeployKeysSecretName + " (label removed, rotate annotation)", allowed, "", updateSecret(rbacProjectNS, constants.DeployKeysSecretName, func(s *corev1.Secret) {
		delete(s.Labels, constants.LabelManagedBy)
		s.Annotations = map[string]string{constants.AnnotationRotate: "true"}
	})},
	{"another extension's identity", "create", "secrets", rbacProjectNS, "provider-secret (Opaque, no labels)", allowed, "", createSecret(withLabels(withName(deployKeys(rbacProjectNS), "provider-secret"), nil))},
	{"shoot-flux outside a seed ns", "create", "secrets", rbacProjectNS, "project-secret (Opaque, no labels)", allowed, "", createSecret(withLabels(withName(deployKeys(rbacProjectNS), "project-secret"), nil))},
	{"gardenlet", "create", "secrets", sandbox.GardenAccessNamespace, "gardenlet-secret (Opaque, no labels)", allowed, "", createSecret(withLabels(withName(deployKeys(sandbox.GardenAccessNamespace), "gardenlet-secret"), nil))},
	{"lookalike of shoot-flux's name", "create", "secrets", rbacProjectNS, "lookalike-secret (Opaque, no labels)", allowed, "", createSecret(withLabels(withName(deployKeys(rbacProjectNS), "lookalike-secret"), nil))},
}

// The permissions of example/garden-rbac.yaml, ClusterRole and ValidatingAdmissionPolicy, as a real
// kube-apiserver enforces them on the extension's garden identity. Every row is a request whose
// answer, and for a denial the reason in its message, must be as listed.
var _ = Describe("garden permission matrix", Ordered, ContinueOnFailure, func() {
	var (
		access     *exampleGardenAccess
		policyName string
		identities map[string]client.WithWatch
		users      map[string]string
		rows       []string
	)

	BeforeAll(func(ctx SpecContext) {
		for _, name := range []string{rbacProjectNS, rbacNewProjectNS} {
			Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
				Name:   name,
				Labels: map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleProject, v1beta1constants.ProjectName: strings.TrimPrefix(name, "garden-")},
			}})).To(Succeed())
		}
		Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rbacGardenNS}}))).To(Succeed())

		access = grantExampleGardenAccess(ctx)
		policyName = find(access.objects, "ValidatingAdmissionPolicy", "shoot-flux-garden-secrets.extensions.gardener.cloud").GetName()

		// What the garden holds besides the extension's Secret: the legacy deploy key, other
		// Secrets and ConfigMaps of the project and of the garden namespace.
		for _, obj := range []client.Object{
			withName(deployKeys(rbacProjectNS), constants.LegacyDeployKeySecretName),
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: otherSecret, Namespace: rbacProjectNS}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: otherSecret, Namespace: rbacGardenNS}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: constants.ProjectConfigMapName, Namespace: rbacProjectNS}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: otherConfigMap, Namespace: rbacProjectNS}},
		} {
			Expect(k8s.Create(ctx, obj)).To(Succeed())
		}

		identities = map[string]client.WithWatch{extensionIdentity: access.garden}
		users = map[string]string{}
		review := &authenticationv1.SelfSubjectReview{}
		Expect(access.garden.Create(ctx, review)).To(Succeed())
		users[extensionIdentity] = "`" + review.Status.UserInfo.Username + "`"

		admin, err := client.NewWithWatch(restCfg, client.Options{})
		Expect(err).NotTo(HaveOccurred())
		identities[adminIdentity] = admin
		review = &authenticationv1.SelfSubjectReview{}
		Expect(admin.Create(ctx, review)).To(Succeed())
		users[adminIdentity] = "`" + review.Status.UserInfo.Username + "`"

		for identity, user := range impersonated {
			cfg := rest.CopyConfig(restCfg)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters", "system:authenticated"}}
			identities[identity], err = client.NewWithWatch(cfg, client.Options{})
			Expect(err).NotTo(HaveOccurred())
			users[identity] = "`" + user + "` (system:masters)"
		}

		// kube-apiserver loads policies and bindings asynchronously; until both are in effect, a
		// Secret the policy forbids is still accepted.
		probe := withName(deployKeys(rbacNewProjectNS), "policy-probe")
		Eventually(func(ctx SpecContext) string {
			err := access.garden.Create(ctx, probe.DeepCopy(), client.DryRunAll)
			if err == nil {
				return "accepted"
			}
			return err.Error()
		}).WithContext(ctx).Should(ContainSubstring(becauseName))
	})

	AfterAll(func() {
		var b strings.Builder
		b.WriteString("| identity | user | verb | resource | namespace | object | result |\n|---|---|---|---|---|---|---|\n")
		for _, row := range rows {
			b.WriteString(row + "\n")
		}
		AddReportEntry("garden permission matrix", b.String())
		if path := os.Getenv(envGardenRBACMatrix); path != "" {
			Expect(os.WriteFile(path, []byte(b.String()), 0o600)).To(Succeed())
		}
	})

	entries := make([]TableEntry, 0, len(permissions))
	for _, p := range permissions {
		entries = append(entries, Entry(p.description(), p))
	}
	DescribeTable("answers", func(ctx SpecContext, p permission) {
		c := identities[p.identity]
		Expect(c).NotTo(BeNil(), "no client for %s", p.identity)
		err := p.do(ctx, c)

		got := allowed
		switch {
		case err == nil:
		case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+policyName+"'"):
			got = deniedByPolicy
		case apierrors.IsForbidden(err):
			got = deniedByRBAC
		default:
			got = failed
		}
		ns := p.namespace
		if ns == "" {
			ns = "(all)"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |", p.identity, users[p.identity], p.verb, p.resource, ns, p.object, got))
		answer := string(got)
		if err != nil {
			answer += ": " + err.Error()
		}
		By(fmt.Sprintf("%s %s %s %s as %s: %s", p.verb, p.resource, ns, p.object, p.identity, answer))

		if p.expect == allowed {
			Expect(err).NotTo(HaveOccurred())
			return
		}
		Expect(err).To(HaveOccurred(), "the request was allowed")
		Expect(got).To(Equal(p.expect), "unexpected answer: %v", err)
		Expect(err.Error()).To(ContainSubstring(p.because))
	}, entries)
})
