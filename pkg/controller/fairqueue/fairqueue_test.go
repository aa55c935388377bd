// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fairqueue

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

var _ = Describe("fairQueue", func() {
	request := func(project, shoot string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "shoot--" + project + "--" + shoot, Name: "shoot-flux"}}
	}
	var q *fairQueue

	BeforeEach(func() {
		q = wrapFair(priorityqueue.New[reconcile.Request]("test"), fairShares{workers: 10, share: 2, reserve: 1})
		DeferCleanup(q.ShutDown)
	})

	// get starts a worker's Get and returns where its request arrives.
	get := func() <-chan reconcile.Request {
		got := make(chan reconcile.Request, 1)
		go func() {
			req, shutdown := q.Get()
			if !shutdown {
				got <- req
			}
		}()
		return got
	}
	// next gets the next request a worker gets, failing if none comes within a second.
	next := func() reconcile.Request {
		GinkgoHelper()
		var req reconcile.Request
		Eventually(get()).WithTimeout(time.Second).Should(Receive(&req))
		return req
	}

	It("hands out at most the share of a project and the other projects' requests meanwhile", func() {
		for _, shoot := range []string{"a1", "a2", "a3", "a4"} {
			q.Add(request("hog", shoot))
		}
		q.Add(request("other", "b1"))

		first, second := next(), next()
		Expect([]string{projectOfRequest(first), projectOfRequest(second)}).To(Equal([]string{"hog", "hog"}))
		Expect(next()).To(Equal(request("other", "b1")), "the hog's third request waits, the other project's goes")

		By("ending one of the hog's reconciles, which lets its next one go")
		q.Done(first)
		third := next()
		Expect(projectOfRequest(third)).To(Equal("hog"))
		Expect(third).NotTo(BeElementOf(first, second))
		q.Done(second)
		fourth := next()
		Expect(fourth).NotTo(BeElementOf(first, second, third))
		q.Done(third)
		q.Done(fourth)
		Expect(q.Len()).To(BeZero())
	})

	It("keeps one waiting copy of a request added again while it waits", func() {
		q.Add(request("hog", "a1"))
		q.Add(request("hog", "a2"))
		first, second := next(), next()
		q.Add(request("hog", "a3"))
		worker := get()
		Consistently(worker).WithTimeout(200*time.Millisecond).ShouldNot(Receive(), "a3 waits for the hog's share")
		q.Add(request("hog", "a3"))
		Consistently(worker).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
		q.Done(first)
		Eventually(worker).WithTimeout(time.Second).Should(Receive(Equal(request("hog", "a3"))))
		q.Done(second)
		Consistently(get()).WithTimeout(200*time.Millisecond).ShouldNot(Receive(), "a3 waited once")
	})

	It("counts the waiting requests until they get a worker or the queue shuts down", func() {
		waiting := func() float64 {
			GinkgoHelper()
			families, err := ctrlmetrics.Registry.Gather()
			Expect(err).NotTo(HaveOccurred())
			for _, f := range families {
				if f.GetName() == "shoot_flux_reconciles_waiting_for_project_share" {
					return f.GetMetric()[0].GetGauge().GetValue()
				}
			}
			Fail("no gauge")
			return 0
		}
		before := waiting()
		for _, shoot := range []string{"a1", "a2", "a3", "a4"} {
			q.Add(request("hog", shoot))
		}
		first := next()
		next()
		worker := get()
		Eventually(waiting).Should(Equal(before + 2))
		q.Done(first)
		Eventually(worker).Should(Receive())
		Expect(waiting()).To(Equal(before + 1))
		q.ShutDown()
		Expect(waiting()).To(Equal(before))
	})

	It("does not bound requests without a project", func() {
		for _, name := range []string{"x", "y", "z"} {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "garden", Name: name}})
		}
		next()
		next()
		next()
	})

	It("gives a project its share of the workers and keeps the reserve, rounded up, at least one", func() {
		Expect(newFairShares(20, 50, 10)).To(Equal(fairShares{workers: 20, share: 10, reserve: 2}))
		Expect(newFairShares(5, 50, 10)).To(Equal(fairShares{workers: 5, share: 3, reserve: 1}))
		Expect(newFairShares(3, 1, 1)).To(Equal(fairShares{workers: 3, share: 1, reserve: 1}))
		Expect(newFairShares(1, 10, 10)).To(Equal(fairShares{workers: 1, share: 1, reserve: 0}), "a single worker has no reserve")
	})

	It("reads the project from the shoot's seed namespace", func() {
		Expect(projectOfRequest(request("dev", "one"))).To(Equal("dev"))
		Expect(projectOfRequest(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "shoot--dev"}})).To(BeEmpty())
		Expect(projectOfRequest(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "garden"}})).To(BeEmpty())
	})
})
