// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package deploykey_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
)

var _ = Describe("KeyName", func() {
	It("names keys after the repository, readable and unique", func() {
		Expect(keyName).To(MatchRegexp(`^repo\.git\.example\.org_22_org_a-[0-9a-f]{10}$`))
		Expect(deploykey.KeyName(deploykey.ScopeRepository, "bar", repository)).To(Equal(keyName), "the shoot does not matter")
		Expect(deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.org:22/org/b")).NotTo(Equal(keyName))
		// Characters that data keys do not allow are replaced, and the hash keeps such names apart.
		Expect(deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.org:22/org/a+b")).NotTo(Equal(deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.org:22/org/a_b")))
	})

	It("names shoot keys after shoot and repository", func() {
		Expect(deploykey.KeyName(deploykey.ScopeShoot, "bar", repository)).To(MatchRegexp(`^shoot\.bar\.git\.example\.org_22_org_a-[0-9a-f]{10}$`))
	})

	It("makes only valid, bounded data keys", func() {
		long := "git.example.org:22/" + strings.Repeat("very/long/path/", 40) + "ü"
		for _, name := range []string{
			deploykey.KeyName(deploykey.ScopeRepository, "", long),
			deploykey.KeyName(deploykey.ScopeShoot, "a-very-long-shoot-name", long),
			deploykey.KeyName(deploykey.ScopeRepository, "", "[::1]:2222/r"),
		} {
			identity, pub := deploykey.DataKeys(name)
			for _, key := range []string{identity, pub, name + ".repository"} {
				Expect(validation.IsConfigMapKey(key)).To(BeEmpty(), key)
			}
		}
	})
})
