// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package rendercache_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/rendercache"
)

var _ = Describe("Cache", func() {
	// get stores a result of the given size for the key and counts the builds.
	get := func(c *rendercache.Cache, key string, size int, builds *int) []byte {
		GinkgoHelper()
		value, err := rendercache.Get(c, rendercache.KeyOf("test", key), func() ([]byte, int64, error) {
			*builds++
			return make([]byte, size), int64(size), nil
		})
		Expect(err).NotTo(HaveOccurred())
		return value
	}

	It("builds once per key and returns the stored result", func() {
		c := rendercache.New(10, 1<<20)
		var builds int
		first := get(c, "a", 10, &builds)
		second := get(c, "a", 10, &builds)
		Expect(builds).To(Equal(1))
		Expect(&second[0]).To(BeIdenticalTo(&first[0]))
		get(c, "b", 10, &builds)
		Expect(builds).To(Equal(2))
	})

	It("drops the least recently used results beyond the number of entries", func() {
		c := rendercache.New(3, 1<<20)
		var builds int
		for _, key := range []string{"a", "b", "c"} {
			get(c, key, 10, &builds)
		}
		get(c, "a", 10, &builds) // a is the most recent now, b the least
		get(c, "d", 10, &builds)
		Expect(c.Len()).To(Equal(3))
		Expect(c.Contains(rendercache.KeyOf("test", "b"))).To(BeFalse())
		for _, key := range []string{"a", "c", "d"} {
			Expect(c.Contains(rendercache.KeyOf("test", key))).To(BeTrue(), key)
		}
		Expect(builds).To(Equal(4))
	})

	It("drops the least recently used results beyond the bytes", func() {
		c := rendercache.New(100, 1000)
		var builds int
		for i := range 10 {
			get(c, fmt.Sprint(i), 300, &builds)
			Expect(c.Bytes()).To(BeNumerically("<=", 1000))
		}
		Expect(c.Len()).To(Equal(3))
		Expect(c.Bytes()).To(Equal(int64(900)))
		Expect(c.Contains(rendercache.KeyOf("test", "9"))).To(BeTrue())
		Expect(c.Contains(rendercache.KeyOf("test", "6"))).To(BeFalse())

		get(c, "large", 900, &builds)
		Expect(c.Len()).To(Equal(1), "one large result pushes out the smaller ones")
		Expect(c.Bytes()).To(Equal(int64(900)))
	})

	It("returns but does not keep a result larger than the byte bound", func() {
		c := rendercache.New(100, 1000)
		var builds int
		get(c, "small", 10, &builds)
		Expect(get(c, "huge", 2000, &builds)).To(HaveLen(2000))
		Expect(c.Contains(rendercache.KeyOf("test", "huge"))).To(BeFalse())
		Expect(c.Contains(rendercache.KeyOf("test", "small"))).To(BeTrue(), "a result that is not kept drops nothing")
		Expect(c.Bytes()).To(Equal(int64(10)))
	})

	It("does not keep failures", func() {
		c := rendercache.New(10, 1<<20)
		failure := errors.New("broken")
		_, err := rendercache.Get(c, rendercache.KeyOf("test", "a"), func() ([]byte, int64, error) { return nil, 0, failure })
		Expect(err).To(MatchError(failure))
		Expect(c.Len()).To(BeZero())
		var builds int
		get(c, "a", 10, &builds)
		Expect(builds).To(Equal(1))
	})

	It("lets concurrent callers of one key wait for one build without holding up other keys", func() {
		c := rendercache.New(10, 1<<20)
		release := make(chan struct{})
		var slowBuilds atomic.Int32
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				defer GinkgoRecover()
				value, err := rendercache.Get(c, rendercache.KeyOf("test", "slow"), func() (string, int64, error) {
					slowBuilds.Add(1)
					<-release
					return "slow", 4, nil
				})
				Expect(err).NotTo(HaveOccurred())
				Expect(value).To(Equal("slow"))
			})
		}
		Eventually(slowBuilds.Load).WithTimeout(5 * time.Second).Should(Equal(int32(1)))

		// Another key is served while the slow build runs.
		var builds int
		get(c, "other", 10, &builds)
		Expect(builds).To(Equal(1))

		close(release)
		wg.Wait()
		Expect(slowBuilds.Load()).To(Equal(int32(1)))
	})

	It("keys by the parts, not their concatenation", func() {
		Expect(rendercache.KeyOf("a", "bc")).NotTo(Equal(rendercache.KeyOf("ab", "c")))
		Expect(rendercache.KeyOf("a", "b")).To(Equal(rendercache.KeyOf("a", "b")))
	})
})
