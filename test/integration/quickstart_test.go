// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"

	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// quickStartDoc is the page whose quick start the spec follows.
const quickStartDoc = "docs/usage/quick-start.md"

// quickStart is what the quick start of quickStartDoc tells a shoot owner to write and to run.
type quickStart struct {
	// providerConfig is the Shoot's providerConfig of the extension, as JSON.
	providerConfig []byte
	// source is the providerConfig's source, decoded.
	source fluxv1alpha1.Source
	// commands are the lines of its shell block.
	commands []string
}

// quickStartSection is the section of quickStartDoc whose blocks the spec follows.
const quickStartSection = "Deploy a public repository"

// readQuickStart reads the first YAML block (a Shoot spec fragment) and the first sh block (the
// commands in the shoot; the page fetches the kubeconfig from the garden in a bash block, which
// the sandbox hands the spec instead) of the section quickStartSection of quickStartDoc.
func readQuickStart() quickStart {
	GinkgoHelper()
	root, err := sandbox.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, quickStartDoc))
	Expect(err).NotTo(HaveOccurred())
	_, section, found := strings.Cut(string(data), "\n## "+quickStartSection+"\n")
	Expect(found).To(BeTrue(), "%s has no section %s", quickStartDoc, quickStartSection)
	section, _, _ = strings.Cut(section, "\n## ")

	var shoot struct {
		Spec struct {
			Extensions []struct {
				Type           string          `json:"type"`
				ProviderConfig json.RawMessage `json:"providerConfig"`
			} `json:"extensions"`
		} `json:"spec"`
	}
	Expect(yaml.UnmarshalStrict([]byte(fencedBlock(section, "yaml")), &shoot)).To(Succeed())
	Expect(shoot.Spec.Extensions).To(HaveLen(1))
	Expect(shoot.Spec.Extensions[0].Type).To(Equal(constants.ExtensionType))
	qs := quickStart{providerConfig: shoot.Spec.Extensions[0].ProviderConfig}
	var cfg fluxv1alpha1.FluxConfig
	Expect(json.Unmarshal(qs.providerConfig, &cfg)).To(Succeed())
	Expect(cfg.Source).NotTo(BeNil(), "the quick start names no source")
	qs.source = *cfg.Source
	for line := range strings.SplitSeq(fencedBlock(section, "sh"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			qs.commands = append(qs.commands, line)
		}
	}
	return qs
}

// fencedBlock returns the content of the first fenced code block of the language in text.
func fencedBlock(text, language string) string {
	GinkgoHelper()
	_, block, found := strings.Cut(text, "\n```"+language+"\n")
	Expect(found).To(BeTrue(), "no %s block", language)
	block, _, found = strings.Cut(block, "\n```")
	Expect(found).To(BeTrue(), "unterminated %s block", language)
	return block
}

// podinfoStandIn are the files of the repository directory path: a Deployment and a Service
// without a namespace, as podinfo's kustomize directory has them.
func podinfoStandIn(dir string) map[string]string {
	return map[string]string{
		path.Join(dir, "kustomization.yaml"): `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- deployment.yaml
- service.yaml
`,
		path.Join(dir, "deployment.yaml"): `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
spec:
  selector:
    matchLabels:
      app: podinfo
  template:
    metadata:
      labels:
        app: podinfo
    spec:
      containers:
      - name: podinfod
        image: ghcr.io/stefanprodan/podinfo:6.9.2
        ports:
        - name: http
          containerPort: 9898
`,
		path.Join(dir, "service.yaml"): `apiVersion: v1
kind: Service
metadata:
  name: podinfo
spec:
  selector:
    app: podinfo
  ports:
  - name: http
    port: 9898
    targetPort: http
`,
	}
}

// kubectlResult is what one `kubectl get` of the quick start returned.
type kubectlResult struct {
	namespace string
	// objects are the objects found, by resource (e.g. "deployments.apps").
	objects map[string][]*unstructured.Unstructured
	// output is the result of -o jsonpath, if given.
	output string
}

// kubectlGet runs a `kubectl -n NAMESPACE get TYPE[,TYPE...] [NAME] [-o yaml|-o jsonpath=...]`
// line against the shoot as kubectl would resolve it: types by discovery (plural, singular or
// short name), a name gets that object, no name lists the namespace. Anything else is refused,
// so that a quick start command this stand-in cannot run fails the spec instead of being skipped.
func kubectlGet(ctx context.Context, h *sandbox.ShootHandle, line string) (kubectlResult, error) {
	command, _, _ := strings.Cut(line, " #")
	args := strings.Fields(command)
	if len(args) < 2 || args[0] != "kubectl" {
		return kubectlResult{}, fmt.Errorf("not a kubectl command: %q", line)
	}
	var (
		result   = kubectlResult{objects: map[string][]*unstructured.Unstructured{}}
		verb     string
		operands []string
		template string
	)
	for i := 1; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-n" && i+1 < len(args):
			i++
			result.namespace = args[i]
		case a == "-o" && i+1 < len(args):
			i++
			switch out := args[i]; {
			case out == "yaml":
			case strings.HasPrefix(out, "jsonpath="):
				template = strings.Trim(strings.TrimPrefix(out, "jsonpath="), "'")
			default:
				return result, fmt.Errorf("output %q of %q is not supported", out, line)
			}
		case strings.HasPrefix(a, "-"):
			return result, fmt.Errorf("flag %q of %q is not supported", a, line)
		case verb == "":
			verb = a
		default:
			operands = append(operands, a)
		}
	}
	if verb != "get" || result.namespace == "" || len(operands) == 0 || len(operands) > 2 {
		return result, fmt.Errorf("only `kubectl -n NAMESPACE get TYPES [NAME]` is supported, not %q", line)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(h.Shoot.Config)
	if err != nil {
		return result, err
	}
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco)), disco, nil)
	dyn, err := dynamic.NewForConfig(h.Shoot.Config)
	if err != nil {
		return result, err
	}
	for _, kind := range strings.Split(operands[0], ",") {
		gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Resource: kind})
		if err != nil {
			return result, fmt.Errorf("%q: %w", kind, err)
		}
		resource := dyn.Resource(gvr).Namespace(result.namespace)
		key := gvr.GroupResource().String()
		if len(operands) == 2 {
			obj, err := resource.Get(ctx, operands[1], metav1.GetOptions{})
			if err != nil {
				return result, fmt.Errorf("%s %s/%s: %w", key, result.namespace, operands[1], err)
			}
			result.objects[key] = append(result.objects[key], obj)
			continue
		}
		list, err := resource.List(ctx, metav1.ListOptions{})
		if err != nil {
			return result, fmt.Errorf("%s in %s: %w", key, result.namespace, err)
		}
		if len(list.Items) == 0 {
			return result, fmt.Errorf("no %s in %s", key, result.namespace)
		}
		for i := range list.Items {
			result.objects[key] = append(result.objects[key], &list.Items[i])
		}
	}
	if template != "" {
		if len(result.objects) != 1 || len(operands) != 2 {
			return result, fmt.Errorf("jsonpath of %q: only for one named object", line)
		}
		j := jsonpath.New("output")
		if err := j.Parse(template); err != nil {
			return result, fmt.Errorf("jsonpath of %q: %w", line, err)
		}
		var out bytes.Buffer
		for _, objs := range result.objects {
			if err := j.Execute(&out, objs[0].Object); err != nil {
				return result, fmt.Errorf("jsonpath of %q: %w", line, err)
			}
		}
		result.output = out.String()
	}
	return result, nil
}

// names returns the names of the objects of a resource.
func (r kubectlResult) names(resource string) []string {
	var names []string
	for _, o := range r.objects[resource] {
		names = append(names, o.GetName())
	}
	return names
}

var _ = Describe("Quick start", func() {
	// The shoot owner's page, followed to the letter: the providerConfig as written, its public
	// repository served in the name of its host (the controllers reach it through an HTTPS proxy,
	// the only stand-in for the internet), and its kubectl commands run against the shoot.
	It("deploys the public repository and answers the kubectl commands as docs/usage/quick-start.md says", func(ctx SpecContext) {
		qs := readQuickStart()
		Expect(qs.source.URL).NotTo(BeNil())
		Expect(qs.source.Ref).NotTo(BeNil())
		Expect(qs.source.Ref.Branch).NotTo(BeNil())
		Expect(qs.source.Path).NotTo(BeNil())
		repoURL, err := url.Parse(*qs.source.URL)
		Expect(err).NotTo(HaveOccurred())
		Expect(repoURL.Scheme).To(Equal("https"), "the quick start uses a public repository over HTTPS")
		branch, dir := *qs.source.Ref.Branch, *qs.source.Path

		By(fmt.Sprintf("serving %s on branch %s as its host would", *qs.source.URL, branch))
		root := GinkgoT().TempDir()
		commit, err := gitserver.NewRepoOnBranch(filepath.Join(root, filepath.FromSlash(repoURL.Path)), branch, podinfoStandIn(dir), "Add podinfo")
		Expect(err).NotTo(HaveOccurred())
		host, err := gitserver.StartHTTPS(root, repoURL.Hostname())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(host.Close)
		caFile := filepath.Join(GinkgoT().TempDir(), "ca.crt")
		Expect(os.WriteFile(caFile, host.CAPEM(), 0o600)).To(Succeed())

		By("adding the extension to a Shoot with the quick start's providerConfig")
		newProject(ctx, "quickstart")
		h := createShootSucceeded(ctx, sandbox.ShootSpec{
			Project:        "quickstart",
			Name:           "dev",
			ProviderConfig: qs.providerConfig,
			RunControllers: true,
			NodeEnv:        []string{"HTTPS_PROXY=" + host.ProxyURL(), "SSL_CERT_FILE=" + caFile},
		})
		logs := func() string { return "controller logs:\n" + h.ControllerLogs() }
		expectAvailable(ctx, h, logs, "source-controller", "kustomize-controller")

		By("waiting for podinfo to be deployed from the repository")
		expectBootstrapApplied(ctx, h, logs)
		Expect(host.UploadPackRequests()).To(BeNumerically(">", 0))

		By("running the quick start's kubectl commands")
		Expect(qs.commands).NotTo(BeEmpty())
		results := map[string]kubectlResult{}
		for _, line := range qs.commands {
			r, err := kubectlGet(ctx, h, line)
			Expect(err).NotTo(HaveOccurred(), logs)
			results[line] = r
		}
		checked := 0
		for line, r := range results {
			switch {
			case r.output != "":
				// `kubectl get kustomization ... -o jsonpath='{.status.lastAppliedRevision}'`
				Expect(r.output).To(Equal(branch+"@sha1:"+commit), line)
				checked++
			case len(r.objects["configmaps"]) == 1:
				cm := r.objects["configmaps"][0]
				Expect(cm.GetName()).To(Equal(constants.StatusConfigMapName), line)
				data, _, err := unstructured.NestedStringMap(cm.Object, "data")
				Expect(err).NotTo(HaveOccurred())
				Expect(data).To(HaveKeyWithValue("bootstrapMode", "flux"), line)
				Expect(data).To(HaveKeyWithValue("repository", *qs.source.URL), line)
				Expect(data).To(HaveKeyWithValue("ref", "branch:"+branch), line)
				checked++
			case r.namespace == fluxNamespace && len(r.objects["deployments.apps"]) > 0:
				Expect(r.names("deployments.apps")).To(ConsistOf("source-controller", "kustomize-controller"), line)
				for _, d := range r.objects["deployments.apps"] {
					ready, _, _ := unstructured.NestedInt64(d.Object, "status", "readyReplicas")
					Expect(ready).To(BeEquivalentTo(1), "%s: READY of %s", line, d.GetName())
				}
				checked++
			case len(r.objects["gitrepositories.source.toolkit.fluxcd.io"]) > 0:
				for _, objs := range r.objects {
					Expect(objs).To(HaveLen(1))
					ready := readyConditionOf(Default, ctx, h, objs[0].GroupVersionKind(), fluxNamespace, objs[0].GetName())
					Expect(ready["status"]).To(Equal("True"), line)
				}
				checked++
			case r.namespace == "default":
				Expect(r.names("deployments.apps")).To(ContainElement("podinfo"), line)
				Expect(r.names("services")).To(ContainElement("podinfo"), line)
				checked++
			}
		}
		Expect(checked).To(Equal(len(qs.commands)), "every command of the quick start has its expected answer checked")

		By("removing the extension entry: GitOps stops, podinfo stays")
		Expect(h.Delete(ctx, deleteTimeout)).To(Succeed(), logs)
		Expect(get(ctx, h.Shoot.Client, &appsv1.Deployment{}, "default", "podinfo")).To(Succeed())
		_, err = shootObject(ctx, h, kustomizationGVK, fluxNamespace, constants.BootstrapName)
		Expect(apierrors.IsNotFound(err) || meta.IsNoMatchError(err)).To(BeTrue(), "the Kustomization is still there: %v", err)
	})
})
