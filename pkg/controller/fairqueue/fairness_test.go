// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fairqueue

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// fairQueueState is what the fair queue counts, read under its lock.
type fairQueueState struct {
	Total, HandedOut, Parked, InTransit int
	Busy                                map[string]int
}

func (q *fairQueue) state() fairQueueState {
	q.mu.Lock()
	defer q.mu.Unlock()
	busy := map[string]int{}
	for p, n := range q.busy {
		busy[p] = n
	}
	return fairQueueState{Total: q.total, HandedOut: len(q.handedOut), Parked: len(q.parkedSet), InTransit: len(q.inTransit), Busy: busy}
}

func projectWaitingGauge() float64 {
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

func shootRequest(project string, shoot int) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: fmt.Sprintf("shoot--%s--s%03d", project, shoot), Name: "shoot-flux"}}
}

var _ = Describe("fairQueue with many workers", func() {
	It("counts nothing in flight and reconciles every request after workers re-added their own requests thousands of times", func() {
		const (
			workers          = 20
			projects         = 8
			shootsPerProject = 12
			rounds           = 50000
		)
		shares := newFairShares(workers, 50, 10)
		q := wrapFair(priorityqueue.New[reconcile.Request]("concurrency"), shares)
		DeferCleanup(q.ShutDown)
		waitingBefore := projectWaitingGauge()

		var requests []reconcile.Request
		for p := range projects {
			for s := range shootsPerProject {
				requests = append(requests, shootRequest(fmt.Sprintf("p%d", p), s))
			}
		}
		var (
			mu         sync.Mutex
			dirty      = map[reconcile.Request]bool{}
			inFlight   = map[reconcile.Request]bool{}
			reconciled = map[reconcile.Request]int{}
			violations []string
		)
		add := func(req reconcile.Request) {
			mu.Lock()
			dirty[req] = true
			mu.Unlock()
			q.Add(req)
		}
		for _, req := range requests {
			add(req)
		}

		var round atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				defer GinkgoRecover()
				rng := rand.New(rand.NewPCG(uint64(w), 36))
				for {
					req, shutdown := q.Get()
					if shutdown {
						return
					}
					mu.Lock()
					if inFlight[req] {
						violations = append(violations, fmt.Sprintf("%s handed out twice at once", req))
					}
					inFlight[req], dirty[req] = true, false
					reconciled[req]++
					mu.Unlock()
					if s := q.state(); s.Busy[projectOfRequest(req)] > shares.share || s.Total > workers {
						mu.Lock()
						violations = append(violations, fmt.Sprintf("%d of the project's and %d in all in flight", s.Busy[projectOfRequest(req)], s.Total))
						mu.Unlock()
					}
					if round.Add(1) <= rounds {
						// As a ConfigMap edit does: the shoot being reconciled is enqueued again while
						// in flight, and now and then another shoot, which may be waiting or in flight.
						add(req)
						if rng.IntN(4) == 0 {
							add(requests[rng.IntN(len(requests))])
						}
					}
					mu.Lock()
					delete(inFlight, req)
					mu.Unlock()
					q.Done(req)
				}
			})
		}

		// The bound only keeps a broken queue from hanging the suite.
		Eventually(func(g Gomega) {
			g.Expect(round.Load()).To(BeNumerically(">", rounds))
			mu.Lock()
			defer mu.Unlock()
			for _, req := range requests {
				g.Expect(dirty[req]).To(BeFalse(), "%s was added and not reconciled afterwards", req)
			}
			g.Expect(inFlight).To(BeEmpty())
			s := q.state()
			g.Expect(s.Busy).To(BeEmpty(), "busy counts reconciles that ended")
			g.Expect(s.HandedOut).To(BeZero())
			g.Expect(s.Total).To(BeZero())
			g.Expect(s.Parked).To(BeZero())
			g.Expect(s.InTransit).To(BeZero())
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(projectWaitingGauge()).To(Equal(waitingBefore))
		q.ShutDown()
		wg.Wait()
		Expect(violations).To(BeEmpty())
		for _, req := range requests {
			Expect(reconciled[req]).To(BeNumerically(">", 1), "%s", req)
		}
	})

	It("serves a project with nothing in flight from the reserve at once and with the next free worker when attackers hold all", func() {
		shares := newFairShares(20, 50, 10)
		Expect(shares).To(Equal(fairShares{workers: 20, share: 10, reserve: 2}))
		q := wrapFair(priorityqueue.New[reconcile.Request]("fairness"), shares)

		// Each worker holds its request until the spec releases it: the attackers' reconciles hang.
		held := make(chan reconcile.Request, 100)
		var (
			mu       sync.Mutex
			releases = map[reconcile.Request]chan struct{}{}
			released = map[reconcile.Request]bool{}
		)
		releaseOf := func(req reconcile.Request) chan struct{} {
			mu.Lock()
			defer mu.Unlock()
			if releases[req] == nil {
				releases[req] = make(chan struct{})
			}
			return releases[req]
		}
		release := func(req reconcile.Request) {
			close(releaseOf(req))
			mu.Lock()
			released[req] = true
			mu.Unlock()
		}
		var wg sync.WaitGroup
		for range shares.workers {
			wg.Go(func() {
				for {
					req, shutdown := q.Get()
					if shutdown {
						return
					}
					held <- req
					<-releaseOf(req)
					q.Done(req)
				}
			})
		}
		DeferCleanup(func() {
			mu.Lock()
			for req, c := range releases {
				if !released[req] {
					close(c)
				}
			}
			mu.Unlock()
			q.ShutDown()
			wg.Wait()
		})
		receive := func(n int) []reconcile.Request {
			GinkgoHelper()
			var got []reconcile.Request
			for range n {
				var req reconcile.Request
				Eventually(held).WithTimeout(5 * time.Second).Should(Receive(&req))
				got = append(got, req)
			}
			return got
		}

		By("three attacking projects saturating their shares")
		for p := range 3 {
			for s := range 15 {
				q.Add(shootRequest(fmt.Sprintf("attacker%d", p), s))
			}
		}
		// The first two take 10 and 8 workers, the projects with reconciles in flight leaving the
		// reserve; the third's first reconcile takes a reserved worker, as any project's with
		// nothing in flight may.
		inFlight := shares.workers - shares.reserve + 1
		attackers := receive(inFlight)
		Eventually(q.state).WithTimeout(5 * time.Second).Should(And(
			HaveField("Total", inFlight),
			HaveField("Parked", 3*15-inFlight),
			HaveField("Busy", Equal(map[string]int{"attacker0": shares.share, "attacker1": inFlight - 1 - shares.share, "attacker2": 1})),
		))
		Consistently(held).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())

		By("a bystander's request gets the last reserved worker without any reconcile ending")
		q.Add(shootRequest("bystander", 0))
		Expect(receive(1)).To(Equal([]reconcile.Request{shootRequest("bystander", 0)}))
		release(shootRequest("bystander", 0))

		By("a fourth attacking project taking the reserved worker again with its first reconcile")
		for s := range 3 {
			q.Add(shootRequest("attacker3", s))
		}
		Expect(projectOfRequest(receive(1)[0])).To(Equal("attacker3"))
		Eventually(q.state).WithTimeout(5 * time.Second).Should(HaveField("Total", shares.workers))

		By("the bystander's next request waits for a worker, and gets the first one that frees")
		q.Add(shootRequest("bystander", 1))
		Consistently(held).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
		release(attackers[0])
		Expect(receive(1)).To(Equal([]reconcile.Request{shootRequest("bystander", 1)}), "the attackers' waiting requests do not take it")
		Consistently(held).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
	})
})
